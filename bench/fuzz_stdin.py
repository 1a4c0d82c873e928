"""Fuzz the stdio agent's input: hostile lines into a real agent subprocess, every answer checked.

    python3 bench/fuzz_stdin.py [--lines 100000] [--seed 7]

Feeds deep nesting, huge ids, invalid UTF-8, NaN and overflowing numbers, control characters,
truncated JSON, schema-valid commands with hostile fields and oversize lines to
`python -m agent stdio --role builder` with no model configured (commands fail fast), then checks:

- 0 crashes: the process is alive after the last line and exits 0 on EOF, with no raw traceback
  on stderr;
- 0 stdout lines over 262,143 bytes; every line is JSON matching schemas/{event,heartbeat,log};
- one answer per non-blank line: a rejection `error` (invalid_command, message_too_large,
  unsupported_action) or, for an accepted command, an `error` then `builder.completed`;
- no `internal_error` at all: a hostile line is never a bug.

Prints lines/s and counts. `tests/test_fuzz_stdin.py` runs 3,000 lines by default, 100,000 with -m slow.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from support import LORCH, OURS, make_command  # noqa: E402

MAX_STDOUT_LINE = 262_143
INPUT_CAP = 256 * 1024
REJECTIONS = {"invalid_command", "message_too_large", "unsupported_action"}
SNAPSHOT = "snap-fuzz-000000"


# -- hostile lines ---------------------------------------------------------------------------------

def _command(rng: random.Random, **changes: Any) -> dict[str, Any]:
    cmd = make_command("implement", task_id=f"T-{rng.randrange(10**6)}", snapshot=SNAPSHOT)
    cmd["message_id"] = f"m-{rng.randrange(10**12)}"  # reproducible, unlike make_command's uuid4
    cmd.update(changes)
    return cmd


def _nested(depth: int, leaf: Any = 1) -> Any:
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def _deep_json(rng: random.Random) -> bytes:
    depth = rng.choice([65, 100, 400, 1000, 1025, 5000, 50_000])
    shape = rng.randrange(5)
    if shape == 0:
        return b"[" * depth + b"]" * depth
    if shape == 1:
        return b'{"kind":' + b"[" * depth + b"]" * depth + b"}"
    if shape == 2:
        return b'{"a":' * depth + b"1" + b"}" * depth
    if shape == 3:
        return b"[" * depth  # unterminated
    inner = b"[" * depth + b"]" * depth
    return orjson.dumps(_command(rng, inputs={"x": "PLACEHOLDER"})).replace(b'"PLACEHOLDER"', inner)


def _huge_ids(rng: random.Random) -> bytes:
    size = rng.choice([70_000, 100_000, 120_000, 129_000, 130_500])
    cmd = _command(rng, task_id="T" * size, correlation_id="C" * (size - rng.randrange(100)))
    line = orjson.dumps(cmd)
    return line if len(line) <= INPUT_CAP else orjson.dumps(_command(rng, task_id="T" * 100_000))


def _bad_utf8(rng: random.Random) -> bytes:
    junk = bytes(rng.randrange(128, 256) for _ in range(rng.randrange(1, 40)))
    forms = [junk, b'{"kind": "command", "task_id": "' + junk + b'"}', b'"\xc0\xaf"', b'["\xed\xa0\x80"]',
             b'"\\ud800"', b'"\\udc00\\ud800"', b"\xef\xbb\xbf" + orjson.dumps(_command(rng)),
             orjson.dumps(_command(rng)).replace(b'"goal"', b'"go\xffal"')]
    return rng.choice(forms)


def _numbers(rng: random.Random) -> bytes:
    num = rng.choice([b"NaN", b"Infinity", b"-Infinity", b"1e999999", b"-1e999999", b"1" + b"0" * 400,
                      b"1e-999999", b"-0", b"0x10", b"01", b"1.", b".5", b"18446744073709551616"])
    forms = [num, b"[" + num + b"]", orjson.dumps(_command(rng, priority=0)).replace(b'"priority":0', b'"priority":' + num),
             orjson.dumps(_command(rng, inputs={"n": 0})).replace(b'"n":0', b'"n":' + num)]
    return rng.choice(forms)


def _control(rng: random.Random) -> bytes:
    ch = bytes([rng.choice([0, 1, 7, 8, 11, 12, 13, 27, 31, 127])])
    forms = [ch * rng.randrange(1, 20), b'{"kind": "' + ch + b'"}', b'{"a": "x' + ch + b'y"}',
             orjson.dumps(_command(rng)).replace(b'"goal"', b'"go' + ch + b'al"'), b"\r", b"\t\t", b" \x0b\x0c "]
    return rng.choice(forms)


def _truncated(rng: random.Random) -> bytes:
    line = orjson.dumps(_command(rng))
    return line[:rng.randrange(1, len(line))]


def _hostile_fields(rng: random.Random) -> bytes:
    cmd = _command(rng)
    pick = rng.randrange(16)
    if pick == 0:
        cmd["inputs"] = {"deep": _nested(rng.randrange(1, 60), "leaf")}
    elif pick == 1:
        cmd["expected_outputs"] = [{"path": rng.choice(["../../etc/passwd", "/etc/shadow", "d" * 300 + "/x",
                                                        ".git/hooks/pre-commit", "receipts/x.json", "\u0000"])}]
    elif pick == 2:
        cmd["deadline"] = rng.choice(["2001-01-01T00:00:00Z", "tomorrow", "9999-12-31T23:59:59Z", "", 5])
    elif pick == 3:
        cmd["version"] = {"snapshot_id": rng.choice(["other-snap", "", "x" * 5000])}
    elif pick == 4:
        cmd["action"], cmd["to"] = "review", {"agent_type": "reviewer"}  # unsupported for a builder
    elif pick == 5:
        cmd["to"] = {"agent_type": rng.choice(["wizard", "", None, 7])}
    elif pick == 6:
        cmd[rng.choice(["task_id", "correlation_id", "message_id", "idempotency_key"])] = rng.choice(
            [None, 5, [], {}, "", "😀" * 1000, "a\u2028b\u0000c", "\\" * 999])
    elif pick == 7:
        cmd["inputs"] = {f"k{i}_token": f"secret-value-{i:06d}" for i in range(rng.choice([3, 1025, 1500]))}
    elif pick == 8:
        cmd["inputs"] = {"goal": "x" * rng.randrange(1000, 200_000)}
    elif pick == 9:
        cmd["inputs"] = rng.choice([[], "text", None, 1.5])
    elif pick == 10:
        del cmd[rng.choice(list(cmd))]
    elif pick == 11:
        cmd["kind"] = rng.choice(["Command", "event", "", None, ["command"], "k" * 100_000])
    elif pick == 12:
        cmd["inputs"] = {"k" * rng.randrange(1, 5000): list(range(rng.randrange(1, 5000)))}
    elif pick == 13:
        cmd["expected_outputs"] = [{"path": f"out/{i}.txt", "required": bool(i % 2)} for i in range(300)]
    elif pick == 14:
        cmd["retry"] = {"attempt": -1, "max_attempts": 10**18}
    else:
        pass  # a plain valid command
    try:
        return orjson.dumps(cmd)
    except TypeError:
        return json.dumps(cmd).encode()


def _oversize(rng: random.Random) -> bytes:
    size = rng.choice([INPUT_CAP + 1, INPUT_CAP + 2, 300_000, 1_000_000])
    return rng.choice([b"x", b"[", b'"', b"{"]) * size


def _garbage(rng: random.Random) -> bytes:
    forms = [b"{}", b"[]", b"null", b"true", b"0", b'""', b'{"kind":"command"}', b"}", b"]]]", b"{{{",
             bytes(rng.randrange(0x20, 0x7f) for _ in range(rng.randrange(1, 200))),
             rng.randbytes(rng.randrange(1, 200)).replace(b"\n", b" ")]
    return rng.choice(forms)


def _blank(rng: random.Random) -> bytes:
    return rng.choice([b"", b" ", b"\t", b"\r", b"   \r"])


# (generator, weight): oversize lines and huge ids are rare because each costs 100s of KB of pipe.
GENERATORS = [(_deep_json, 12), (_huge_ids, 1), (_bad_utf8, 10), (_numbers, 10), (_control, 10),
              (_truncated, 12), (_hostile_fields, 25), (_oversize, 0.3), (_garbage, 15), (_blank, 3)]


def hostile_lines(n: int, seed: int) -> list[bytes]:
    """`n` hostile input lines (no newline inside any of them), reproducible from `seed`."""
    rng = random.Random(seed)
    gens, weights = zip(*GENERATORS, strict=True)
    lines = []
    for gen in rng.choices(gens, weights, k=n):
        lines.append(gen(rng).replace(b"\n", b"\\n"))
    return lines


def needs_answer(line: bytes) -> bool:
    return bool(line.strip())


# -- running and checking -------------------------------------------------------------------------

@dataclass
class FuzzResult:
    lines_sent: int = 0
    bytes_sent: int = 0
    expected_answers: int = 0
    seconds: float = 0.0
    alive_after_input: bool = False
    exit_code: int | None = None
    stdout_lines: int = 0
    longest_line: int = 0
    oversize_lines: int = 0
    invalid_lines: list[str] = field(default_factory=list)
    raw_tracebacks: int = 0
    rejections: Counter[str] = field(default_factory=Counter)
    command_errors: Counter[str] = field(default_factory=Counter)
    completed: int = 0
    kinds: Counter[str] = field(default_factory=Counter)

    @property
    def answers(self) -> int:
        return sum(self.rejections.values()) + self.completed

    def problems(self) -> list[str]:
        out = []
        if not self.alive_after_input:
            out.append("agent died before EOF")
        if self.exit_code != 0:
            out.append(f"exit code {self.exit_code} on EOF")
        if self.raw_tracebacks:
            out.append(f"{self.raw_tracebacks} raw tracebacks on stderr")
        if self.oversize_lines:
            out.append(f"{self.oversize_lines} stdout lines over {MAX_STDOUT_LINE} bytes")
        if self.invalid_lines:
            out.append(f"{len(self.invalid_lines)} invalid stdout lines, first: {self.invalid_lines[0][:300]}")
        if self.answers != self.expected_answers:
            out.append(f"{self.answers} answers for {self.expected_answers} non-blank lines")
        if sum(self.command_errors.values()) != self.completed:
            out.append(f"{sum(self.command_errors.values())} command errors for {self.completed} builder.completed")
        internal = self.rejections["internal_error"] + self.command_errors["internal_error"]
        if internal:
            out.append(f"{internal} internal_error answers")
        return out


class _Collector:
    """Reads the agent's stdout in a thread: keeps the raw lines and counts answers as they come."""

    def __init__(self, stream: Any) -> None:
        self.lines: list[bytes] = []
        self.answers = 0
        self.done = threading.Event()
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: Any) -> None:
        for raw in stream:
            self.lines.append(raw)
            if b'"event":"error"' in raw or b'"event":"builder.completed"' in raw:
                try:
                    msg = orjson.loads(raw)
                except orjson.JSONDecodeError:
                    continue
                if msg.get("event") == "builder.completed" or msg["payload"].get("code") in REJECTIONS:
                    self.answers += 1
        self.done.set()

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)


