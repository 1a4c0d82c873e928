"""What counts as a loop in a model's text: exact copies of one block at its end, nothing less."""

from __future__ import annotations

from agent.models.repetition import FILE_LOOP_CHARS, MIN_COPIES, RepetitionWatch, repeating_tail

# The shape of the 0.5B's feature-cart plan (runs gram6, gram9): a few lines, then two lines for ever.
HEAD = ('```lua\nfunction run(context)\n  local w = tools.write("tests/test_cart.py", [[\nfrom cart import Cart\n\n'
        'def test_add_and_total():\n    cart = Cart()\n    cart.add("apple", 0.5, 4)\n')
BLOCK = '    cart.remove("pear", 1.25)\n    self.assertEqual(cart.items["pear"], [0, 0])\n\n'


def test_the_cart_loop_is_found_with_its_first_copy() -> None:
    text = HEAD + BLOCK * 20 + BLOCK[:17]
    loop = repeating_tail(text)
    assert loop is not None
    assert loop.period == len(BLOCK) and loop.copies >= 20
    # Followed back to where the copies begin: one character early here, since HEAD ends with the
    # block's last character (any rotation of the block repeats as well).
    assert loop.start == len(HEAD) - 1
    assert text[:loop.first_copy_end] == (HEAD + BLOCK)[:-1]


def test_too_few_copies_or_too_little_text_is_no_loop() -> None:
    assert repeating_tail(HEAD + BLOCK * (MIN_COPIES - 1)) is None
    assert repeating_tail("x = 1\n" * 60) is None            # 360 characters: under the minimum
    assert repeating_tail(HEAD) is None


def test_similar_lines_that_differ_are_no_loop() -> None:
    words = ["Fizz", "Buzz", "FizzBuzz", "seven", "eight"]
    rows = "".join(f"    self.assertEqual(fizzbuzz({i})[-1], {words[i % 5]!r})\n" for i in range(1, 80))
    assert repeating_tail(HEAD + rows) is None
    table = "".join(f"    ({i}, {i * i}, {i / 7:.3f}),\n" for i in range(300))
    assert repeating_tail(table) is None                      # numbers only: data, however many rows


def test_short_runs_of_one_character_pattern_are_data_not_loops() -> None:
    assert repeating_tail("data = [" + "0, " * 400 + "0]\n") is None
    assert repeating_tail("# " + "=" * 900) is None
    assert repeating_tail(HEAD + "}\n" * 250) is None                 # 500 characters: not yet


def test_a_short_line_over_and_over_is_a_loop() -> None:
    # The 0.5B (run gram13): `} ` on a line of its own, 1,300 times, to its token limit.
    loop = repeating_tail(HEAD + "end\n" + "} \n" * 400)
    assert loop is not None and loop.period == 3 and loop.copies >= 200


def test_one_short_pattern_along_one_line_is_a_loop_once_it_runs_long() -> None:
    # The 0.5B (run gram16, new-fizzbuzz): an edit's `new` text was `"Fizz", ` a thousand times.
    head = HEAD + "  tools.edit('fizzbuzz.py', 'return []', 'return ["
    assert repeating_tail(head + '"Fizz", ' * 150) is None            # 1,200 characters: not yet
    loop = repeating_tail(head + '"Fizz", ' * 200)
    assert loop is not None and loop.period == 8


def _fed(watch: RepetitionWatch, text: str, piece: int = 7) -> int:
    """Feed `text` in pieces; the characters fed when the watch stopped (or all of them)."""
    for i in range(0, len(text), piece):
        if watch.feed(text[i:i + piece]) is not None or watch.loop is not None:
            return i + piece
    return len(text)


def test_the_watch_looks_now_and_then_and_keeps_what_it_found() -> None:
    watch = RepetitionWatch()
    prose = "Here is the plan.\n" + "I will now update the cart so that the totals are right.\n" * 40
    stopped_at = _fed(watch, prose)
    assert watch.loop is not None and watch.loop.period == 57
    assert stopped_at < 18 + 14 * 57              # seen within a look or two of the 480 characters needed
    assert watch.feed("x") is watch.loop and watch.chars == stopped_at


def test_code_repeating_inside_an_open_file_is_stopped_once_it_fills_file_loop_chars() -> None:
    # The cart loop sits in a Lua long string: with 3,072 tokens (about 12,000 characters) it is
    # stopped once its copies fill FILE_LOOP_CHARS; without a budget it is let run.
    text = HEAD + BLOCK * 300
    watch = RepetitionWatch(max_tokens=3072)
    stopped_at = _fed(watch, text)
    assert watch.loop is not None and FILE_LOOP_CHARS <= stopped_at - len(HEAD) < FILE_LOOP_CHARS + 1000
    unbounded = RepetitionWatch()
    assert _fed(unbounded, text) == len(text) and unbounded.loop is None


def test_loops_of_code_on_one_line_inside_a_fenced_file_are_stopped_early() -> None:
    # A chain of calls along one line: a file no one would write.
    chain = 'luhn.py\n```python\nclass Luhn:\n    def __init__(self, card):\n        self.card = card' + \
        ''.join(f'.replace("{c}", "")' for c in "-*/.,:;?!@()[]{}|~^_+") * 40
    one_call = chain[:chain.index(".replace")] + '.replace(":", "")' * 600   # 7 letters a copy, but a call
    for text in (chain, one_call):
        watch = RepetitionWatch(max_tokens=3072)
        stopped_at = _fed(watch, text)
        assert watch.loop is not None and stopped_at < 3500, (stopped_at, text[:40])
    assert stopped_at < len(chain[:chain.index(".replace")]) + FILE_LOOP_CHARS + 600


def test_rows_of_bare_numbers_inside_a_file_may_fill_half_the_budget() -> None:
    rows = "data.csv\n```\n" + "0,1,0,1,0,1,0,1,0,1,0,1\n" * 1000
    watch = RepetitionWatch(max_tokens=3072)
    stopped_at = _fed(watch, rows)
    assert watch.loop is not None and 3072 * 2 <= stopped_at < 3072 * 2 + 2000


def test_a_fenced_table_of_one_row_is_data_and_the_words_after_it_are_judged() -> None:
    table = "data.csv\n```\n" + "0,0,0,0,0,0,0,0,0,0\n" * 50_000 + "```\n"   # 1 MB of one row
    watch = RepetitionWatch(max_tokens=1_000_000)
    assert _fed(watch, table, 64) == len(table) and watch.loop is None
    after = "Done. " * 20 + "I hope this helps!\n" * 600     # the reply's own words loop: seen within a look
    assert _fed(watch, after, 64) < len(after) and watch.loop is not None and watch.loop.start > len(table)


def test_a_loop_that_runs_on_past_the_files_end_is_stopped() -> None:
    watch = RepetitionWatch(max_tokens=100_000)
    body = "a.py\n```python\nx = 1\n```\n"
    assert _fed(watch, body * 40) < len(body * 40) and watch.loop is not None  # whole files over and over
