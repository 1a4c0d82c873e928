import ctypes
import errno
import os
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import agent.workspace as workspace_mod
from agent.errors import ArtifactWriteFailed, FileUnreadable, PathRejected, SecretInArtifact
from agent.pathpolicy import AGENT
from agent.workspace import Workspace, sanitize_id, sha256_bytes


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    root = tmp_path / "root"
    root.mkdir()
    return Workspace(root)


@pytest.mark.parametrize("bad", ["../x", "a/../../x", "/etc/passwd", "", "a\x00b"])
def test_paths_outside_or_malformed_are_rejected(ws: Workspace, bad: str) -> None:
    with pytest.raises(PathRejected):
        ws.resolve(bad)


def test_absolute_path_inside_workspace_is_allowed(ws: Workspace) -> None:
    assert ws.resolve(str(ws.root / "a.txt")) == ws.root / "a.txt"


def test_dotdot_that_stays_inside_is_allowed(ws: Workspace) -> None:
    assert ws.resolve("a/../b.txt") == ws.root / "b.txt"


def test_symlinked_parent_directory_of_new_file_is_rejected(ws: Workspace, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (ws.root / "link").symlink_to(outside)
    with pytest.raises(PathRejected):
        ws.write_atomic("link/new.txt", "x")
    assert list(outside.iterdir()) == []


def test_dangling_symlink_pointing_outside_is_rejected(ws: Workspace, tmp_path: Path) -> None:
    (ws.root / "out").symlink_to(tmp_path / "nowhere.txt")
    with pytest.raises(PathRejected):
        ws.write_atomic("out", "x")
    assert not (tmp_path / "nowhere.txt").exists()


def test_write_is_atomic_private_and_checksummed(ws: Workspace) -> None:
    art = ws.write_atomic("deep/er/file.txt", b"hello")
    path = ws.root / "deep/er/file.txt"
    assert path.read_bytes() == b"hello"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE((ws.root / "deep").stat().st_mode) == 0o700
    assert stat.S_IMODE((ws.root / "deep/er").stat().st_mode) == 0o700
    assert art.sha256 == sha256_bytes(b"hello") and art.size == 5 and art.path == "deep/er/file.txt"
    assert [p.name for p in path.parent.iterdir()] == ["file.txt"]  # no temp file left


@pytest.mark.parametrize("mode", [0o755, 0o644, 0o600, 0o700])
def test_rewrite_keeps_the_files_permission_bits(ws: Workspace, mode: int) -> None:
    (ws.root / "f").write_text("one")
    os.chmod(ws.root / "f", mode)
    ws.write_atomic("f", "two")
    assert (ws.root / "f").read_text() == "two"
    assert stat.S_IMODE((ws.root / "f").stat().st_mode) == mode


def test_new_files_and_directories_are_private_whatever_the_umask(ws: Workspace) -> None:
    old = os.umask(0)
    try:
        ws.write_atomic("n/e/w.txt", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((ws.root / "n/e/w.txt").stat().st_mode) == 0o600
    assert stat.S_IMODE((ws.root / "n").stat().st_mode) == 0o700
    assert stat.S_IMODE((ws.root / "n/e").stat().st_mode) == 0o700


def test_digest_changes_with_content_and_ignores_bookkeeping(ws: Workspace) -> None:
    ws.write_atomic("src/a.py", "1")
    d1 = ws.digest()
    ws.write_atomic("receipts/T/x.json", "{}", policy=AGENT)
    ws.write_atomic("logs/luallm-agent/audit.jsonl", "{}", policy=AGENT)
    (ws.root / ".hidden").write_text("x")
    assert ws.digest() == d1
    ws.write_atomic("src/a.py", "2")
    assert ws.digest() != d1


@pytest.mark.parametrize("raw", ["../../x", "a/b", ".hidden", "T 1", "", "é"])
def test_sanitize_id_yields_one_safe_component(raw: str) -> None:
    out = sanitize_id(raw)
    assert out and "/" not in out and not out.startswith(".") and ".." != out
    assert all(c.isalnum() or c in "._-" for c in out)


def test_sanitize_id_keeps_normal_ids_and_separates_lookalikes() -> None:
    assert sanitize_id("T-0042") == "T-0042"
    assert sanitize_id("a/b") != sanitize_id("a_b")


# -- normalisation: judged on the folded path, never the string ---------------------------------
@pytest.mark.parametrize("raw,key", [("./a.txt", "a.txt"), ("src/../b.txt", "b.txt"), ("a//b/./c", "a/b/c"),
                                     (".", ""), ("./.env", ".env"), ("src/../.git/config", ".git/config")])
def test_paths_are_normalised_lexically(ws: Workspace, raw: str, key: str) -> None:
    assert ws.normalize(raw) == key


def test_absolute_paths_inside_are_made_relative(ws: Workspace) -> None:
    assert ws.normalize(str(ws.root / "x" / ".." / "y.txt")) == "y.txt"
    assert ws.normalize(str(ws.root)) == ""


# -- symlinks: none is followed, inside or out -------------------------------------------------
def test_symlink_at_any_component_is_rejected_and_named(ws: Workspace, tmp_path: Path) -> None:
    (ws.root / "real").mkdir()
    (ws.root / "a").mkdir()
    (ws.root / "a" / "inner").symlink_to(ws.root / "real")  # stays inside: still refused
    for op in (lambda: ws.write_atomic("a/inner/x.txt", "x"), lambda: ws.read_bytes("a/inner/x.txt"),
               lambda: ws.resolve("a/inner/x.txt"), lambda: ws.check_write("a/inner/x.txt", "x")):
        with pytest.raises(PathRejected) as exc:
            op()
        assert exc.value.details["reason"] == "symlink" and exc.value.details["component"] == "a/inner"
        assert "a/inner is a symbolic link" in exc.value.message
    assert list((ws.root / "real").iterdir()) == []


def test_final_symlink_is_neither_read_nor_written_through(ws: Workspace, tmp_path: Path) -> None:
    target = tmp_path / "outside.txt"
    target.write_text("outside")
    (ws.root / "link.txt").symlink_to(target)
    with pytest.raises(PathRejected):
        ws.read_bytes("link.txt")
    with pytest.raises(PathRejected):
        ws.write_atomic("link.txt", "changed")
    assert target.read_text() == "outside" and (ws.root / "link.txt").is_symlink()
    assert not ws.exists("link.txt") and ws.checksum("link.txt") is None


def test_a_fifo_is_refused_not_waited_on(ws: Workspace) -> None:
    os.mkfifo(ws.root / "pipe")
    with pytest.raises(PathRejected) as exc:
        ws.read_bytes("pipe")
    assert exc.value.details["reason"] == "not_a_file"
    with pytest.raises(PathRejected):
        ws.write_atomic("pipe", "x")
    assert ws.digest().startswith("sha256:")  # the digest skips it instead of blocking


def test_a_file_used_as_a_directory_is_rejected(ws: Workspace) -> None:
    ws.write_atomic("f.txt", "x")
    with pytest.raises(PathRejected) as exc:
        ws.write_atomic("f.txt/inner", "y")
    assert exc.value.details["reason"] == "not_a_directory"


# -- OS errors map to precise codes, never internal_error --------------------------------------
def test_a_300_character_component_is_path_rejected(ws: Workspace) -> None:
    long = "a" * 300
    for op in (lambda: ws.write_atomic(f"{long}/x.txt", "x"), lambda: ws.read_bytes(long),
               lambda: ws.resolve(long), lambda: ws.check_write(f"src/{long}.py", "x")):
        with pytest.raises(PathRejected) as exc:
            op()
        assert exc.value.details["reason"] == "name_too_long"


def test_a_255_byte_name_still_gets_a_temp_file_that_fits(ws: Workspace) -> None:
    name = "b" * 255
    assert ws.write_atomic(name, "ok").path == name
    assert (ws.root / name).read_text() == "ok"


@pytest.mark.parametrize("err", [errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EIO])
def test_disk_and_permission_errors_are_artifact_write_failed(ws: Workspace, monkeypatch: pytest.MonkeyPatch,
                                                              err: int) -> None:
    # Simulated at the write syscall: the suite runs as root and cannot fill or remount a disk.
    def failing_write(fd: int, data: object) -> int:
        raise OSError(err, os.strerror(err))

    monkeypatch.setattr(workspace_mod.os, "write", failing_write)
    with pytest.raises(ArtifactWriteFailed) as exc:
        ws.write_atomic("d/f.txt", "x")
    assert exc.value.details["reason"] == errno.errorcode[err] and os.strerror(err) in exc.value.message
    assert [p.name for p in (ws.root / "d").iterdir()] == []  # the temp file is gone


def test_file_size_limit_is_artifact_write_failed_in_a_real_process(tmp_path: Path) -> None:
    (tmp_path / "w").mkdir()
    code = (
        "import resource, signal, sys\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000))\n"
        "from agent.errors import AgentError\n"
        "from agent.workspace import Workspace\n"
        "try:\n"
        f"    Workspace({str(tmp_path / 'w')!r}).write_atomic('big.bin', b'x' * 5000)\n"
        "except AgentError as exc:\n"
        "    print(exc.code, exc.details['reason'])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert out.stdout.split() == ["artifact_write_failed", "EFBIG"], out.stderr
    assert list((tmp_path / "w").iterdir()) == []


def test_unreadable_file_is_file_unreadable(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    ws.write_atomic("r.txt", "x")
    real_open = os.open

    def denying_open(path: object, flags: int, *args: object, **kw: object) -> int:
        if path == "r.txt":
            raise PermissionError(errno.EACCES, "Permission denied")
        return real_open(path, flags, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(workspace_mod.os, "open", denying_open)
    with pytest.raises(FileUnreadable) as exc:
        ws.read_bytes("r.txt")
    assert exc.value.details["reason"] == "EACCES"


# -- exclusive create and secrets --------------------------------------------------------------
def test_exclusive_write_never_replaces(ws: Workspace) -> None:
    ws.write_atomic("once.txt", "first", exclusive=True)
    with pytest.raises(FileExistsError):
        ws.write_atomic("once.txt", "second", exclusive=True)
    with pytest.raises(ArtifactWriteFailed):
        ws.create_exclusive("once.txt", "third")
    assert (ws.root / "once.txt").read_text() == "first"
    assert [p.name for p in ws.root.iterdir()] == ["once.txt"]


def test_content_with_a_secret_value_is_refused_not_rewritten(tmp_path: Path) -> None:
    (tmp_path / "w").mkdir()
    secret = "sk-test-0123456789"
    known = [secret]
    ws = Workspace(tmp_path / "w", secret_values=lambda: known)
    with pytest.raises(SecretInArtifact) as exc:
        ws.write_atomic("config.py", f"KEY = '{secret}'\n")
    assert secret not in exc.value.message and not (ws.root / "config.py").exists()
    with pytest.raises(SecretInArtifact):
        ws.check_write("config.py", f"KEY = '{secret}'\n")
    ws.write_atomic("config.py", "KEY = os.environ['MY_KEY']\n")
    assert (ws.root / "config.py").read_text() == "KEY = os.environ['MY_KEY']\n"
    known.append("learned-later-value")  # a callable source is read at each write
    with pytest.raises(SecretInArtifact):
        ws.write_atomic("b.txt", "learned-later-value")


# -- races: a directory swapped for a link out while the agent works ---------------------------
def _exchange(a: Path, b: Path) -> None:
    """Atomically swap two names (renameat2 RENAME_EXCHANGE): the path is never missing."""
    if _libc.renameat2(-100, bytes(a), -100, bytes(b), 2) != 0:  # AT_FDCWD, RENAME_EXCHANGE
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


_libc = ctypes.CDLL(None, use_errno=True)
_HAS_EXCHANGE = hasattr(_libc, "renameat2")


class Swapper(threading.Thread):
    """Swaps `d` (a real directory) and `x` (a symlink out of the workspace) as fast as it can."""

    def __init__(self, root: Path, outside: Path) -> None:
        super().__init__(daemon=True)
        (root / "d").mkdir(mode=0o700)
        (root / "x").symlink_to(outside)
        self.root = root
        self.stop = threading.Event()
        self.swaps = 0

    def run(self) -> None:
        while not self.stop.is_set():
            _exchange(self.root / "d", self.root / "x")
            self.swaps += 1
            time.sleep(0.00005)  # lets both states last long enough to be hit


@pytest.mark.skipif(not _HAS_EXCHANGE, reason="libc without renameat2")
def test_swapping_a_directory_for_a_link_out_never_writes_outside(tmp_path: Path) -> None:
    root, outside = tmp_path / "ws", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    ws = Workspace(root)
    swapper = Swapper(root, outside)
    swapper.start()
    written, rejected, i = set(), 0, 0
    deadline = time.monotonic() + 30
    try:
        # At least 850 writes, and on until both outcomes were seen (a loaded CI machine).
        while i < 850 or not (written and rejected) and time.monotonic() < deadline:
            i += 1
            try:
                ws.write_atomic(f"d/f{i}.txt", f"{i}")
                written.add(f"f{i}.txt")
            except PathRejected as exc:
                assert exc.details["reason"] in ("symlink", "unstable"), exc.message
                rejected += 1
    finally:
        swapper.stop.set()
        swapper.join()
    assert list(outside.iterdir()) == []
    real = root / "d" if not (root / "d").is_symlink() else root / "x"
    assert {p.name for p in real.iterdir()} == written  # every success landed inside, nothing lost
    assert swapper.swaps and written and rejected  # the race was really run both ways


@pytest.mark.skipif(not _HAS_EXCHANGE, reason="libc without renameat2")
def test_swapping_a_directory_for_a_link_out_never_reads_outside(tmp_path: Path) -> None:
    root, outside = tmp_path / "ws", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("outside secret")
    ws = Workspace(root)
    swapper = Swapper(root, outside)
    (root / "d" / "secret.txt").write_text("inside")
    swapper.start()
    seen: dict[str, int] = {}
    deadline = time.monotonic() + 30
    try:
        while sum(seen.values()) < 850 or len(seen) < 2 and time.monotonic() < deadline:
            try:
                got = ws.read_bytes("d/secret.txt").decode()
            except PathRejected:
                got = "rejected"
            seen[got] = seen.get(got, 0) + 1
    finally:
        swapper.stop.set()
        swapper.join()
    assert set(seen) <= {"inside", "rejected"}, seen
    assert seen.get("inside") and seen.get("rejected")


def test_swapping_the_target_file_for_a_link_never_writes_through_it(tmp_path: Path) -> None:
    root, outside = tmp_path / "ws", tmp_path / "outside.txt"
    root.mkdir()
    outside.write_text("untouched")
    ws = Workspace(root)
    stop = threading.Event()

    def relink() -> None:
        while not stop.is_set():
            try:
                os.symlink(outside, root / "t.link")
                os.replace(root / "t.link", root / "t.txt")  # t.txt becomes a link out
            except OSError:
                pass

    t = threading.Thread(target=relink, daemon=True)
    t.start()
    try:
        for i in range(300):
            try:
                ws.write_atomic("t.txt", f"v{i}")
            except PathRejected:
                pass
    finally:
        stop.set()
        t.join()
    assert outside.read_text() == "untouched"
