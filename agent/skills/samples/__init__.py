"""The sample skills shipped with the package (package data), for `init` or a person to copy."""

from pathlib import Path

__all__ = ["SAMPLES_DIR", "sample_names"]

SAMPLES_DIR = Path(__file__).resolve().parent


def sample_names() -> list[str]:
    return sorted(p.stem for p in SAMPLES_DIR.glob("*.lua") if not p.stem.endswith("_test"))
