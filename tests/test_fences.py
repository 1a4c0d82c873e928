"""The one reader of fenced blocks: loose for a reply's one chunk, strict for whole files."""

from __future__ import annotations

from agent.fences import blocks, file_blocks


def test_a_loose_block_may_close_at_the_end_of_a_code_line() -> None:
    [b] = blocks("Here:\n```Lua\nfunction run(c)\n  return {}\nend```\nDone.")
    assert (b.lang, b.info, b.body) == ("lua", "Lua", "function run(c)\n  return {}\nend")


def test_an_unclosed_last_block_counts_only_when_asked() -> None:
    reply = "```json\n{\"a\": 1}\n```\n```lua\nfunction run(c)\n"
    assert [b.lang for b in blocks(reply)] == ["json"]
    last = blocks(reply, open_last=True)[-1]
    assert (last.lang, last.body, last.end) == ("lua", "function run(c)\n", len(reply))


def test_a_file_block_keeps_a_fence_of_its_own() -> None:
    readme = "# Use\n\n```sh\nrun it\n```\n\nThat is all.\n"
    reply = f"README.md\n````markdown\n{readme}````\n\ncalc.py\n```python\nx = 1\n```\n"
    got = file_blocks(reply)
    assert [(b.lang, b.body) for b in got] == [("markdown", readme), ("python", "x = 1\n")]
    assert reply[got[1].start:got[1].end] == "```python\nx = 1\n```"
    # read loosely, the README would end at its own inner fence
    assert blocks(reply)[0].body != readme
