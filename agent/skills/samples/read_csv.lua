---@skill {
---  name = "read_csv",
---  version = "1.0",
---  description = "Parse a CSV file into a list of rows keyed by the header",
---  dependencies = {},
---  paths = { "**", "~/data/**" },
---  urls = {},
---  public_functions = { "run", "parse_line" },
---}

local M = {}

-- One CSV line into fields: commas separate, double quotes group, "" is a quote.
function M.parse_line(line, sep)
  sep = sep or ","
  local fields, buf, i, quoted = {}, {}, 1, false
  while i <= #line do
    local c = line:sub(i, i)
    if quoted then
      if c == '"' and line:sub(i + 1, i + 1) == '"' then buf[#buf + 1] = '"'; i = i + 1
      elseif c == '"' then quoted = false
      else buf[#buf + 1] = c end
    elseif c == '"' then quoted = true
    elseif c == sep then fields[#fields + 1] = table.concat(buf); buf = {}
    else buf[#buf + 1] = c end
    i = i + 1
  end
  fields[#fields + 1] = table.concat(buf)
  return fields
end

-- args: { path = "people.csv", sep = "," } -> { {name = "Alice", age = "30"}, ... }
function M.run(args)
  if type(args) ~= "table" or type(args.path) ~= "string" then
    error("read_csv: args.path (a string) is required", 2)
  end
  local header, rows = nil, {}
  for line in io.lines(args.path) do
    line = line:gsub("\r$", "")
    if line ~= "" then
      local fields = M.parse_line(line, args.sep)
      if not header then
        header = fields
      else
        local row = {}
        for k, name in ipairs(header) do row[name] = fields[k] or "" end
        rows[#rows + 1] = row
      end
    end
  end
  return rows
end

return M
