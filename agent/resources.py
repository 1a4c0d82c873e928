"""Package data: the wire-contract schemas, the demo fixtures, role prompts, the example config.

All of it is found with `importlib.resources` inside the `agent` package, so it is there however
the agent was installed (editable, a wheel, pipx, `pip install git+…`). In git each file exists
once: `agent/data/schemas` and `agent/data/demo` are symlinks to the repository's top-level
`schemas/` and `fixtures/demo/`, and setuptools copies the files behind them into the wheel.
"""

from __future__ import annotations

import functools
import shutil
from importlib.resources import files
from pathlib import Path

__all__ = ["ResourceMissing", "schema_dir", "demo_dir", "prompt_text", "example_config_path", "dump_schemas"]


class ResourceMissing(RuntimeError):
    """A package data file is absent: a broken install, never a user error."""


def _package_path(*parts: str) -> Path:
    # files() of a package installed on disk is a real directory; zip imports are not supported.
    path = Path(str(files("agent").joinpath(*parts)))
    if not path.exists():
        raise ResourceMissing(f"luallm-agent package data missing: {path} (reinstall the package)")
    return path


@functools.cache
def schema_dir() -> Path:
    """The directory of the JSON Schemas (`command.schema.json`, …, `answers/<role>.json`)."""
    return _package_path("data", "schemas")


@functools.cache
def demo_dir() -> Path:
    """The demo: `commands.ndjson`, `responses.jsonl` and `workspace/`."""
    return _package_path("data", "demo")


@functools.cache
def prompt_text(name: str) -> str:
    """A role prompt file from `agent/roles/prompts/`."""
    return _package_path("roles", "prompts", name).read_text(encoding="utf-8")


def example_config_path() -> Path:
    """The example providers/routing config (`--config`)."""
    return _package_path("models", "example-config.json")


def dump_schemas(target: Path) -> list[Path]:
    """Copy every schema into `target` (created if missing); returns the files written."""
    src = schema_dir()
    written = []
    for path in sorted(src.rglob("*.json")):
        dest = target / path.relative_to(src)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest)
        written.append(dest)
    return written
