---@skill {
---  name = "write_markdown_report",
---  version = "1.0",
---  description = "Render a title, sections and an optional table as Markdown and write it to a file",
---  dependencies = { "write_file" },
---  paths = {},
---  urls = {},
---  public_functions = { "run", "render" },
---}

local write_file = require("write_file")
local M = {}

local function cell(v)
  return (tostring(v):gsub("|", "\\|"):gsub("\n", " "))
end

-- report: { title = "...", sections = { { heading = "...", body = "..." } }, table = { columns = {...}, rows = {{...}} } }
function M.render(report)
  local out = { "# " .. tostring(report.title or "Report"), "" }
  for _, s in ipairs(report.sections or {}) do
    out[#out + 1] = "## " .. tostring(s.heading)
    out[#out + 1] = ""
    out[#out + 1] = tostring(s.body or "")
    out[#out + 1] = ""
  end
  local t = report.table
  if t and t.columns then
    local head, rule = {}, {}
    for i, c in ipairs(t.columns) do head[i] = cell(c); rule[i] = "---" end
    out[#out + 1] = "| " .. table.concat(head, " | ") .. " |"
    out[#out + 1] = "| " .. table.concat(rule, " | ") .. " |"
    for _, row in ipairs(t.rows or {}) do
      local cells = {}
      for i = 1, #t.columns do cells[i] = cell(row[i] or "") end
      out[#out + 1] = "| " .. table.concat(cells, " | ") .. " |"
    end
    out[#out + 1] = ""
  end
  return table.concat(out, "\n")
end

-- args: { path = "report.md", title = ..., sections = ..., table = ... }
function M.run(args)
  if type(args) ~= "table" or type(args.path) ~= "string" then
    error("write_markdown_report: args.path (a string) is required", 2)
  end
  return write_file.run({ path = args.path, content = M.render(args) })
end

return M
