function run(context)
  local plan = context.inputs.discovery.candidates[1].path
  local text = tools.read(plan)
  if type(text) == "table" then
    return {plan_file = plan, confidence = 0.2, tasks = {}, needs_clarification = true,
            questions = {"Which file holds the plan?"}}
  end
  local tasks = {}
  for id, title in string.gmatch(text, "(T%-%d+)%s+([^\n]+)") do
    tasks[#tasks + 1] = {id = id, title = title, files = {"hello.py"}}
  end
  return {plan_file = plan, confidence = 0.8, tasks = tasks}
end
