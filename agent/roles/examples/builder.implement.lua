function run(context)
  local r = tools.edit("hello.py", '    return "1.0"\n',
    '    return "1.0"\n\n\ndef greet(name):\n    return f"Hello, {name}!"\n')
  if type(r) == "table" and r.error then error("edit failed: " .. r.error) end
  return {summary = "Added greet(name) to hello.py"}
end
