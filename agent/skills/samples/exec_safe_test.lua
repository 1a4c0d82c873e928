local test = require("luallm_test")
local exec_safe = require("exec_safe")

test.case("runs an allowed command", function()
  local res = exec_safe.run({ cmd = "echo hello" })
  test.eq(res.exit_code, 0)
  test.eq(res.stdout, "hello\n")
end)

test.case("pipes between allowed commands", function()
  local res = exec_safe.run({ cmd = "echo a b c | wc -w" })
  test.eq(res.stdout:gsub("%s", ""), "3")
end)

test.case("refuses a command that is not declared", function()
  test.errors(function() exec_safe.run({ cmd = "rm -rf x" }) end, "command rejected")
end)

test.case("refuses shell tricks", function()
  test.errors(function() exec_safe.run({ cmd = "echo $(id)" }) end, "command rejected")
end)

test.run_all()
