"""Retry policy: which failures are retried, backoff with full jitter, Retry-After, deadlines."""

from __future__ import annotations

import email.utils

import pytest

from agent.errors import DeadlineExceeded, ModelError, ModelTimeout
from agent.models.base import ModelReply, ModelRequest
from agent.models.retry import RetryingModel, RetryPolicy, is_retriable, parse_retry_after


class Flaky:
    """Raises the queued errors in order, then answers."""

    model = "flaky"
    provider = "test"

    def __init__(self, *errors: Exception) -> None:
        self.errors = list(errors)
        self.calls = 0

    def complete(self, request: ModelRequest) -> ModelReply:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return ModelReply(text="ok", model=self.model, provider=self.provider)

    def close(self) -> None:
        pass


def req(deadline: float | None = None) -> ModelRequest:
    return ModelRequest(messages=[{"role": "user", "content": "hi"}], deadline=deadline)


@pytest.mark.parametrize("exc, expected", [
    (ModelTimeout("t", timeout_kind="connect"), True),
    (ModelTimeout("t", timeout_kind="read"), True),
    (ModelTimeout("t", timeout_kind="first_byte"), True),
    (ModelTimeout("t", timeout_kind="stall"), True),
    (ModelTimeout("t", timeout_kind="deadline"), False),
    (ModelError("e", status=408), True),
    (ModelError("e", status=409), True),
    (ModelError("e", status=429), True),
    (ModelError("e", status=500), True),
    (ModelError("e", status=503), True),
    (ModelError("e", status=400), False),
    (ModelError("e", status=401), False),
    (ModelError("e", status=404), False),
    (ModelError("refused", reason="connect_error"), False),
])
def test_only_transient_failures_are_retriable(exc: ModelError, expected: bool) -> None:
    assert is_retriable(exc) is expected


def test_parse_retry_after_seconds_and_http_date() -> None:
    assert parse_retry_after("7") == 7.0
    assert parse_retry_after(" 1.5 ") == 1.5
    assert parse_retry_after("-3") == 0.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    now = 1_700_000_000.0
    date = email.utils.formatdate(now + 12, usegmt=True)
    assert parse_retry_after(date, now=now) == pytest.approx(12, abs=1)
    assert parse_retry_after(email.utils.formatdate(now - 50, usegmt=True), now=now) == 0.0


def test_full_jitter_backoff_is_bounded_by_cap() -> None:
    policy = RetryPolicy(attempts=10, base_s=1.0, cap_s=8.0)
    assert [policy.backoff(n, lambda: 1.0) for n in range(1, 6)] == [1.0, 2.0, 4.0, 8.0, 8.0]
    assert policy.backoff(3, lambda: 0.25) == 1.0
    assert policy.backoff(3, lambda: 0.0) == 0.0


def test_retries_then_succeeds_and_audits_each_attempt(audit, fake_sleep) -> None:
    inner = Flaky(ModelError("busy", status=503), ModelTimeout("slow", timeout_kind="read"))
    model = RetryingModel(inner, RetryPolicy(attempts=3, base_s=1.0, cap_s=10.0), audit=audit.log,
                          sleep=fake_sleep, rand=lambda: 0.5, clock=fake_sleep.clock)
    reply = model.complete(req())
    assert reply.text == "ok" and reply.attempts == 3
    assert fake_sleep.calls == [0.5, 1.0]
    attempts = audit.events("model_attempt")
    assert [a["outcome"] for a in attempts] == ["error", "error", "ok"]
    assert attempts[0]["status"] == 503 and attempts[0]["next_wait_s"] == 0.5
    assert attempts[1]["error"] == "model_timeout"


def test_gives_up_after_attempts(audit, fake_sleep) -> None:
    inner = Flaky(*[ModelError("boom", status=500) for _ in range(5)])
    model = RetryingModel(inner, RetryPolicy(attempts=3), audit=audit.log, sleep=fake_sleep,
                          rand=lambda: 0.1, clock=fake_sleep.clock)
    with pytest.raises(ModelError) as err:
        model.complete(req())
    assert inner.calls == 3 and len(fake_sleep.calls) == 2
    assert err.value.details["attempts"] == 3
    assert audit.events("model_attempt")[-1]["gave_up"] == "attempts_exhausted"


