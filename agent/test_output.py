"""A test run's failures condensed for a prompt: one traceback per kind of error, then the rest.

A failing run of a fresh module prints dozens of tracebacks, most of them the same error; its tail
shows the last few, often of one kind and cut mid-line. A developer reads the first failure of each
kind and the names of the others: so does the model here. Output in neither unittest's nor pytest's
shape gives an empty digest and the caller quotes the tail.
"""

from __future__ import annotations

import re

__all__ = ["failure_digest"]

# unittest: "ERROR: test_x (mod.Class.test_x)"; pytest: "____ test_x ____" or "____ Class.test_x ____".
_HEAD = re.compile(r"^(?:(?P<kind>ERROR|FAIL): (?P<ut>\S+).*|_{3,} (?P<pt>[^_\s].*?) _{3,})$")
_RULE = re.compile(r"^(?:[=_-]{20,}|={3,} .* ={3,})$")
# Python 3.11's markers under an expression and pytest's dashed rule between frames: no information.
_NOISE = re.compile(r"^\s*[\^~]+\s*$|^(?:_ )+_?\s*$")
_LITERAL = re.compile(r"'[^']*'|\"[^\"]*\"|\b\d+(?:\.\d+)?\b")
_SUMMARY = re.compile(r"^(?:Ran \d+ tests?.*|FAILED \(.*\)|=* ?\d+ (?:failed|passed|errors?)\b.*)$", re.M)
_PER_KIND = 3
_BLOCK = 700  # characters of one traceback, its first lines and its last


def _blocks(text: str) -> list[tuple[str, list[str]]]:
    """(test name, lines) for each failure block, in the order printed."""
    blocks: list[tuple[str, list[str]]] = []
    open_ = False
    for line in text.splitlines():
        head = _HEAD.match(line)
        if head:
            name = head.group("ut") or head.group("pt")
            blocks.append((name, [f"{head.group('kind') or 'FAIL'}: {name}"]))
            open_ = True
        elif open_ and _RULE.match(line):
            open_ = len(blocks[-1][1]) == 1  # the rule under a header opens the block; the next one ends it
        elif open_ and line.strip() and not _NOISE.match(line):
            blocks[-1][1].append(line.rstrip())
    return blocks


def _error_line(lines: list[str]) -> str:
    """The error a block ends with: the first line at the left margin after the innermost frame
    (unittest), or pytest's first `E` line."""
    frames = [i for i, line in enumerate(lines) if line.lstrip().startswith('File "')]
    for line in lines[frames[-1] + 2 if frames else 1:]:  # past the innermost frame and its code line
        if line.startswith("E ") or (frames and not line[0].isspace()):
            return line
    return lines[-1]


def _shown(lines: list[str]) -> str:
    text = "\n".join(lines)
    if len(text) <= _BLOCK:
        return text
    return text[: _BLOCK // 2].rstrip() + "\n  …\n" + text[-_BLOCK // 2:].lstrip("\n")


def failure_digest(text: str, chars: int) -> str:
    """At most `chars` characters: the first failure of each kind of error in full, then as many of the
    others as fit, the names of the rest, and the run's summary lines. Empty when no failure block is found."""
    blocks = _blocks(text)
    if not blocks:
        return ""
    kinds: dict[str, list[int]] = {}
    for i, (_, lines) in enumerate(blocks):
        kinds.setdefault(_LITERAL.sub("…", _error_line(lines)), []).append(i)
    # The first of each kind, then the second of each, then the third: more of one kind adds little.
    order = [ids[k] for k in range(_PER_KIND) for ids in kinds.values() if k < len(ids)]
    summary = "\n".join(m.group(0) for m in _SUMMARY.finditer(text))
    room = chars - len(summary) - 200
    shown: set[int] = set()
    for i in order:
        part = _shown(blocks[i][1])
        if shown and len(part) + 2 > room:
            continue
        shown.add(i)
        room -= len(part) + 2
    parts = [_shown(blocks[i][1]) for i in sorted(shown)]
    rest = [blocks[i][0] for i in range(len(blocks)) if i not in shown]
    if rest:
        names = ", ".join(rest)
        parts.append(f"Also failing ({len(rest)} more): "
                     + (names if len(names) <= max(80, room) else names[: max(80, room)].rsplit(", ", 1)[0] + ", …"))
    return ("\n\n".join(parts) + ("\n\n" + summary if summary else ""))[:chars]
