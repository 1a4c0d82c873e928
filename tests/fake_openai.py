"""A real HTTP server that speaks enough of the OpenAI chat API for end-to-end tests.

Queue items (one per POST, in order):

* a string: the reply text — streamed as server-sent events when the request asks for `stream`
  (in pieces of a few characters, then `finish_reason`, a `usage` chunk when
  `stream_options.include_usage` is set, and `[DONE]`), else one `chat.completion` JSON body;
* `(status, body[, headers])`: an HTTP answer with that JSON body;
* `Stream(...)`: a paced stream — slow, stalling, or endless — to test time limits;
* `Raw(status, headers, body)`: exactly these bytes (a gzip bomb, a broken body, ...).

`reject_stream = True` makes every streaming request fail with HTTP 400 naming `stream`, like a
server that cannot stream. GET `/props`, `/v1/models` and `/api/version` answer from `props`,
`models` and `version` when set (capability probing), else 404.
"""

from __future__ import annotations

import functools
import json
import struct
import threading
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Stream:
    """A streamed answer paced in time: `pieces` every `every_s` seconds.

    `stall_after`: after that many pieces, go silent for `stall_s` seconds (then carry on).
    `forever`: repeat the pieces until the client goes away (for deadline tests), from the
    `repeat_from`-th piece on (a reply that starts well, then loops).
    """

    pieces: list[str]
    every_s: float = 0.0
    stall_after: int | None = None
    stall_s: float = 0.0
    finish_reason: str = "stop"
    forever: bool = False
    first_delay_s: float = 0.0
    repeat_from: int = 0


@dataclass
class Raw:
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""


class FakeOpenAI:
    """Replies from a queue; see the module docstring for the item kinds."""

    def __init__(self, replies: list[Any], model: str = "fake-model") -> None:
        self.replies = list(replies)
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self.gets: list[str] = []
        self.health_status = 200
        self.on_request: Any = None  # called with the request body before answering
        self.reject_stream = False
        self.props: dict[str, Any] | None = None
        self.models: dict[str, Any] | None = None
        self.version: dict[str, Any] | None = None
        self.sent_bytes = 0  # body bytes written by the last streamed answer
        self.server: ThreadingHTTPServer | None = None
        self._stop = threading.Event()

    @property
    def port(self) -> int:
        assert self.server is not None
        return self.server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                return None

            def _send(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
                self._send_raw(status, json.dumps(body).encode(), {"Content-Type": "application/json", **(headers or {})})

            def _send_raw(self, status: int, data: bytes, headers: dict[str, str]) -> None:
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802
                fake.gets.append(self.path)
                if self.path == "/health":
                    self._send(fake.health_status, {"status": "ok" if fake.health_status == 200 else "loading"})
                    return
                doc = {"/props": fake.props, "/v1/models": fake.models, "/api/version": fake.version}.get(self.path)
                if doc is None:
                    self._send(404, {"error": "not found"})
                else:
                    self._send(200, doc)

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                fake.requests.append({"body": body, "headers": dict(self.headers)})
                if fake.on_request is not None:
                    fake.on_request(body)
                if body.get("stream") and fake.reject_stream:
                    self._send(400, {"error": {"message": "'stream' is not supported by this server"}})
                    return
                item = fake.replies.pop(0) if fake.replies else "no replies left"
                try:
                    self._answer(item, body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client hung up (a timeout under test)

            def _answer(self, item: Any, body: dict[str, Any]) -> None:
                if isinstance(item, tuple):
                    self._send(item[0], item[1], item[2] if len(item) > 2 else None)
                elif isinstance(item, Raw):
                    self._send_raw(item.status, item.body, item.headers)
                elif isinstance(item, Stream):
                    self._stream(item, body)
                elif body.get("stream"):
                    pieces = [item[i:i + 4] for i in range(0, len(item), 4)] or [""]
                    self._stream(Stream(pieces), body)
                else:
                    self._send(200, {"id": "x", "model": fake.model, "choices": [
                        {"index": 0, "message": {"role": "assistant", "content": item}, "finish_reason": "stop"}],
                        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}})

            def _stream(self, item: Stream, body: dict[str, Any]) -> None:
                # HTTP/1.0 style: no length, the body ends when the connection closes.
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                fake.sent_bytes = 0
                if item.first_delay_s and fake._stop.wait(item.first_delay_s):
                    return
                n = 0
                pieces = item.pieces
                while True:
                    for piece in pieces:
                        if n == item.stall_after and fake._stop.wait(item.stall_s):
                            return
                        self._event({"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]})
                        n += 1
                        if item.every_s and fake._stop.wait(item.every_s):
                            return
                    if not item.forever:
                        break
                    pieces = item.pieces[item.repeat_from:]
                if n == item.stall_after and fake._stop.wait(item.stall_s):
                    return
                self._event({"choices": [{"index": 0, "delta": {}, "finish_reason": item.finish_reason}]})
                if (body.get("stream_options") or {}).get("include_usage"):
                    # The same figures as the plain answer, so tests do not depend on the form.
                    self._event({"choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": 20,
                                                          "total_tokens": 120}})
                self._write(b"data: [DONE]\n\n")

            def _event(self, chunk: dict[str, Any]) -> None:
                chunk = {"id": "x", "object": "chat.completion.chunk", "model": fake.model, **chunk}
                self._write(b"data: " + json.dumps(chunk).encode() + b"\n\n")

            def _write(self, data: bytes) -> None:
                self.wfile.write(data)
                self.wfile.flush()
                fake.sent_bytes += len(data)

        return Handler

    @contextmanager
    def running(self) -> Iterator[FakeOpenAI]:
        self._stop.clear()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self.handler())
        thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._stop.set()  # ends paced streams still being written
            self.server.shutdown()
            self.server.server_close()


@functools.lru_cache(maxsize=4)
def gzip_bomb(decoded_bytes: int) -> bytes:
    """A valid gzip body of `decoded_bytes` zero bytes (~1/1000 of that on the wire), made fast.

    After a full flush the compressor forgets its history, so every 1 MiB block of zeros deflates to
    the same bytes: compress one block, repeat it, and write the gzip header and trailer ourselves.
    """
    mib = 1024 * 1024
    blocks = max(1, decoded_bytes // mib)
    block = bytes(mib)
    z = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    piece = z.compress(block) + z.flush(zlib.Z_FULL_FLUSH)
    crc = 0
    for _ in range(blocks):
        crc = zlib.crc32(block, crc)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
    return header + piece * blocks + z.flush() + struct.pack("<II", crc, (blocks * mib) & 0xFFFFFFFF)


def wait_until(predicate: Any, timeout: float = 5.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.01)
    return bool(predicate())
