---@skill {
---  name = "read_file",
---  version = "1.0",
---  description = "Read a text file (optionally only its first max_bytes bytes)",
---  dependencies = {},
---  paths = { "**", "~/data/**" },
---  urls = {},
---  public_functions = { "run" },
---}

local M = {}

-- args: { path = "notes.txt", max_bytes = 4096 }
function M.run(args)
  if type(args) ~= "table" or type(args.path) ~= "string" then
    error("read_file: args.path (a string) is required", 2)
  end
  local f, err = io.open(args.path, "r")
  if not f then error("read_file: " .. err, 2) end
  local data
  if args.max_bytes then data = f:read(args.max_bytes) or "" else data = f:read("a") end
  f:close()
  return data
end

return M
