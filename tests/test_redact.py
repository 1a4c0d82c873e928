from agent.redact import MASK, Redactor


def test_nested_secret_keys_are_masked_any_case() -> None:
    r = Redactor(environ={})
    out = r.data({"a": {"API_KEY": "abc", "Github_Token": "t", "db_secret": "s", "keys": ["x"]},
                  "idempotency_key": "ik:123"})
    assert out["a"]["API_KEY"] == MASK and out["a"]["Github_Token"] == MASK and out["a"]["db_secret"] == MASK
    assert out["a"]["keys"] == ["x"]
    assert out["idempotency_key"] == "ik:123"  # a protocol field, never a secret


def test_env_secret_values_are_scrubbed_from_text() -> None:
    r = Redactor(environ={"OPENAI_API_KEY": "sk-verysecret123", "HOME": "/root"})
    assert r.text("key is sk-verysecret123!") == f"key is {MASK}!"
    assert r.data(["/root", {"msg": "sk-verysecret123"}]) == ["/root", {"msg": MASK}]


def test_values_shorter_than_eight_characters_are_not_secrets() -> None:
    r = Redactor(environ={"SHORT_TOKEN": "abc1234", "LONG_TOKEN": "abcd1234"})
    assert r.values() == ("abcd1234",)
    assert r.text("abc1234 and abcd1234") == f"abc1234 and {MASK}"


def test_env_names_match_in_any_case_and_other_names_do_not() -> None:
    r = Redactor(environ={"github_token": "gh-value-1", "Db_Secret": "db-value-2", "MY_KEY": "key-value-3",
                          "KEYRING": "not-a-secret", "TOKENS": "not-a-secret-either"})
    assert set(r.values()) == {"gh-value-1", "db-value-2", "key-value-3"}


def test_values_under_secret_keys_in_a_command_are_harvested_at_any_depth() -> None:
    r = Redactor(environ={})
    cmd = {"kind": "command", "idempotency_key": "ik:not-a-secret-at-all",
           "inputs": {"deploy": [{"Service_Token": "svc-token-value"}], "aws_secret": {"id": "AKIAEXAMPLE1"},
                      "pin_key": 12345678, "tiny_key": "short"}}
    assert r.harvest(cmd) == 3
    assert set(r.values()) == {"svc-token-value", "AKIAEXAMPLE1", "12345678"}
    text = "svc-token-value / AKIAEXAMPLE1 / 12345678 / ik:not-a-secret-at-all / short"
    assert r.text(text) == f"{MASK} / {MASK} / {MASK} / ik:not-a-secret-at-all / short"
    # structured data: everything under a secret key is masked, however short or deep
    assert r.data({"aws_secret": {"id": "x"}, "tiny_key": "s"}) == {"aws_secret": {"id": MASK}, "tiny_key": MASK}


def test_a_command_with_too_many_secret_values_is_refused_before_any_is_added() -> None:
    import pytest

    from agent.errors import InvalidCommand
    from agent.redact import MAX_COMMAND_SECRETS

    r = Redactor(environ={})
    with pytest.raises(InvalidCommand, match="secret values"):
        r.harvest({"inputs": {f"k{i}_token": f"value-{i:08d}" for i in range(MAX_COMMAND_SECRETS + 1)}})
    assert r.values() == ()


def test_harvested_values_are_forgotten_oldest_first_but_env_values_never() -> None:
    from agent import redact

    r = Redactor(environ={"OPENAI_API_KEY": "sk-env-value-1"})
    for i in range(redact.MAX_HARVESTED // 1000 + 5):
        r.harvest({"inputs": {f"k{j}_token": f"cmd{i:03d}-value-{j:04d}" for j in range(1000)}})
    values = set(r.values())
    assert "sk-env-value-1" in values and "cmd000-value-0000" not in values
    assert len(values) == redact.MAX_HARVESTED + 1


def test_copy_is_independent() -> None:
    r = Redactor(environ={"A_TOKEN": "value-aaaa"})
    twin = r.copy()
    twin.add("value-bbbb")
    assert r.values() == ("value-aaaa",) and set(twin.values()) == {"value-aaaa", "value-bbbb"}
