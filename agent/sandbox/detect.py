"""Which boundary is in force: probe the kernel once per process, choose the best, say so in one line.

Order of preference: Landlock + namespaces > Landlock + seccomp > bubblewrap > none. The probe runs
the launcher (`launch.py --probe`) in a child so that trying namespaces never touches the agent.
`LUALLM_AGENT_SANDBOX` forces a mode (`auto` by default); `--unsandboxed-commands` (or
`LUALLM_AGENT_UNSANDBOXED_COMMANDS=1`) lets commands run without a boundary where none exists.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path

from agent.sandbox.policy import BWRAP, LANDLOCK, LANDLOCK_NS, MODES, NONE

__all__ = ["Capabilities", "Boundary", "capabilities", "current", "configure", "LAUNCHER"]

LAUNCHER = str(Path(__file__).resolve().parent / "launch.py")
_TRUE = {"1", "true", "yes", "on"}


@dataclass(frozen=True)
class Capabilities:
    """What the kernel (and the machine) offers, each tried for real."""

    landlock_abi: int = 0
    userns: bool = False
    seccomp: bool = False
    bwrap: str | None = None          # path of a working bwrap
    errors: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Boundary:
    """The boundary chosen for this process."""

    mode: str
    caps: Capabilities
    requested: str = "auto"
    unsandboxed_ok: bool = False
    reason: str = ""

    @property
    def confined(self) -> bool:
        return self.mode != NONE

    @property
    def commands_allowed(self) -> bool:
        """Commands run inside the boundary, or the user accepted running them without one."""
        return self.confined or self.unsandboxed_ok

    def worker_summary(self) -> str:
        if self.requested == NONE:
            return "plan worker: no OS boundary (LUALLM_AGENT_SANDBOX=none)"
        parts = ["Landlock (read-only outside the workspace, no exec)" if self.caps.landlock_abi
                 else "no file-system boundary (needs Landlock)"]
        if self.caps.seccomp:
            parts.append("no sockets (seccomp)")
        return "plan worker: " + ", ".join(parts)

    def _how(self) -> tuple[str, str]:
        c = self.caps
        if self.mode == LANDLOCK_NS:
            return (f"Landlock ABI {c.landlock_abi} + user, mount, network and PID namespaces",
                    "no network (own empty network namespace)")
        if self.mode == LANDLOCK:
            return f"Landlock ABI {c.landlock_abi} + seccomp, no user namespaces", "no sockets (seccomp)"
        return f"bubblewrap {c.bwrap}", "no network (own network namespace)"

    def describe(self) -> str:
        """The one-line report printed at start and by `luallm-agent sandbox`."""
        if self.confined:
            how, net = self._how()
            return (f"sandbox: {self.mode} ({how}): commands write only the workspace and a private /tmp "
                    f"and $HOME, cannot read $HOME or secrets, {net}, die with the agent; "
                    f"{self.worker_summary()}")
        why = f" ({self.reason})" if self.reason else ""
        if self.unsandboxed_ok:
            return (f"sandbox: none{why}: commands run UNSANDBOXED (--unsandboxed-commands); they still die "
                    f"with the agent; {self.worker_summary()}")
        return (f"sandbox: none{why}: tools.run, tools.test and the test command are refused "
                f"(sandbox_unavailable); pass --unsandboxed-commands to run them without a boundary; "
                f"{self.worker_summary()}")

    def to_dict(self) -> dict[str, object]:
        return {"mode": self.mode, "confined": self.confined, "commands_allowed": self.commands_allowed,
                "requested": self.requested, "unsandboxed_commands": self.unsandboxed_ok, "reason": self.reason,
                "capabilities": asdict(self.caps), "summary": self.describe()}


_lock = threading.Lock()
_caps: Capabilities | None = None
_boundary: Boundary | None = None
_overrides: dict[str, object] = {}


def configure(*, unsandboxed_commands: bool | None = None, mode: str | None = None) -> None:
    """Set what the command line says (flags win over the environment); the choice is made again."""
    global _boundary
    with _lock:
        if unsandboxed_commands is not None:
            _overrides["unsandboxed"] = unsandboxed_commands
        if mode is not None:
            _overrides["mode"] = mode
        _boundary = None


def _probe_bwrap(errors: dict[str, str]) -> str | None:
    path = shutil.which("bwrap")
    if not path:
        errors["bwrap"] = "bubblewrap is not installed"
        return None
    try:
        proc = subprocess.run([path, "--die-with-parent", "--unshare-all", "--ro-bind", "/", "/", "true"],
                              capture_output=True, timeout=10, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        errors["bwrap"] = f"bwrap failed: {exc}"
        return None
    if proc.returncode != 0:
        errors["bwrap"] = f"bwrap failed: {proc.stderr.decode(errors='replace').strip()[:300]}"
        return None
    return path


def capabilities(*, with_bwrap: bool = False) -> Capabilities:
    """Probe once per process (bubblewrap only when asked or when Landlock is missing)."""
    global _caps
    with _lock:
        if _caps is not None and (not with_bwrap or _caps.bwrap or "bwrap" in _caps.errors):
            return _caps
        errors: dict[str, str] = {}
        found: dict[str, object] = {}
        try:
            proc = subprocess.run([sys.executable, "-I", "-S", LAUNCHER, "--probe"], capture_output=True,
                                  timeout=20, stdin=subprocess.DEVNULL)
            found = json.loads(proc.stdout.decode() or "{}")
        except (OSError, ValueError, subprocess.TimeoutExpired) as exc:
            errors["probe"] = f"probe failed: {exc}"
        for key in ("landlock", "userns", "seccomp"):
            if found.get(f"{key}_error"):
                errors[key] = str(found[f"{key}_error"])
        abi = int(found.get("landlock_abi") or 0)  # type: ignore[call-overload]
        bwrap = _probe_bwrap(errors) if with_bwrap or abi < 1 else None
        _caps = Capabilities(landlock_abi=abi, userns=bool(found.get("userns")),
                             seccomp=bool(found.get("seccomp")), bwrap=bwrap, errors=errors)
        return _caps


def _choose(caps: Capabilities, requested: str) -> tuple[str, str]:
    available = {LANDLOCK_NS: caps.landlock_abi >= 1 and caps.userns,
                 LANDLOCK: caps.landlock_abi >= 1 and caps.seccomp,
                 BWRAP: caps.bwrap is not None, NONE: True}
    if requested != "auto":
        if available.get(requested):
            return requested, f"{requested} requested by LUALLM_AGENT_SANDBOX"
        return NONE, f"{requested} requested but not available: {_missing(caps)}"
    for mode in (LANDLOCK_NS, LANDLOCK, BWRAP):
        if available[mode]:
            return mode, ""
    return NONE, _missing(caps)


def _missing(caps: Capabilities) -> str:
    return "; ".join(f"{k}: {v}" for k, v in sorted(caps.errors.items())) or "nothing available"


def current() -> Boundary:
    """The boundary in force for this process (probing the kernel on first use)."""
    global _boundary
    b = _boundary
    if b is not None:
        return b
    requested = str(_overrides.get("mode") or os.environ.get("LUALLM_AGENT_SANDBOX") or "auto").strip().lower()
    if requested not in (*MODES, "auto"):
        requested = "auto"
    caps = capabilities(with_bwrap=requested == BWRAP)
    mode, reason = _choose(caps, requested)
    unsandboxed = _overrides.get("unsandboxed")
    if unsandboxed is None:
        unsandboxed = os.environ.get("LUALLM_AGENT_UNSANDBOXED_COMMANDS", "").strip().lower() in _TRUE
    b = Boundary(mode=mode, caps=caps, requested=requested, unsandboxed_ok=bool(unsandboxed), reason=reason)
    with _lock:
        _boundary = b
    return b
