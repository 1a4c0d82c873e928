-- Example task: T-7 added greet(name) and was approved; record it in Status and Changelog.
function run(context)
  return {status = "updated", summary = "Status and Changelog record greet",
          section_edits = {
            {section = "Status", content = "version() and greet(name) are implemented."},
            {section = "Changelog", content = "- T-7: greet(name)."},
          }}
end
