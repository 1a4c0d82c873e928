"""The `---@skill` header is parsed without running code; malformed headers name their line."""

import pytest

from agent.errors import SkillMetadataInvalid
from agent.skills.metadata import parse_metadata

GOOD = '''---@skill {
---  name = "read_csv",
---  version = "1.0",
---  description = "Parse a CSV file into a table of rows",
---  dependencies = {},
---  paths = { "~/data/*" },
---  urls = {},
---  public_functions = { "run", "parse_args" },
---}

local M = {}
return M
'''


def test_seed_header_parses_into_metadata() -> None:
    meta = parse_metadata(GOOD)
    assert (meta.name, meta.version, meta.paths, meta.public_functions) == (
        "read_csv", "1.0", ("~/data/*",), ("run", "parse_args"))
    assert meta.dependencies == () and meta.header_lines == 9


@pytest.mark.parametrize(("source", "line", "fragment"), [
    ("local M = {}\nreturn M\n", 1, "must start with"),
    ("\n\n---@skill {\n---  name = os.getenv('X'),\n---}\n", 4, "unexpected"),
    ('---@skill {\n---  name = "a",\n---  version = "1"\n---  description = "x" }\n', 4, "expected ',' or '}'"),
    ('---@skill {\n---  name = "a",\n---  version = "1",\n---}\n', 2, "'description' is missing"),
    ('---@skill {\n---  name = "a", version = "1", description = "d",\n---  evil = true,\n---}\n', 3,
     "unknown skill header field 'evil'"),
    ('---@skill {\n---  name = "a", version = "1", description = "d",\n---  paths = { 1, 2 },\n---}\n', 3,
     "'paths' must be a list"),
    ('---@skill {\n---  name = "a", version = "1", description = "d",\n', 2, "ends too early"),
    ('---@skill {\n---  name = "a b", version = "1", description = "d" }\n', 2, "must be an identifier"),
])
def test_malformed_header_is_a_hard_error_naming_the_line(source: str, line: int, fragment: str) -> None:
    with pytest.raises(SkillMetadataInvalid) as info:
        parse_metadata(source)
    assert info.value.details["line"] == line
    assert f"line {line}:" in info.value.message and fragment in info.value.message


def test_header_name_must_match_the_file() -> None:
    with pytest.raises(SkillMetadataInvalid, match="the file is other.lua"):
        parse_metadata(GOOD, expect_name="other")
