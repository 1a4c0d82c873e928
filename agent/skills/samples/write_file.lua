---@skill {
---  name = "write_file",
---  version = "1.0",
---  description = "Write (or append) text to a file; returns the path and the number of bytes",
---  dependencies = {},
---  paths = { "**", "~/output/**" },
---  urls = {},
---  public_functions = { "run" },
---}

local M = {}

-- args: { path = "out/report.txt", content = "...", append = false }
function M.run(args)
  if type(args) ~= "table" or type(args.path) ~= "string" or type(args.content) ~= "string" then
    error("write_file: args.path and args.content (strings) are required", 2)
  end
  local f, err = io.open(args.path, args.append and "a" or "w")
  if not f then error("write_file: " .. err, 2) end
  f:write(args.content)
  f:close()
  return { path = args.path, bytes = #args.content }
end

return M