def test_non_retriable_fails_at_once(fake_sleep) -> None:
    inner = Flaky(ModelError("bad request", status=400))
    model = RetryingModel(inner, RetryPolicy(attempts=5), sleep=fake_sleep, clock=fake_sleep.clock)
    with pytest.raises(ModelError, match="bad request"):
        model.complete(req())
    assert inner.calls == 1 and fake_sleep.calls == []


def test_retry_after_is_honoured(fake_sleep) -> None:
    inner = Flaky(ModelError("slow down", status=429, retry_after_s=4.0))
    model = RetryingModel(inner, RetryPolicy(attempts=2, cap_s=30.0), sleep=fake_sleep, rand=lambda: 0.0,
                          clock=fake_sleep.clock)
    assert model.complete(req()).text == "ok"
    assert fake_sleep.calls == [4.0]


def test_retry_after_longer_than_cap_gives_up(fake_sleep) -> None:
    inner = Flaky(ModelError("slow down", status=429, retry_after_s=3600.0))
    model = RetryingModel(inner, RetryPolicy(attempts=3, cap_s=30.0), sleep=fake_sleep, clock=fake_sleep.clock)
    with pytest.raises(ModelError, match="slow down"):
        model.complete(req())
    assert fake_sleep.calls == []


def test_never_sleeps_past_the_deadline(audit, fake_sleep) -> None:
    inner = Flaky(ModelError("slow down", status=429, retry_after_s=10.0))
    model = RetryingModel(inner, RetryPolicy(attempts=3, cap_s=30.0), audit=audit.log, sleep=fake_sleep,
                          clock=fake_sleep.clock)
    with pytest.raises(ModelError):
        model.complete(req(deadline=fake_sleep.now + 5))
    assert fake_sleep.calls == [] and inner.calls == 1
    assert audit.events("model_attempt")[-1]["gave_up"] == "deadline"


def test_deadline_exceeded_from_inner_is_not_retried(fake_sleep) -> None:
    inner = Flaky(DeadlineExceeded("no time"))
    model = RetryingModel(inner, RetryPolicy(attempts=3), sleep=fake_sleep, clock=fake_sleep.clock)
    with pytest.raises(DeadlineExceeded):
        model.complete(req())
    assert inner.calls == 1


@pytest.mark.parametrize("kind", ["stall", "first_byte", "read"])
def test_a_silent_model_is_asked_again_once_only(kind: str, audit, fake_sleep) -> None:
    inner = Flaky(*[ModelTimeout("quiet", timeout_kind=kind, partial_chars=7) for _ in range(5)])
    model = RetryingModel(inner, RetryPolicy(attempts=5), audit=audit.log, sleep=fake_sleep, rand=lambda: 0.0,
                          clock=fake_sleep.clock)
    with pytest.raises(ModelTimeout) as err:
        model.complete(req())
    assert inner.calls == 2
    assert err.value.details["partial_chars"] == 7 and err.value.details["attempts"] == 2
    assert audit.events("model_attempt")[-1]["gave_up"] == "silent_twice"


def test_a_silence_then_a_busy_server_still_gets_its_retries(fake_sleep) -> None:
    inner = Flaky(ModelTimeout("quiet", timeout_kind="stall"), ModelError("busy", status=503),
                  ModelError("busy", status=503))
    model = RetryingModel(inner, RetryPolicy(attempts=4), sleep=fake_sleep, rand=lambda: 0.0, clock=fake_sleep.clock)
    assert model.complete(req()).text == "ok" and inner.calls == 4


def test_transport_timeouts_keep_every_attempt(fake_sleep) -> None:
    inner = Flaky(*[ModelTimeout("net", timeout_kind="connect") for _ in range(2)])
    model = RetryingModel(inner, RetryPolicy(attempts=3), sleep=fake_sleep, rand=lambda: 0.0, clock=fake_sleep.clock)
    assert model.complete(req()).text == "ok" and inner.calls == 3


def test_deadline_during_a_stream_is_not_resent(fake_sleep) -> None:
    inner = Flaky(ModelTimeout("still going", timeout_kind="deadline", partial_chars=900))
    model = RetryingModel(inner, RetryPolicy(attempts=3), sleep=fake_sleep, clock=fake_sleep.clock)
    with pytest.raises(ModelTimeout):
        model.complete(req())
    assert inner.calls == 1
