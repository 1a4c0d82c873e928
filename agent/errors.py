"""The one exception tree whose classes map 1:1 to `payload.code` on the wire.

AgentError
├── ProtocolError
│   ├── MessageTooLarge           message_too_large
│   ├── InvalidCommand            invalid_command
│   ├── UnsupportedAction         unsupported_action
│   └── VersionMismatch           version_mismatch
├── WorkspaceError
│   ├── PathRejected              path_rejected
│   ├── ArtifactWriteFailed       artifact_write_failed
│   ├── FileUnreadable            file_unreadable
│   └── SecretInArtifact          secret_in_artifact
├── ModelError                    model_error            (retriable)
│   ├── ModelNotConfigured        model_not_configured
│   ├── ModelTimeout              model_timeout          (retriable)
│   ├── ModelNotRunning           model_not_running
│   ├── NoModelAvailable          no_model_available     (retriable)
│   ├── ReplayMiss                replay_miss
│   └── InvalidModelResponse      invalid_model_response
├── RoleError
│   ├── ForbiddenSpecEdit         forbidden_spec_edit
│   ├── PlanFileMissing           plan_file_missing
│   └── LoopLimit
│       ├── ReviewLoopLimit       review_loop_limit
│       └── SpecLoopLimit         spec_loop_limit
├── PlanError
│   ├── PlanInvalid               plan_invalid
│   ├── PlanRuntimeError          plan_runtime_error
│   ├── PlanInstructionLimit      plan_instruction_limit
│   ├── PlanTimeout               plan_timeout
│   ├── PlanMemoryExceeded        plan_memory_exceeded
│   ├── PlanQuotaExceeded         plan_quota_exceeded
│   └── SandboxViolation          sandbox_violation
├── IoFailure                     io_error               (retriable)
│   ├── NoSpace                   no_space               (retriable)
│   ├── PermissionDenied          permission_denied
│   ├── ResourceExhausted         resource_exhausted     (retriable)
│   └── NotFound                  not_found
├── SkillError
│   ├── SkillMetadataInvalid      skill_metadata_invalid
│   ├── SkillNotFound             skill_not_found
│   └── SkillDependencyError      skill_dependency_error
├── InvalidAnswer                 invalid_model_response (fed back to the model, never sent as is)
├── SandboxUnavailable            sandbox_unavailable
├── SupervisedError
│   ├── HomeConfigInvalid         home_config_invalid
│   ├── TaskGraphInvalid          task_graph_invalid
│   └── TaskStateCorrupted        task_state_corrupted
├── DeadlineExceeded              deadline_exceeded      (retriable)
├── ShuttingDown                  shutting_down          (retriable)
└── InternalError                 internal_error         (retriable)

Every message (and every string detail) is bounded to `MAX_MESSAGE_BYTES` of UTF-8 when the
error is made, so no path — stdout, stderr, audit, plan records, `luallm-agent plan` — can carry
a 30 MB Lua error whole. `error_from_os` maps an `OSError` to a precise code by errno.
"""

from __future__ import annotations

import errno as _errno
import hashlib
from typing import Any

__all__ = [
    "AgentError", "ProtocolError", "MessageTooLarge", "InvalidCommand", "UnsupportedAction",
    "VersionMismatch", "WorkspaceError", "PathRejected", "ArtifactWriteFailed", "FileUnreadable",
    "SecretInArtifact", "ModelError",
    "ModelNotConfigured", "ModelTimeout", "ModelNotRunning", "NoModelAvailable", "ReplayMiss",
    "InvalidModelResponse", "InvalidAnswer", "RoleError", "ForbiddenSpecEdit", "PlanFileMissing", "LoopLimit",
    "ReviewLoopLimit", "SpecLoopLimit",
    "PlanError", "PlanInvalid", "PlanRuntimeError", "PlanInstructionLimit", "PlanTimeout",
    "PlanMemoryExceeded", "PlanQuotaExceeded", "SandboxViolation", "SandboxUnavailable", "SkillError",
    "SkillMetadataInvalid", "SkillNotFound", "SkillDependencyError", "DeadlineExceeded",
    "SupervisedError", "HomeConfigInvalid", "TaskGraphInvalid", "TaskStateCorrupted",
    "ShuttingDown", "InternalError", "ALL_CODES",
    "IoFailure", "NoSpace", "PermissionDenied", "ResourceExhausted", "NotFound",
    "MAX_MESSAGE_BYTES", "bound_text", "error_from_os",
]

# A few KB: enough for a precise message with a file name and a line of Lua, never a flood.
MAX_MESSAGE_BYTES = 4096


def bound_text(text: str, limit: int = MAX_MESSAGE_BYTES) -> str:
    """`text` cut to at most `limit` UTF-8 bytes (plus a marker naming the full size and digest)."""
    if len(text) * 4 <= limit:  # cannot be over: no encoding needed
        return text
    raw = text.encode("utf-8", "surrogatepass")
    if len(raw) <= limit:
        return text
    digest = hashlib.sha256(raw).hexdigest()[:12]
    kept = raw[:limit].decode("utf-8", "ignore")
    return f"{kept}…[truncated: {len(raw)} bytes, sha256:{digest}]"



