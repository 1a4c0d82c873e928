local test = require("luallm_test")
local read_file = require("read_file")

test.case("reads a whole file", function()
  test.eq(read_file.run({ path = "hello.txt" }), "hello\nworld\n")
end)

test.case("reads the first bytes only", function()
  test.eq(read_file.run({ path = "hello.txt", max_bytes = 5 }), "hello")
end)

test.case("a missing file is an error", function()
  test.errors(function() read_file.run({ path = "missing.txt" }) end, "missing.txt")
end)

test.case("rejects a path outside the allowed list", function()
  test.errors(function() read_file.run({ path = "/etc/passwd" }) end, "path is blocked by config")
end)

test.run_all()
