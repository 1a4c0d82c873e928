"""The error tree: OSErrors map to precise codes by errno; messages are bounded where they are made."""

from __future__ import annotations

import errno

import pytest

from agent.errors import (
    MAX_MESSAGE_BYTES,
    AgentError,
    InternalError,
    IoFailure,
    NoSpace,
    NotFound,
    PathRejected,
    PermissionDenied,
    ResourceExhausted,
    bound_text,
    error_from_os,
)


@pytest.mark.parametrize("number, cls, code", [
    (errno.ENOSPC, NoSpace, "no_space"), (errno.EDQUOT, NoSpace, "no_space"),
    (errno.EACCES, PermissionDenied, "permission_denied"), (errno.EROFS, PermissionDenied, "permission_denied"),
    (errno.EMFILE, ResourceExhausted, "resource_exhausted"), (errno.ENOMEM, ResourceExhausted, "resource_exhausted"),
    (errno.ENOENT, NotFound, "not_found"),
    (errno.ENAMETOOLONG, PathRejected, "path_rejected"), (errno.ELOOP, PathRejected, "path_rejected"),
    (errno.EIO, IoFailure, "io_error"), (errno.EXDEV, IoFailure, "io_error"),
])
def test_os_errors_map_to_precise_codes_never_internal_error(number: int, cls: type, code: str) -> None:
    err = error_from_os(OSError(number, "boom", "/ws/some/file"), "writing the receipt")
    assert type(err) is cls and err.code == code and not isinstance(err, InternalError)
    assert err.details["errno"] == errno.errorcode[number] and err.details["path"] == "/ws/some/file"
    assert err.message.startswith("writing the receipt: boom (") and err.message.endswith("/ws/some/file")


def test_os_error_without_errno_is_io_error() -> None:
    err = error_from_os(OSError("odd"))
    assert err.code == "io_error" and "odd" in err.message and err.retriable


def test_messages_and_string_details_are_bounded_at_construction() -> None:
    err = AgentError("é" * 3_000_000, path="p" * 1_000_000, count=3)
    assert len(err.message.encode()) < MAX_MESSAGE_BYTES + 80 and "6000000 bytes" in err.message
    assert str(err) == err.message and len(err.details["path"]) < MAX_MESSAGE_BYTES + 80
    assert err.details["count"] == 3
    assert bound_text("short") == "short"
