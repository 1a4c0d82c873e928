#!/usr/bin/env python3
"""A stand-in for the real `luallm` CLI with its real output shapes and quirks (see
agent/models/luallm.py and tests/models/test_luallm.py): `status --json` with `servers`, empty
lists printed as `{}`, `start`/`stop` in plain text with no `--json`, errors as plain text on
stdout with exit 1, an unknown word taken as a model name. Its world lives in the JSON file named
by $FAKE_LUALLM_STATE: {"installed": [...], "running": {"model": port}, "notes": {"model": "..."},
"dies": {"model": N}, "ports": {"model": port}}: `start` puts a model on its `ports` entry (else
8000 + the number running); a model in `dies` is reported running by N more `status` calls, then as
exited with code 137 (a process the kernel killed), which is how a crash looks to the agent.
With "garbled_status": true, `status --json` prints something that is not JSON.
Every call is appended to $FAKE_LUALLM_STATE.calls (one argv per line) for the tests.
"""

import json
import os
import sys

STATE = os.environ["FAKE_LUALLM_STATE"]
HELP = [{"name": n, "group": "models", "description": d, "options": [], "subcommands": []}
        for n, d in (("status", "show servers"), ("list", "installed models"), ("notes", "model notes"),
                     ("start", "start a model"), ("stop", "stop a model"), ("help", "this help"))]


def load() -> dict:
    with open(STATE) as fh:
        return json.load(fh)


def save(world: dict) -> None:
    with open(STATE + ".tmp", "w") as fh:
        json.dump(world, fh)
    os.replace(STATE + ".tmp", STATE)


def out(obj: object) -> None:
    print(json.dumps(obj) if obj else "{}")  # the real CLI prints empty lists as {}


def main(argv: list[str]) -> int:
    with open(STATE + ".calls", "a") as fh:
        fh.write(json.dumps(argv) + "\n")
    world = load()
    running = world.setdefault("running", {})
    if argv == ["help", "--json"]:
        out(HELP)
    elif argv == ["status", "--json"] and world.get("garbled_status"):
        print("Segmentation fault (core dumped)")
    elif argv == ["status", "--json"]:
        exited = world.setdefault("exited", {})
        for model, left in list(world.get("dies", {}).items()):
            if model in running and left <= 0:
                running.pop(model)
                exited[model] = 137
            world["dies"][model] = left - 1
        save(world)
        servers = [{"model": m, "state": "running", "port": p, "pid": 4242, "mode": "server",
                    "started_at": "2025-01-01T00:00:00Z"} for m, p in running.items()]
        servers += [{"model": m, "state": "stopped", "port": None, "pid": None, "mode": "server",
                     "started_at": "2025-01-01T00:00:00Z", "stopped_at": "2025-01-01T01:00:00Z",
                     "exit_code": exited.get(m, 0)} for m in world.get("installed", []) if m not in running]
        out({"version": "0.3.1", "servers": servers} if servers else {"version": "0.3.1", "servers": {}})
    elif argv == ["list", "--json"]:
        out([{"name": m, "size": "4 GB", "quantization": "Q4_K_M", "last_run": None}
             for m in world.get("installed", [])])
    elif argv == ["notes", "--json"]:
        out([{"name": m, "content": c, "notes_path": f"/notes/{m}.md"} for m, c in world.get("notes", {}).items()])
    elif len(argv) == 2 and argv[0] in ("start", "stop"):
        model = argv[1]
        if model not in world.get("installed", []):
            print(f"Error: unknown model {model}")
            return 1
        if argv[0] == "start":
            running[model] = world.get("ports", {}).get(model, 8000 + len(running))
            print(f"Starting {model} on port {running[model]}...")
        else:
            running.pop(model, None)
            print(f"Stopped {model}")
        save(world)
    else:
        print(f"Error: no model named {argv[0] if argv else ''!r}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
