---@skill {
---  name = "exec_safe",
---  version = "1.0",
---  description = "Run an allow-listed command (echo, ls, wc, cat) without a shell; returns exit code and output",
---  dependencies = {},
---  paths = {},
---  urls = {},
---  commands = { "echo", "ls", "wc", "cat" },
---  public_functions = { "run" },
---}

local M = {}

-- args: { cmd = "ls -1", timeout_ms = 5000 } -> { exit_code, stdout, stderr, timed_out, truncated }
function M.run(args)
  if type(args) ~= "table" or type(args.cmd) ~= "string" then
    error("exec_safe: args.cmd (a string) is required", 2)
  end
  return exec(args.cmd, { timeout_ms = args.timeout_ms or 5000 })
end

return M
