"""Where an edit's `old` text is meant to go when it is not copied exactly.

Small models rarely copy `old` byte for byte: they re-indent it, drop a blank line or a
docstring, or paraphrase a line (a method quoted without its docstring, say). Asking again
gets the same text,
so the agent finds the block itself, in three steps:

1. the same lines ignoring whitespace (indentation, blank lines, spacing inside a line);
2. the same lines with a few of the file's lines left out: from old's first line to its last,
   old's lines in order, at most max(2, half of old) lines more (a docstring or comment the
   model skipped — a long docstring makes the text too unlike for step 3);
3. a near block: a run of whole lines, of about the same length, whose text is at least
   `NEAR_RATIO` similar to `old` and clearly better than any other run.

Each must be unique; otherwise there is no match and the model is asked again with the reason.
The result is a span of whole lines plus the indentation to move `new` by. A line of the file
that old left out (the skipped docstring) is kept: put back after the line it followed, when
that line is still in `new` exactly once and `new` does not have it already.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Block", "find_block", "NEAR_RATIO"]

NEAR_RATIO = 0.8
_MARGIN = 0.05  # the best run must beat any other, non-overlapping run by this much
_EDGE_BONUS = 0.05
_WORK_CAP = 400_000  # line comparisons; beyond it (huge files and snippets) only step 1 runs


@dataclass(frozen=True)
class Block:
    start: int  # character offsets of the whole lines matched in the content
    end: int
    first_line: int  # 1-based line numbers, for the log
    last_line: int
    ratio: float  # text similarity of old and the block
    how: str  # for the log: "ignoring whitespace", "2 lines of the file left out", "84% alike"
    indent_from: str  # the indentation of old's first line ...
    indent_to: str  # ... and of the matched block's first line
    # old's indentations and the file's, from the lines that matched: a model that indents by
    # two where the file indents by four gets every level mapped, not just the first shifted
    levels: tuple[tuple[str, str], ...] = ()
    kept: tuple[tuple[str, str], ...] = ()  # (the key of the line before it, a file line old left out)

    def replacement(self, new: str) -> str:
        """`new`, moved to the block's indentation, ending in a newline like the block does."""
        levels = dict(self.levels)
        out = []
        for line in new.splitlines(keepends=True):
            own = _indent(line)
            if line.strip() and own in levels:
                line = levels[own] + line[len(own):]
            elif line.strip() and own.startswith(self.indent_from):
                line = self.indent_to + line[len(self.indent_from):]
            out.append(line if line.endswith("\n") else line + "\n")
        for anchor, omitted in reversed(self.kept):  # reversed: each lands right after its anchor, in order
            keys = [_key(x) for x in out]
            if _key(omitted) not in keys and keys.count(anchor) == 1:
                at = keys.index(anchor) + 1
                out.insert(at, omitted if omitted.endswith("\n") else omitted + "\n")
        return "".join(out)


def _key(line: str) -> str:
    return " ".join(line.split())


def _indent(line: str) -> str:
    return line[:len(line) - len(line.lstrip())]


def find_block(content: str, old: str) -> Block | None:
    """The one block of `content` that `old` means, or None when none or several qualify."""
    from difflib import SequenceMatcher  # only when an edit missed: not on the builder's first import

    lines = content.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    body = [i for i, line in enumerate(lines) if line.strip()]
    keys = [_key(lines[i]) for i in body]
    old_lines = [ln for ln in old.splitlines() if ln.strip()]
    want = [_key(ln) for ln in old_lines]
    n = len(want)
    if not n or not keys:
        return None

    def block(s: int, size: int, ratio: float, how: str) -> Block:
        first, last = body[s], body[s + size - 1]
        pairs: dict[str, set[str]] = {}
        kept: list[tuple[str, str]] = []
        matcher = SequenceMatcher(None, want, keys[s:s + size], autojunk=False)
        for m in matcher.get_matching_blocks():
            for k in range(m.size):
                pairs.setdefault(_indent(old_lines[m.a + k]), set()).add(_indent(lines[body[s + m.b + k]]))
        for tag, i1, _, j1, j2 in matcher.get_opcodes():
            if tag == "insert" and i1 > 0:  # file lines old left out, after old's line i1 - 1
                kept += [(want[i1 - 1], lines[body[s + j]]) for j in range(j1, j2)]
        levels = tuple((o, next(iter(f))) for o, f in pairs.items() if len(f) == 1)  # consistent ones only
        return Block(starts[first], starts[last + 1], first + 1, last + 1, ratio, how,
                     _indent(old_lines[0]), _indent(lines[first]), levels, tuple(kept))

    exact = [s for s in range(len(keys) - n + 1) if keys[s:s + n] == want]
    if exact:
        return block(exact[0], n, 1.0, "ignoring whitespace") if len(exact) == 1 else None
    if n < 2:
        return None  # one line that is not in the file is not "near" anything
    spans = [span for span in (_in_order(keys, want, s, max(2, n // 2)) for s in range(len(keys))
                               if keys[s] == want[0]) if span is not None]
    if len(spans) == 1:
        s, size = spans[0]
        return block(s, size, 1.0, f"{size - n} line{'s' if size - n > 1 else ''} of the file left out")
    if spans or len(keys) * n * 5 > _WORK_CAP:
        return None
    target = "\n".join(want)
    scored: list[tuple[float, float, int, int]] = []
    for size in range(max(1, n - 2), n + 3):
        for s in range(len(keys) - size + 1):
            matcher = SequenceMatcher(None, target, "\n".join(keys[s:s + size]), autojunk=False)
            if matcher.real_quick_ratio() < NEAR_RATIO or matcher.quick_ratio() < NEAR_RATIO:
                continue
            ratio = matcher.ratio()
            if ratio >= NEAR_RATIO:
                # A run that starts and ends on old's own first and last lines is the block the
                # model meant (a method quoted without its docstring), not a sub-run that scores
                # a little higher by leaving out the unmatched line and the `def` with it.
                # Whole lines count too, so leaving one of old's lines out costs more than
                # taking one extra line of the file in.
                lines_alike = SequenceMatcher(None, want, keys[s:s + size], autojunk=False).ratio()
                edges = (keys[s] == want[0]) + (keys[s + size - 1] == want[-1])
                scored.append(((ratio + lines_alike) / 2 + _EDGE_BONUS * edges, ratio, s, size))
    if not scored:
        return None
    scored.sort(reverse=True)
    _, best, s0, size0 = scored[0]
    for _, ratio, s, size in scored[1:]:
        overlaps = s < s0 + size0 and s0 < s + size
        if not overlaps and ratio >= best - _MARGIN:
            return None  # two different places fit about as well: not the agent's call
    return block(s0, size0, round(best, 3), f"{best:.0%} alike")


def _in_order(keys: list[str], want: list[str], s: int, slack: int) -> tuple[int, int] | None:
    """(start, size) of the shortest run from `s` holding `want` in order, ending on its last line,
    with at most `slack` extra lines; None when there is none."""
    j = 0
    for i in range(s, min(len(keys), s + len(want) + slack)):
        if keys[i] == want[j]:
            j += 1
            if j == len(want):
                return s, i - s + 1
    return None
