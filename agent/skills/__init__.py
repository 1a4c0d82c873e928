"""Lua skills (seed 000 §4, §7; seed 001 Agent Skills): metadata, sandboxed runner, tests, lifecycle.

Modules, one job each:

- `metadata` — the `---@skill { ... }` header, parsed without running code
- `home` — the agent home's layout (`skills/agent/` drafts, `skills/allowed/` human-managed)
- `paths` — which files a skill may open
- `layer` (Lua) + `sandbox` (worker side) — the skill environment on top of the plan sandbox
- `runner` — run a skill's tests, the §7.2 result and exit code
- `lifecycle` — draft → test → rework → approval request → validate the promoted copy
- `panel` — the §7.4 approval panel and the promotion commands for the human
- `agent_skills` — `SKILL.md` discovery (Agent Skills)
- `cli` — `luallm-agent skills ...`
"""

__all__: list[str] = []
