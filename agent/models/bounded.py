"""Decoding a response body with a hard cap on its decoded size, applied while it is decompressed.

httpx would decompress a whole network chunk at once: 64 KiB of gzip can expand to ~64 MiB before
any caller sees a byte, and a 300 MB gzip bomb took the agent to 993 MB of memory. So the HTTP client
reads the raw (still encoded) bytes and decodes them here with `zlib`'s `max_length`, never producing
more than the cap allows: memory stays within the cap plus one network chunk.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator

__all__ = ["BoundedDecoder", "ResponseTooLarge", "UnsupportedEncoding", "PIECE"]

PIECE = 1024 * 1024


class ResponseTooLarge(Exception):
    """The decoded body would exceed the cap; `consumed` bytes were decoded before we stopped."""

    def __init__(self, cap: int, consumed: int) -> None:
        super().__init__(f"response body exceeds {cap} bytes")
        self.cap = cap
        self.consumed = consumed


class UnsupportedEncoding(Exception):
    """A Content-Encoding we did not ask for and cannot decode within the cap."""


class BoundedDecoder:
    """Feed raw body bytes, get decoded bytes; raises `ResponseTooLarge` past `cap` decoded bytes."""

    def __init__(self, content_encoding: str | None, cap: int) -> None:
        self.cap = cap
        self.decoded = 0
        self._z: zlib._Decompress | None = None
        self._deflate_probe = False
        codings = [c.strip().lower() for c in (content_encoding or "").split(",") if c.strip()]
        codings = [c for c in codings if c != "identity"]
        if len(codings) > 1:
            raise UnsupportedEncoding(f"stacked content encodings are not supported: {content_encoding}")
        coding = codings[0] if codings else ""
        if coding in ("gzip", "x-gzip"):
            self._z = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif coding == "deflate":
            # "deflate" is zlib-wrapped by the RFC but raw deflate in practice; decide on the first bytes.
            self._z = zlib.decompressobj()
            self._deflate_probe = True
        elif coding:
            raise UnsupportedEncoding(f"unsupported content encoding {coding!r} (we accept gzip, deflate)")

    def feed(self, raw: bytes) -> bytes:
        return b"".join(self.pieces(raw))

    def pieces(self, raw: bytes) -> Iterator[bytes]:
        """The decoded bytes of `raw`, in pieces of at most `PIECE` bytes: a caller that handles each
        before asking for the next holds one piece at a time, whatever the body expands to."""
        if self._z is None:
            yield self._count(raw)
            return
        data = raw
        while data:
            room = min(self.cap - self.decoded + 1, PIECE)  # one byte over the cap is enough to know
            try:
                piece = self._z.decompress(data, room)
            except zlib.error:
                if not self._deflate_probe:
                    raise
                self._z = zlib.decompressobj(-zlib.MAX_WBITS)
                self._deflate_probe = False
                piece = self._z.decompress(data, room)
            self._deflate_probe = False
            yield self._count(piece)
            data = self._z.unconsumed_tail
            if not piece and data:  # no progress possible (should not happen with room >= 1)
                break

    def flush(self) -> bytes:
        if self._z is None:
            return b""
        return self._count(self._z.flush(self.cap - self.decoded + 1))

    def _count(self, piece: bytes) -> bytes:
        self.decoded += len(piece)
        if self.decoded > self.cap:
            raise ResponseTooLarge(self.cap, self.decoded)
        return piece
