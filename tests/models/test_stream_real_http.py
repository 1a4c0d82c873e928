"""Streaming, time limits and the body cap over real sockets, against tests/fake_openai.py."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAI, Raw, Stream, gzip_bomb

from agent.errors import ModelError, ModelTimeout
from agent.models.base import ModelRequest
from agent.models.openai_http import OpenAIChatModel
from agent.models.repetition import FILE_LOOP_CHARS
from agent.models.retry import RetryingModel, RetryPolicy

ROOT = Path(__file__).resolve().parents[2]
MiB = 1024 * 1024


def req(**kw: Any) -> ModelRequest:
    return ModelRequest(messages=[{"role": "user", "content": "write it"}], role="builder", **kw)


def client(fake: FakeOpenAI, **kw: Any) -> OpenAIChatModel:
    return OpenAIChatModel(fake.base_url, "m", **kw)


def test_a_slow_stream_that_keeps_progressing_outlives_every_fixed_limit() -> None:
    # 2.4 s in total against a 0.5 s first-byte window and a 0.5 s stall limit.
    fake = FakeOpenAI([Stream([f"tok{i} " for i in range(12)], every_s=0.2)])
    with fake.running():
        started = time.monotonic()
        reply = client(fake, timeout_s=0.5, stall_s=0.5).complete(req())
        took = time.monotonic() - started
    assert took > 2.0
    assert reply.text.startswith("tok0 tok1") and reply.text.endswith("tok11 ") and reply.finish_reason == "stop"
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (100, 20)
    assert fake.requests[0]["body"]["stream"] is True and fake.requests[0]["body"]["max_tokens"] == 3072


def test_a_stall_is_cut_by_the_watchdog_not_by_a_read_timeout() -> None:
    # httpx's backstop read timeout here is max(first-byte 1.5, stall 0.3) = 1.5 s after the last
    # byte; the watchdog cuts 0.3 s after it (the first-byte window having passed).
    fake = FakeOpenAI([Stream(["a"] * 9, every_s=0.2, stall_after=9, stall_s=30)])
    with fake.running():
        started = time.monotonic()
        with pytest.raises(ModelTimeout) as err:
            client(fake, timeout_s=1.5, stall_s=0.3).complete(req())
        took = time.monotonic() - started
    assert err.value.details["timeout_kind"] == "stall" and err.value.details["partial_chars"] == 9
    assert err.value.code == "model_timeout" and err.value.retriable
    assert 1.5 <= took < 2.8


def test_a_stall_is_retried_once_only_and_reports_the_partial_answer(fake_sleep) -> None:
    fake = FakeOpenAI([Stream(["abc", "de"], stall_after=2, stall_s=30)] * 3)
    with fake.running():
        retrying = RetryingModel(client(fake, timeout_s=0.2, stall_s=0.2), RetryPolicy(attempts=3),
                                 sleep=fake_sleep)
        with pytest.raises(ModelTimeout) as err:
            retrying.complete(req())
    assert len(fake.requests) == 2
    assert err.value.details["timeout_kind"] == "stall" and err.value.details["partial_chars"] == 5
    assert err.value.details["attempts"] == 2


def test_a_deadline_reached_mid_stream_is_a_model_timeout() -> None:
    fake = FakeOpenAI([Stream(["x"], every_s=0.05, forever=True)])
    with fake.running():
        started = time.monotonic()
        with pytest.raises(ModelTimeout) as err:
            client(fake, timeout_s=5, stall_s=5).complete(req(deadline=time.time() + 1.0))
        took = time.monotonic() - started
    assert err.value.details["timeout_kind"] == "deadline" and err.value.details["partial_chars"] > 5
    assert 0.9 <= took < 2.0


def test_a_reply_still_streaming_at_answer_by_comes_back_as_far_as_it_came() -> None:
    fake = FakeOpenAI([Stream(["x"], every_s=0.05, forever=True), Stream(["y"], first_delay_s=30)])
    with fake.running():
        started = time.monotonic()
        reply = client(fake, timeout_s=5, stall_s=5).complete(req(deadline=time.time() + 30,
                                                                  answer_by=time.time() + 1.0))
        took = time.monotonic() - started
        assert reply.finish_reason == "time" and len(reply.text) > 5 and set(reply.text) == {"x"}
        assert 0.9 <= took < 2.0
        # nothing streamed by then is no reply: a timeout, as at the deadline
        with pytest.raises(ModelTimeout) as err:
            client(fake, timeout_s=5, stall_s=5).complete(req(deadline=time.time() + 30,
                                                              answer_by=time.time() + 0.5))
    assert err.value.details["timeout_kind"] == "answer_by" and "sent no text" in err.value.message


def test_nothing_at_all_within_the_first_byte_window() -> None:
    fake = FakeOpenAI([Stream(["late"], first_delay_s=30)])
    with fake.running():
        started = time.monotonic()
        with pytest.raises(ModelTimeout) as err:
            client(fake, timeout_s=0.4, stall_s=0.1).complete(req())
    assert err.value.details["timeout_kind"] == "first_byte" and time.monotonic() - started < 1.5
    assert "--model-timeout" in err.value.message


def test_a_server_that_cannot_stream_gets_plain_requests() -> None:
    fake = FakeOpenAI(['{"ok": true}', "again"])
    fake.reject_stream = True
    with fake.running():
        c = client(fake)
        assert c.complete(req()).text == '{"ok": true}'
        assert c.complete(req()).text == "again"
    assert [r["body"]["stream"] for r in fake.requests] == [True, False, False]


def test_llama_cpp_props_are_probed_once_and_bring_prompt_progress() -> None:
    fake = FakeOpenAI(["one", "two"])
    fake.props = {"default_generation_settings": {}, "build_info": "b1"}
    with fake.running():
        c = client(fake, probe=True)
        c.complete(req())
        c.complete(req())
        caps = c.capabilities()
    assert (caps.server, caps.grammar, caps.json_schema, caps.streaming) == ("llama.cpp", True, True, True)
    assert fake.gets == ["/props"]
    assert all(r["body"]["return_progress"] is True for r in fake.requests)


def test_gzip_bomb_fails_with_a_model_error_naming_the_cap() -> None:
    fake = FakeOpenAI([Raw(200, {"Content-Type": "application/json", "Content-Encoding": "gzip"},
                           gzip_bomb(300 * MiB))])
    with fake.running():
        with pytest.raises(ModelError) as err:
            client(fake, max_response_bytes=8 * MiB).complete(req())
    assert err.value.details["reason"] == "response_too_large"
    assert "8388608 bytes" in err.value.message and "--max-response-bytes" in err.value.message


def test_gzip_bomb_does_not_grow_memory_beyond_the_cap(tmp_path: Path) -> None:
    script = textwrap.dedent("""
        import resource, sys
        sys.path[:0] = [sys.argv[1], sys.argv[1] + "/tests"]
        from fake_openai import FakeOpenAI, Raw, gzip_bomb
        from agent.errors import ModelError
        from agent.models.base import ModelRequest
        from agent.models.openai_http import OpenAIChatModel
        body = gzip_bomb(300 * 1024 * 1024)
        fake = FakeOpenAI([Raw(200, {"Content-Type": "application/json", "Content-Encoding": "gzip"}, body)])
        with fake.running():
            c = OpenAIChatModel(fake.base_url, "m")
            c.get_json(fake.base_url + "/nothing")  # warm up every code path but the body
            before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            try:
                c.complete(ModelRequest(messages=[{"role": "user", "content": "x"}]))
            except ModelError as exc:
                print(exc.details.get("reason"))
            after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print((after - before) // 1024)
    """)
    proc = subprocess.run([sys.executable, "-c", script, str(ROOT)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    reason, grown_mib = proc.stdout.split()
    assert reason == "response_too_large"
    assert int(grown_mib) < 40  # default cap 8 MiB + one chunk + buffers; unbounded it is ~300 MiB


def test_a_stream_that_falls_into_a_loop_is_stopped_after_a_few_copies(audit) -> None:  # type: ignore[no-untyped-def]
    # A good start, then the reply's own words over and over: without the watch this stream never
    # ends (the fake repeats until the client goes away).
    head = "I will fix the cart.\n"
    block = ["Let me check the totals again", " before I write the file.\n"]
    fake = FakeOpenAI([Stream([head, *block], every_s=0.002, forever=True, repeat_from=1)])
    with fake.running():
        reply = client(fake, timeout_s=5, stall_s=5, audit=audit.log).complete(req())
    period = len("".join(block))
    assert reply.finish_reason == "repetition" and reply.truncated
    assert reply.text.startswith(head + "".join(block))
    assert len(reply.text) < len(head) + 16 * period          # a handful of copies, not a token limit
    (stopped,) = audit.events("model_repetition_stopped")
    assert stopped["period"] == period and stopped["copies"] >= 6


def test_a_request_that_does_not_stop_loops_reads_the_copies_to_the_end(audit) -> None:  # type: ignore[no-untyped-def]
    head = "I will fix the cart.\n"
    block = ["Let me check the totals again", " before I write the file.\n"]
    fake = FakeOpenAI([Stream([head, *block * 40], every_s=0.001)] * 2)
    with fake.running():
        stopped = client(fake, timeout_s=5, stall_s=5, audit=audit.log).complete(req())
        read = client(fake, timeout_s=5, stall_s=5, audit=audit.log).complete(req(stop_loops=False))
    assert stopped.finish_reason == "repetition" and len(stopped.text) < len(read.text)
    assert read.finish_reason != "repetition" and read.text == head + "".join(block * 40)
    assert len(audit.events("model_repetition_stopped")) == 1


def test_a_loop_of_code_inside_a_file_is_stopped_once_it_fills_file_loop_chars(audit) -> None:  # type: ignore[no-untyped-def]
    # The 0.5B's plan loop: a good start, then two lines of a test file (a Lua long string) for ever.
    # Inside a file repetition may be data, so the watch lets copies of code fill FILE_LOOP_CHARS
    # (less than half of what max_tokens allows at about 4 characters a token), then stops.
    head = "```lua\nfunction run(context)\n  local w = tools.write('t.py', [[\n"
    block = ["    cart.remove('pear', 1.25)\n", "    self.assertEqual(cart.items['pear'], [0, 0])\n"]
    fake = FakeOpenAI([Stream([head, *block], every_s=0.0005, forever=True, repeat_from=1)])
    with fake.running():
        reply = client(fake, timeout_s=5, stall_s=5, audit=audit.log).complete(req(max_tokens=3072))
    assert reply.finish_reason == "repetition" and reply.text.startswith(head + "".join(block))
    assert FILE_LOOP_CHARS <= len(reply.text) - len(head) < FILE_LOOP_CHARS + 1500   # and a look
    assert audit.events("model_repetition_stopped")


