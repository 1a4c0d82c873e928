-- Example task: check that greet(name) returns "Hello, <name>!" in hello.py.
function run(context)
  local src = tools.read("hello.py")
  if type(src) == "table" then
    return {status = "changes_requested", summary = "hello.py is missing",
            findings = {{path = "hello.py", comment = "create hello.py with greet(name)"}}}
  end
  if string.find(src, 'f"Hello, {name}!"', 1, true) then
    return {status = "approved", summary = "greet matches the goal", findings = {}}
  end
  return {status = "changes_requested", summary = "greet's text does not match the goal",
          findings = {{path = "hello.py", comment = 'return f"Hello, {name}!" as the goal says'}}}
end
