function run(context)
  local findings = {}
  for _, e in ipairs(context.examples or {}) do
    if not e.held then
      table.insert(findings, {path = e.path, line = e.line,
                              comment = e.call .. " returned " .. e.got .. "; the goal says " .. e.expected})
    end
  end
  -- Add a finding of your own for what the goal asks and its examples do not show.
  if #findings == 0 then
    return {status = "approved", summary = "the goal's examples hold", findings = {}}
  end
  return {status = "changes_requested", summary = "the goal's examples do not hold yet", findings = findings}
end