class AgentError(Exception):
    """Base of every error that reaches the wire; `details` are merged into the payload."""

    code = "agent_error"
    retriable = False

    def __init__(self, message: str, **details: Any) -> None:
        message = bound_text(str(message))
        super().__init__(message)
        self.message = message
        self.details = {k: bound_text(v) if isinstance(v, str) else v for k, v in details.items()}

    def payload(self) -> dict[str, Any]:
        """The `error` event payload: code, message, retriable, then any details."""
        out: dict[str, Any] = {"code": self.code, "message": self.message, "retriable": self.retriable}
        out.update(self.details)
        return out


class ProtocolError(AgentError):
    """A message from the orchestrator could not be accepted."""
    code = "protocol_error"


class MessageTooLarge(ProtocolError):
    """An input line exceeded the reader's byte cap; it was discarded up to its newline."""
    code = "message_too_large"


class InvalidCommand(ProtocolError):
    """Not JSON, not an object, or not a schema-valid command."""
    code = "invalid_command"


class UnsupportedAction(ProtocolError):
    """The action is valid but not served by this process's role."""
    code = "unsupported_action"


class VersionMismatch(ProtocolError):
    """The command pins a snapshot other than the one this process first saw."""
    code = "version_mismatch"


class WorkspaceError(AgentError):
    """A file operation inside the workspace failed."""
    code = "workspace_error"


class PathRejected(WorkspaceError):
    """A path outside the workspace, through a symlink, too long, or protected by the path policy."""
    code = "path_rejected"


class ArtifactWriteFailed(WorkspaceError):
    """A file could not be written (no space, quota, read-only, permission) or was not produced."""
    code = "artifact_write_failed"


class FileUnreadable(WorkspaceError):
    """A workspace file exists but could not be read (permission, I/O error)."""
    code = "file_unreadable"


class SecretInArtifact(WorkspaceError):
    """A write's content contains the value of a known secret; refused, never silently rewritten."""
    code = "secret_in_artifact"


class ModelError(AgentError):
    """The model endpoint failed (HTTP error, connection refused, bad reply envelope)."""
    code = "model_error"
    retriable = True


class ModelNotConfigured(ModelError):
    """No model or endpoint is configured; commands that need one fail with this."""
    code = "model_not_configured"
    retriable = False


class ModelTimeout(ModelError):
    """The model did not answer within the time left before the command deadline."""
    code = "model_timeout"


class ModelNotRunning(ModelError):
    """A luallm-managed model is stopped and auto_start is off; details name the start command."""
    code = "model_not_running"
    retriable = False


class NoModelAvailable(ModelError):
    """Every routing candidate failed; details name each model tried."""
    code = "no_model_available"


class ReplayMiss(ModelError):
    """A recorded-responses model has no reply for this request; details name the nearest."""
    code = "replay_miss"
    retriable = False


class InvalidModelResponse(ModelError):
    """The model's answer stayed invalid after the bounded repair attempts."""
    code = "invalid_model_response"
    retriable = False


class InvalidAnswer(AgentError):
    """An answer that failed parsing or validation, raised while checking it. It never reaches the wire
    as it is: the answer loop sends the message back to the model, and only when the attempts run
    out does the command fail, as `invalid_model_response`."""
    code = "invalid_model_response"


class RoleError(AgentError):
    """A role could not turn a valid answer into its outcome."""
    code = "role_error"


class ForbiddenSpecEdit(RoleError):
    """The spec maintainer tried to edit a section other than the four it may touch."""
    code = "forbidden_spec_edit"


class PlanFileMissing(RoleError):
    """Orchestration chose a plan file that does not exist in the workspace."""
    code = "plan_file_missing"


class LoopLimit(RoleError):
    """lorch's review or spec loop ran more rounds on one task than the agent allows."""
    code = "loop_limit"


class ReviewLoopLimit(LoopLimit):
    """The reviewer still requested changes after `--max-review-rounds` rounds on one task."""
    code = "review_loop_limit"


class SpecLoopLimit(LoopLimit):
    """The spec maintainer still requested changes after `--max-spec-rounds` rounds on one task."""
    code = "spec_loop_limit"


class PlanError(AgentError):
    """A Lua plan failed; `line` names the plan line where known."""
    code = "plan_error"


class PlanInvalid(PlanError):
    """Syntax error or lint failure (unknown global or tool) before running."""
    code = "plan_invalid"


class PlanRuntimeError(PlanError):
    """The plan raised a Lua error or returned something that is not an answer."""
    code = "plan_runtime_error"


class PlanInstructionLimit(PlanError):
    """The plan used up its instruction budget."""
    code = "plan_instruction_limit"


class PlanTimeout(PlanError):
    """The plan's worker was killed at the wall-time limit."""
    code = "plan_timeout"


