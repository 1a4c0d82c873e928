function run(context)
  local r = tools.edit("hello.py", '    return f"Hello, {name}!"\n',
    '    return f"Hello, {name or \'stranger\'}!"\n')
  if type(r) == "table" and r.error then error("edit failed: " .. r.error) end
  return {summary = "greet falls back to 'stranger' for an empty name"}
end
