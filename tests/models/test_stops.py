"""Stop strings the client applies: the reply ends before the first, across piece boundaries."""

from __future__ import annotations

import time

from fake_openai import FakeOpenAI, Stream

from agent.models.base import ModelRequest
from agent.models.openai_http import OpenAIChatModel
from agent.models.stops import StopStrings, cut_at_stop


def test_a_stop_string_split_over_pieces_is_found_where_it_begins() -> None:
    stops = StopStrings(("```\nb.py\n```",))
    text = "a.py\n```\nx = 1\n```\nb.py\n```\ny = 2\n"
    pieces = [text[i:i + 3] for i in range(0, len(text), 3)]
    ends = [stops.feed(p) for p in pieces]
    end = next(e for e in ends if e is not None)
    assert text[:end] == "a.py\n```\nx = 1\n"
    assert cut_at_stop(text, ("```\nb.py\n```",)) == text[:end]
    assert StopStrings(()).feed("anything") is None and cut_at_stop("abc", ()) == "abc"


def test_a_stream_is_closed_at_a_stop_string_and_the_reply_ends_before_it() -> None:
    fake = FakeOpenAI([Stream(["a.py\n```\nx = 1\n```\n", "\nb.py\n```\n", "y = 2\n"], every_s=0.05, forever=True,
                              repeat_from=2)])
    with fake.running():
        started = time.monotonic()
        reply = OpenAIChatModel(fake.base_url, "m", timeout_s=5, stall_s=5).complete(
            ModelRequest(messages=[{"role": "user", "content": "go"}], stop=("```\n\nb.py\n```",),
                         deadline=time.time() + 30))
        took = time.monotonic() - started
    assert reply.text == "a.py\n```\nx = 1\n" and reply.finish_reason == "stop_string"
    assert took < 3