class PlanMemoryExceeded(PlanError):
    """The plan allocated more Lua memory than allowed."""
    code = "plan_memory_exceeded"


class PlanQuotaExceeded(PlanError):
    """Tool calls, bytes read/written, files written or nested model calls ran out."""
    code = "plan_quota_exceeded"


class SandboxViolation(PlanError):
    """The plan touched a forbidden operation; the message names it exactly."""
    code = "sandbox_violation"


class IoFailure(AgentError):
    """An operating-system call failed outside a more precise case; `errno` names the cause."""
    code = "io_error"
    retriable = True


class NoSpace(IoFailure):
    """The disk or quota is full (ENOSPC, EDQUOT)."""
    code = "no_space"


class PermissionDenied(IoFailure):
    """The OS refused access (EACCES, EPERM, EROFS)."""
    code = "permission_denied"
    retriable = False


class ResourceExhausted(IoFailure):
    """Too many open files or processes, or no memory (EMFILE, ENFILE, ENOMEM, EAGAIN, ENOBUFS)."""
    code = "resource_exhausted"


class NotFound(IoFailure):
    """A file or directory the command needed is gone (ENOENT)."""
    code = "not_found"
    retriable = False


class SkillError(AgentError):
    """A Lua skill could not be loaded, tested or promoted."""
    code = "skill_error"


class SkillMetadataInvalid(SkillError):
    """A skill's `---@skill { ... }` header is missing or malformed; `line` says where."""
    code = "skill_metadata_invalid"


class SkillNotFound(SkillError):
    """No skill of that name in `skills/allowed/` (or `skills/agent/` where drafts are meant)."""
    code = "skill_not_found"


class SkillDependencyError(SkillError):
    """A dependency is undeclared, missing from `allowed/`, a draft, or part of a cycle."""
    code = "skill_dependency_error"


class SandboxUnavailable(AgentError):
    """No OS boundary exists for commands and the user did not pass --unsandboxed-commands."""
    code = "sandbox_unavailable"


class SupervisedError(AgentError):
    """Supervised standalone mode (`luallm-agent run`) cannot go on."""
    code = "supervised_error"


class HomeConfigInvalid(SupervisedError):
    """The agent home's `config.json` is missing, not JSON, or does not match its schema."""
    code = "home_config_invalid"


class TaskGraphInvalid(SupervisedError):
    """The model's task graph broke a rule (ids, deps, cycles, skills, paths); `problems` lists each."""
    code = "task_graph_invalid"


class TaskStateCorrupted(SupervisedError):
    """`state/current_task.json` cannot be read as a task; the message names the fix."""
    code = "task_state_corrupted"


class DeadlineExceeded(AgentError):
    """The command's deadline passed before it could finish."""
    code = "deadline_exceeded"
    retriable = True


class ShuttingDown(AgentError):
    """The agent is stopping (stdin closed, SIGTERM, or the parent died)."""
    code = "shutting_down"
    retriable = True


class InternalError(AgentError):
    """A bug in the agent; the traceback goes to stderr and the audit log, never stdout."""
    code = "internal_error"
    retriable = True


def _walk(cls: type[AgentError]) -> list[type[AgentError]]:
    out = [cls]
    for sub in cls.__subclasses__():
        out.extend(_walk(sub))
    return out


ALL_CODES: dict[str, type[AgentError]] = {c.code: c for c in _walk(AgentError)}


# errno → error class; anything not listed is `io_error` with the errno name in the details.
_OS_ERRORS: dict[int, type[AgentError]] = {
    _errno.ENOSPC: NoSpace, _errno.EDQUOT: NoSpace,
    _errno.EACCES: PermissionDenied, _errno.EPERM: PermissionDenied, _errno.EROFS: PermissionDenied,
    _errno.EMFILE: ResourceExhausted, _errno.ENFILE: ResourceExhausted, _errno.ENOMEM: ResourceExhausted,
    _errno.EAGAIN: ResourceExhausted, _errno.ENOBUFS: ResourceExhausted,
    _errno.ENOENT: NotFound,
    # A path the OS cannot use as asked is a rejected path, not a bug.
    _errno.ENAMETOOLONG: PathRejected, _errno.ELOOP: PathRejected, _errno.ENOTDIR: PathRejected,
    _errno.EISDIR: PathRejected,
}


def error_from_os(exc: OSError, doing: str = "an operating-system call failed") -> AgentError:
    """The precise `AgentError` for an `OSError`: code by errno, details `errno` and `path`."""
    number = exc.errno if isinstance(exc.errno, int) else 0
    cls = _OS_ERRORS.get(number, IoFailure)
    name = _errno.errorcode.get(number, "unknown errno")
    details: dict[str, Any] = {"errno": name}
    if isinstance(exc.filename, str | bytes):
        details["path"] = exc.filename if isinstance(exc.filename, str) else exc.filename.decode("utf-8", "replace")
    reason = exc.strerror or str(exc) or type(exc).__name__
    where = f": {details['path']}" if "path" in details else ""
    return cls(f"{doing}: {reason} ({name}){where}", **details)
