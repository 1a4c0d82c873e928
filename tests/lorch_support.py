"""The lorch bench harness (bench/lorch_harness.py) and other bench scripts for tests: loaded by path, once."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def load_bench(file: str) -> Any:
    """A script of bench/ as a module, loaded by path once (bench/ is no package)."""
    name = "luallm_bench_" + file.removesuffix(".py")
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / file)
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


harness = load_bench("lorch_harness.py")