class _StderrScan:
    """Counts raw (non-audit) traceback headers on stderr without keeping the stream."""

    def __init__(self, stream: Any) -> None:
        self.tracebacks = 0
        self.first: list[bytes] = []
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: Any) -> None:
        grab = 0
        for raw in stream:
            if raw.startswith(b"Traceback (most recent call last)"):
                self.tracebacks += 1
                grab = 40
            if grab and len(self.first) < 80:
                self.first.append(raw[:300])
                grab -= 1

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)


def run_fuzz(lines: list[bytes], workspace: Path, *, answer_timeout: float = 600.0) -> FuzzResult:
    """Feed `lines` to a builder agent in `workspace`; wait for every answer, then EOF; check all."""
    result = FuzzResult(lines_sent=len(lines), expected_answers=sum(needs_answer(x) for x in lines))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "LUALLM_AGENT_"))}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    argv = [sys.executable, "-m", "agent", "stdio", "--role", "builder", "--workspace", str(workspace)]
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdin is not None
    collector, errscan = _Collector(proc.stdout), _StderrScan(proc.stderr)
    t0 = time.monotonic()
    try:
        for line in lines:
            proc.stdin.write(line + b"\n")
            result.bytes_sent += len(line) + 1
        proc.stdin.flush()
    except BrokenPipeError:
        pass
    end = time.monotonic() + answer_timeout
    while collector.answers < result.expected_answers and proc.poll() is None and time.monotonic() < end:
        time.sleep(0.02)
    result.seconds = time.monotonic() - t0
    result.alive_after_input = proc.poll() is None
    try:
        proc.stdin.close()
    except BrokenPipeError:
        pass
    try:
        result.exit_code = proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        result.exit_code = proc.wait()
    collector.join(10)
    errscan.join(10)
    result.raw_tracebacks = errscan.tracebacks
    if errscan.first:
        sys.stderr.write(b"".join(errscan.first).decode("utf-8", "replace"))
    check_lines(collector.lines, result)
    return result


