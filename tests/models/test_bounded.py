"""Response bodies are capped while they are decompressed, not after."""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterator

import httpx
import pytest

from agent.errors import ModelError
from agent.models.base import ModelRequest
from agent.models.bounded import BoundedDecoder, ResponseTooLarge, UnsupportedEncoding
from agent.models.openai_http import OpenAIChatModel

MiB = 1024 * 1024


def bomb(size: int) -> bytes:
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    return b"".join([z.compress(bytes(MiB)) for _ in range(size // MiB)] + [z.flush()])


def test_gzip_bomb_stops_one_byte_past_the_cap() -> None:
    decoder = BoundedDecoder("gzip", 2 * MiB)
    body = bomb(64 * MiB)
    with pytest.raises(ResponseTooLarge) as err:
        for i in range(0, len(body), 64 * 1024):
            decoder.feed(body[i:i + 64 * 1024])
    assert err.value.cap == 2 * MiB and err.value.consumed == 2 * MiB + 1


def test_under_the_cap_gzip_and_both_deflate_flavours_decode() -> None:
    text = b'{"choices": []}' * 100
    assert BoundedDecoder("gzip", MiB).feed(gzip.compress(text)) == text
    assert BoundedDecoder("deflate", MiB).feed(zlib.compress(text)) == text
    raw = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    assert BoundedDecoder("deflate", MiB).feed(raw.compress(text) + raw.flush()) == text
    assert BoundedDecoder("identity", MiB).feed(text) == text


def test_plain_body_over_the_cap_is_refused() -> None:
    decoder = BoundedDecoder(None, 10)
    decoder.feed(b"0123456789")
    with pytest.raises(ResponseTooLarge):
        decoder.feed(b"x")


@pytest.mark.parametrize("encoding", ["br", "zstd", "gzip, gzip"])
def test_encodings_we_did_not_ask_for_are_refused(encoding: str) -> None:
    with pytest.raises(UnsupportedEncoding):
        BoundedDecoder(encoding, MiB)


class Chunks(httpx.SyncByteStream):
    def __init__(self, data: bytes, size: int = 64 * 1024) -> None:
        self.data, self.size, self.sent = data, size, 0

    def __iter__(self) -> Iterator[bytes]:
        for i in range(0, len(self.data), self.size):
            self.sent += len(self.data[i:i + self.size])
            yield self.data[i:i + self.size]


def test_client_reports_a_gzip_bomb_as_a_model_error_naming_the_cap() -> None:
    body = Chunks(bomb(100 * MiB))
    transport = httpx.MockTransport(lambda r: httpx.Response(
        200, headers={"content-encoding": "gzip", "content-type": "application/json"}, stream=body))
    client = OpenAIChatModel("http://h/v1", "m", transport=transport, max_response_bytes=MiB)
    with pytest.raises(ModelError) as err:
        client.complete(ModelRequest(messages=[{"role": "user", "content": "hi"}]))
    assert err.value.details["reason"] == "response_too_large" and err.value.details["max_response_bytes"] == MiB
    assert "1048576 bytes" in err.value.message and "--max-response-bytes" in err.value.message
    assert body.sent < len(body.data)  # stopped reading early
