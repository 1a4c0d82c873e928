function run(context)
  local r = tools.edit("hello.py", '    return "1.0"\n',
    '    return "1.0"\n\n\ndef greet(name):\n    return f"Hello, {name}!"\n')
  if type(r) == "table" and r.error then error("edit failed: " .. r.error) end
  local w = tools.write("tests/test_hello.py", [[
from hello import greet


def test_greet():
    assert greet("Ada") == "Hello, Ada!"
]])
  if w.error then error("write failed: " .. w.error) end
  return {summary = "Added greet(name) to hello.py and a test"}
end
