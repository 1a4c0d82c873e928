"""Every supervised scenario leaves an audit log whose every line, rotated files included, matches
schemas/supervised-audit.schema.json: one format, whichever command wrote the line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest
from supervised_support import AUDIT_SCHEMA


def invalid_audit_lines(root: Path) -> list[str]:
    """'file:line: problem' for each audit line under `root` that is not one schema-valid entry."""
    validator = jsonschema.Draft202012Validator(AUDIT_SCHEMA, format_checker=jsonschema.FormatChecker())
    bad: list[str] = []
    for path in sorted(root.rglob("audit_log.jsonl*")):
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            try:
                entry = json.loads(line)
            except ValueError as exc:
                bad.append(f"{path}:{number}: not JSON ({exc})")
                continue
            bad += [f"{path}:{number}: {e.message}" for e in validator.iter_errors(entry)]
    return bad


@pytest.fixture(autouse=True)
def _every_audit_line_validates(tmp_path: Path) -> Iterator[None]:
    yield
    bad = invalid_audit_lines(tmp_path)
    assert not bad, "\n".join(bad[:10])
