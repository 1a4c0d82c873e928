"""Every supervised scenario leaves an audit log whose every line, rotated files included, matches
schemas/supervised-audit.schema.json: one format, whichever command wrote the line."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from supervised_support import invalid_audit_lines


@pytest.fixture(autouse=True)
def _every_audit_line_validates(tmp_path: Path) -> Iterator[None]:
    yield
    bad = invalid_audit_lines(tmp_path)
    assert not bad, "\n".join(bad[:10])