_VOLATILE = ("message_id", "occurred_at", "timestamp", "last_activity_at", "uptime_s", "seq", "stats")


def check_lines(raw_lines: list[bytes], result: FuzzResult) -> None:
    """Line cap, JSON, our schemas and lorch's for every stdout line; tally the answers."""
    seen_shapes: set[bytes] = set()
    for raw in raw_lines:
        line = raw.rstrip(b"\n")
        result.stdout_lines += 1
        result.longest_line = max(result.longest_line, len(line))
        if len(line) > MAX_STDOUT_LINE:
            result.oversize_lines += 1
        try:
            msg = orjson.loads(line)
            kind = msg.get("kind")
            # Messages that differ only in ids/timestamps are validated once per shape (plus the
            # first of each kind fully) — the schemas are the same, this keeps 300k lines fast.
            shape = orjson.dumps({k: v for k, v in msg.items() if k not in _VOLATILE}, option=orjson.OPT_SORT_KEYS)
            if shape not in seen_shapes or kind not in result.kinds:
                OURS[kind].validate(msg)
                if LORCH:
                    LORCH[kind].validate(msg)
                seen_shapes.add(shape)
        except Exception as exc:
            result.invalid_lines.append(f"{type(exc).__name__}: {exc}: {line[:200]!r}")
            continue
        result.kinds[kind] += 1
        if kind != "event":
            continue
        if msg["event"] == "builder.completed":
            result.completed += 1
        elif msg["event"] == "error":
            code = msg["payload"].get("code", "?")
            if code in REJECTIONS or (code == "internal_error" and msg["task_id"] == "unknown"):
                result.rejections[code] += 1
            else:
                result.command_errors[code] += 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    t = time.monotonic()
    lines = hostile_lines(args.lines, args.seed)
    gen_s = time.monotonic() - t
    with tempfile.TemporaryDirectory() as tmp:
        t = time.monotonic()
        result = run_fuzz(lines, Path(tmp))
        total_s = time.monotonic() - t
    print(f"lines: {result.lines_sent:,} ({result.bytes_sent / 1e6:.1f} MB, generated in {gen_s:.1f} s); "
          f"non-blank: {result.expected_answers:,}")
    print(f"agent: answered all in {result.seconds:.1f} s = {result.lines_sent / result.seconds:,.0f} lines/s; "
          f"exit {result.exit_code}; raw tracebacks {result.raw_tracebacks}")
    print(f"stdout: {result.stdout_lines:,} lines, longest {result.longest_line:,} bytes, "
          f"over cap {result.oversize_lines}, invalid {len(result.invalid_lines)}; kinds {dict(result.kinds)}")
    print(f"answers: rejections {dict(result.rejections)}; accepted commands {result.completed:,} "
          f"with errors {dict(result.command_errors)}")
    print(f"total with checks: {total_s:.1f} s")
    problems = result.problems()
    for p in problems:
        print(f"PROBLEM: {p}")
    print("OK: 0 crashes, 0 oversize lines, every line answered" if not problems else "FAILED")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
