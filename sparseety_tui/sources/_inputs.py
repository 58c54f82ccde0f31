"""The paths a user names, expanded and classified without ever blocking on one.

Every command (``summary``, ``extract``, ``tail``) expands its PATH arguments here: a
directory stands for the log files directly inside it, and each path is classified as a
regular file, a directory, missing, unreadable or not a regular file (a FIFO, a device, a
socket), with the reason in words. Nothing here opens anything but a regular file:
``stat`` tells the kind without opening, and ``open_regular`` opens with ``O_NONBLOCK`` and
checks the opened file again, so a FIFO (or a file swapped for one meanwhile) can never
hang the tool, and ``/dev/zero`` is never read for ever.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from typing import BinaryIO, Literal

PathKind = Literal["file", "directory", "missing", "unreadable", "special"]

#: Names in a directory that are not logs: the tool's own markers and temporary files,
#: and notes beside the logs.
NOT_LOGS = (".done", ".tmp", ".md")

_SPECIAL_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


@dataclass(frozen=True)
class InputPath:
    """One path and what it is. ``reason`` says why it cannot be read ("" when it can)."""

    path: str
    kind: PathKind
    reason: str = ""
    #: Named by the user (True) or found in a directory the user named (False).
    named: bool = True


def open_regular(
    path: str | os.PathLike[str], buffering: int = -1
) -> tuple[BinaryIO, os.stat_result]:
    """Open ``path`` read-only (never create), refusing anything but a regular file.

    A FIFO would block the open until a writer comes; O_NONBLOCK avoids that hang, and the
    check below then turns it away. The flag is cleared again for the regular file.
    """
    flags = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    nonblock = getattr(os, "O_NONBLOCK", 0)
    fd = os.open(path, flags | nonblock)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, f"not a regular file ({_special_kind(st.st_mode)})", path)
        if nonblock:
            os.set_blocking(fd, True)
        f = os.fdopen(fd, "rb", buffering=buffering)
    except BaseException:
        os.close(fd)
        raise
    return f, st


def _special_kind(mode: int) -> str:
    for test, name in _SPECIAL_KINDS:
        if test(mode):
            return name
    return "not a file or directory"


def os_reason(exc: OSError) -> str:
    """An OSError in words, for a one-line message: "permission denied"."""
    text = exc.strerror or str(exc) or type(exc).__name__
    return text[:1].lower() + text[1:]


def classify(path: str, *, named: bool = True) -> InputPath:
    """What ``path`` is, following symlinks; a regular file is also read one byte, so that
    a file that cannot be read (permissions, I/O errors) is known before any work."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return InputPath(path, "missing", "no such file or directory", named)
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the name
        reason = os_reason(exc) if isinstance(exc, OSError) else str(exc)
        return InputPath(path, "unreadable", reason, named)
    if stat.S_ISDIR(st.st_mode):
        return InputPath(path, "directory", "", named)
    if not stat.S_ISREG(st.st_mode):
        return InputPath(
            path, "special", f"not a regular file ({_special_kind(st.st_mode)})", named
        )
    try:
        f, _st = open_regular(path, buffering=0)
        with f:
            f.read(1)
    except OSError as exc:
        return InputPath(path, "unreadable", os_reason(exc), named)
    return InputPath(path, "file", "", named)


def log_names(directory: str) -> list[str]:
    """Names in ``directory`` that may be logs: visible, not one of ``NOT_LOGS``, sorted."""
    return sorted(
        name
        for name in os.listdir(directory)
        if not name.startswith(".") and not name.endswith(NOT_LOGS)
    )


def log_files_in(directory: str) -> list[str]:
    """Paths of the entries of ``directory`` that may be logs (``log_names``), directories
    left out; special files stay, so that the caller reports them (``tail DIR`` uses this
    to pick up files that appear later)."""
    paths = (os.path.join(directory, name) for name in log_names(directory))
    return [path for path in paths if not os.path.isdir(path)]


def expand(paths: Sequence[str]) -> list[InputPath]:
    """Each named path classified, a directory replaced by the entries directly inside it.

    Entries that are themselves directories are left out (directories are not searched
    recursively); entries of every other kind are kept with their reason, so that the
    caller reports what it cannot read instead of passing over it. A named directory that
    cannot be listed is kept as ``unreadable``.
    """
    out: list[InputPath] = []
    for path in paths:
        item = classify(path)
        if item.kind != "directory":
            out.append(item)
            continue
        try:
            names = log_names(path)
        except OSError as exc:
            out.append(InputPath(path, "unreadable", os_reason(exc), named=True))
            continue
        for name in names:
            entry = classify(os.path.join(path, name), named=False)
            if entry.kind != "directory":
                out.append(entry)
    return out
