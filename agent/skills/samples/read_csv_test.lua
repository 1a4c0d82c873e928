local test = require("luallm_test")
local read_csv = require("read_csv")

test.case("parses simple CSV", function()
  local rows = read_csv.run({ path = "simple.csv" })
  test.eq(#rows, 3)
  test.eq(rows[1].name, "Alice")
  test.eq(rows[3].city, "Lyon, France")
end)

test.case("handles empty file", function()
  local rows = read_csv.run({ path = "empty.csv" })
  test.eq(#rows, 0)
end)

test.case("splits quoted fields", function()
  test.eq(read_csv.parse_line('a,"b ""c""",d'), { "a", 'b "c"', "d" })
end)

test.case("rejects path outside allowed list", function()
  test.errors(function() read_csv.run({ path = "/etc/passwd" }) end)
end)

test.run_all()
