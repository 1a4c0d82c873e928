"""Streamed replies of growing size, end to end: the time a builder command takes grows linearly.

    python3 bench/bench_stream.py [--sizes 100000,1000000,8000000] [--piece 16]

A local server sends one streamed chat completion (pre-encoded, so the server costs nothing): a
builder reply holding one whole file of the given size in a fenced block, in pieces of `--piece`
characters (a token is about four). The agent (`stdio --role builder`, text form, one round, the
test command `true`, a token budget a hosted model might have) reads it, writes the file and answers
`builder.completed`. Printed per size:
seconds end to end and per MB, the ratio to the smallest size, and whether the file landed whole.
Two contents: distinct lines, and one 20-character row repeated (data repeats by nature: it must
not be taken for a model loop). A reply over `--max-response-bytes` must end at once with a
`model_error` naming the cap.

Target (issue: streams in linear time): 1 MB / 100 KB ≤ 15, an 8 MB reply in a few seconds.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from support import make_command  # noqa: E402

from agent.conductor import AgentProcess, is_terminal  # noqa: E402


def distinct_lines(size: int) -> str:
    lines, n, total = [], 0, 0
    while total < size:
        line = f"v{n} = '{hashlib.sha1(str(n).encode()).hexdigest()[:24]}'\n"
        lines.append(line)
        total += len(line)
        n += 1
    return "".join(lines)[:size].rsplit("\n", 1)[0] + "\n"


def repeated_row(size: int) -> str:
    row = "0,0,0,0,0,0,0,0,0,0\n"  # 20 characters
    return row * (size // len(row))


def sse_body(text: str, piece: int) -> bytes:
    out = bytearray()
    for i in range(0, len(text), piece):
        chunk = {"id": "x", "object": "chat.completion.chunk", "model": "bench",
                 "choices": [{"index": 0, "delta": {"content": text[i:i + piece]}, "finish_reason": None}]}
        out += b"data: " + json.dumps(chunk).encode() + b"\n\n"
    end = {"id": "x", "object": "chat.completion.chunk", "model": "bench",
           "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    out += b"data: " + json.dumps(end).encode() + b"\n\ndata: [DONE]\n\n"
    return bytes(out)


class _Server:
    """Answers every POST with the body set last; GETs (capability probes) with 404."""

    def __init__(self) -> None:
        self.body = b""
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(server.body)))
                self.end_headers()
                view = memoryview(server.body)
                try:
                    for i in range(0, len(view), 1 << 20):
                        self.wfile.write(view[i:i + (1 << 20)])
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"


def one(server: _Server, content: str, piece: int, extra: list[str]) -> tuple[float, dict[str, Any], bool]:
    """Seconds for one builder command whose reply writes `content` to data.txt; its terminal message."""
    reply = "data.txt\n```\n" + content + "```\n"
    server.body = sse_body(reply, piece)
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp)
        argv = [sys.executable, "-m", "agent", "stdio", "--role", "builder", "--workspace", str(ws),
                "--base-url", server.url, "--model", "bench", "--answers", "text", "--builder-rounds", "1",
                "--test-command", "true", "--max-stdout-logs", "0", "--max-tokens", "4000000", *extra]
        agent = AgentProcess("builder", argv)
        agent.until(lambda m: m.get("kind") == "heartbeat", 30)
        cmd = make_command("implement", inputs={"goal": "Write data.txt."})
        t0 = time.perf_counter()
        agent.send(cmd)
        got = agent.until(lambda m: is_terminal("builder", m, cmd["task_id"]), 300)
        seconds = time.perf_counter() - t0
        agent.close()
        landed = (ws / "data.txt").is_file() and (ws / "data.txt").read_text() == content
    return seconds, (got[-1] if got else {}), landed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="100000,1000000,8000000")
    ap.add_argument("--piece", type=int, default=16, help="characters per streamed event")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    server = _Server()
    ok = True
    for name, make in (("distinct lines", distinct_lines), ("one row repeated", repeated_row)):
        base = None
        print(f"\n{name} (pieces of {args.piece} characters)")
        print(f"{'size':>10} {'seconds':>8} {'s/MB':>6} {'× smallest':>10}  result")
        for size in sizes:
            seconds, last, landed = one(server, make(size), args.piece, [])
            base = base or seconds
            event = last.get("event", "?")
            status = (last.get("payload") or {}).get("code") or last.get("status") or ""
            print(f"{size:>10} {seconds:>8.2f} {seconds / (size / 1e6):>6.2f} {seconds / base:>10.1f}  "
                  f"{event} {status} {'file whole' if landed else 'FILE NOT WRITTEN'}")
            ok = ok and landed
        if len(sizes) > 1:
            print(f"ratio {sizes[1]} / {sizes[0]}: target ≤ 15")
    size = 2_000_000
    seconds, last, landed = one(server, distinct_lines(size), args.piece, ["--max-response-bytes", "1000000"])
    payload = last.get("payload") or {}
    print(f"\nover the cap (a {size}-byte reply, --max-response-bytes 1000000): {seconds:.2f} s, "
          f"{last.get('event')} {json.dumps(payload.get('error') or payload)[:300]}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
