function run(context)
  return {status = "updated", summary = "Status and Changelog record greet",
          section_edits = {
            {section = "Status", content = "version() and greet(name) are implemented."},
            {section = "Changelog", content = "- 0.1: version().\n- 0.2: greet(name) (EX-1)."},
          }}
end
