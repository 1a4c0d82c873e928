local test = require("luallm_test")
local write_file = require("write_file")

local function slurp(path)
  local f = assert(io.open(path, "r"))
  local data = f:read("a")
  f:close()
  return data
end

test.case("writes a new file", function()
  local res = write_file.run({ path = "out.txt", content = "one\n" })
  test.eq(res.bytes, 4)
  test.eq(slurp("out.txt"), "one\n")
end)

test.case("appends", function()
  write_file.run({ path = "log.txt", content = "a" })
  write_file.run({ path = "log.txt", content = "b", append = true })
  test.eq(slurp("log.txt"), "ab")
end)

test.case("refuses a path outside the allowed list", function()
  test.errors(function() write_file.run({ path = "/tmp/../etc/evil", content = "x" }) end, "blocked")
end)

test.run_all()
