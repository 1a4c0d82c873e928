"""Supervised standalone mode: a person runs `luallm-agent run "..."` (seed 000, seed 002).

One job per module:

- `home`      the agent home, its `config.json` (schema-validated) and `init`
- `doctor`    environment checks, a report and an exit code
- `graph`     the task graph: parse, validate, ready nodes, `{node_N_result}` templates
- `planner`   asks the model for a graph and re-plans with the exact validation errors
- `models`    picks a luallm model for a task type (MODEL_WAIT when none runs)
- `effects`   the journal of a node's file writes (applied once, even across kill -9)
- `approvals` the tiers of §8, pending-approval files, TTY prompts
- `approval_files` the pending requests as a person sees them: list, find by id, answer
- `approvals_cli` `approvals list | approve ID | reject ID`
- `nodes`     executes one node (llm_call, plan, skill, decision)
- `state`     `state/current_task.json` and the per-task harness files of seed 002
- `events`    the §9 audit entries of one task
- `task_states` the task's states, exit codes, a new task's record and a run's outcome
- `machine_core` the task record in a run: saving, audited transitions, how a run ends or pauses
- `graph_steps` the PLANNING and GRAPH_EXEC steps: plan the graph, run, retry and re-plan nodes
- `machine`   the state machine that drives a task to COMPLETE / FAILED / paused / stopped
- `progress`  lines a person reads and the final summary table
- `cli`       `init`, `doctor`, `run`, `stop`, `log` (and registers `approvals`)
"""
