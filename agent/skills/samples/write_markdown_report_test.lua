local test = require("luallm_test")
local report = require("write_markdown_report")

test.case("renders title, sections and a table", function()
  local md = report.render({
    title = "Sales",
    sections = { { heading = "Summary", body = "Up 5%." } },
    table = { columns = { "region", "total" }, rows = { { "north", 10 }, { "a|b", 2 } } },
  })
  test.eq(md, "# Sales\n\n## Summary\n\nUp 5%.\n\n| region | total |\n| --- | --- |\n| north | 10 |\n| a\\|b | 2 |\n")
end)

test.case("writes the report through write_file", function()
  local res = report.run({ path = "report.md", title = "T" })
  test.eq(res, { path = "report.md", bytes = #"# T\n" })
end)

test.run_all()
