"""Linux inotify through libc (ctypes): a blocking wait for changes in a few directories.

Why not ``watchfiles`` here: its Rust loop wakes every ``step`` ms even when nothing
happens (200 wake-ups a second at ``step=5``, each taking the GIL to check for signals and
the stop event: ~0.5 % of a core on an idle log), and its debounce adds its own delay to
every change. A thread blocked in ``poll()`` on the inotify descriptor wakes only when the
kernel has an event for it, within microseconds of the write; an idle app then has no
wake-ups at all. ``sources._watcher`` uses this where it works and ``watchfiles``
elsewhere.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import select
import struct
import sys
import threading
from collections.abc import Callable, Iterable

__all__ = ["InotifyError", "available", "watch_directories"]

IN_MODIFY = 0x00000002
IN_ATTRIB = 0x00000004
IN_CLOSE_WRITE = 0x00000008
IN_MOVED_FROM = 0x00000040
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE = 0x00000200
IN_DELETE_SELF = 0x00000400
IN_MOVE_SELF = 0x00000800
IN_Q_OVERFLOW = 0x00004000
IN_ONLYDIR = 0x01000000
IN_NONBLOCK = 0o4000
IN_CLOEXEC = 0o2000000

#: What changes a followed file or the set of files in a directory: growth, truncation
#: (IN_MODIFY), renames and deletions (rotation), new files.
MASK = (
    IN_MODIFY
    | IN_ATTRIB
    | IN_CLOSE_WRITE
    | IN_MOVED_FROM
    | IN_MOVED_TO
    | IN_CREATE
    | IN_DELETE
    | IN_DELETE_SELF
    | IN_MOVE_SELF
)
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len; then len bytes of name
_READ_BYTES = 64 * 1024


class InotifyError(OSError):
    """inotify cannot be used here (not Linux, no libc symbol, no watch possible)."""


@functools.cache
def _libc() -> ctypes.CDLL:
    if not sys.platform.startswith("linux"):
        raise InotifyError(errno.ENOSYS, "inotify is Linux only")
    # The C library the interpreter is linked with (no ``find_library``: it runs ldconfig,
    # a subprocess, tens of ms at every start).
    libc = ctypes.CDLL(None, use_errno=True)
    for name in ("inotify_init1", "inotify_add_watch"):
        if not hasattr(libc, name):
            raise InotifyError(errno.ENOSYS, f"libc has no {name}")
    libc.inotify_init1.argtypes = [ctypes.c_int]
    libc.inotify_init1.restype = ctypes.c_int
    libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
    libc.inotify_add_watch.restype = ctypes.c_int
    return libc


def available() -> bool:
    try:
        _libc()
    except OSError:
        return False
    return True


def watch_directories(
    directories: Iterable[str],
    on_change: Callable[[str], bool],
    stop: threading.Event,
    wake_fd: int,
    on_ready: Callable[[], None],
    coalesce_s: float,
    taken: threading.Event,
) -> None:
    """Block until ``stop`` is set (and ``wake_fd`` readable), calling ``on_change(path)``
    for each file changed in ``directories`` (the path "" after a queue overflow: anything
    may have changed). ``on_change`` returns whether the change mattered; after one that
    did, the thread sleeps ``coalesce_s`` and then until ``taken`` is set (the one told
    has taken the news; ``on_change`` clears it) before reading again: a file written every
    millisecond costs a wake-up per look its reader takes, not one per write (the kernel
    merges the events meanwhile). Whoever sets ``stop`` sets ``taken`` too. ``on_ready``
    is called once the watches are set up.

    Raises ``InotifyError`` if no directory can be watched.
    """
    libc = _libc()
    fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
    if fd < 0:
        raise InotifyError(ctypes.get_errno(), "inotify_init1 failed")
    try:
        names: dict[int, str] = {}
        for directory in directories:
            wd = libc.inotify_add_watch(fd, os.fsencode(directory), MASK | IN_ONLYDIR)
            if wd >= 0:
                names[wd] = directory
        if not names:
            raise InotifyError(ctypes.get_errno(), "no directory could be watched")
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        poller.register(wake_fd, select.POLLIN)
        on_ready()
        while not stop.is_set():
            poller.poll()  # no timeout: an idle log costs no wake-ups
            if stop.is_set():
                return
            try:
                data = os.read(fd, _READ_BYTES)
            except BlockingIOError:
                continue  # the wake pipe (a stop), or a spurious wake-up
            if _dispatch(data, names, on_change):
                stop.wait(coalesce_s)
                taken.wait()
    finally:
        os.close(fd)


def _dispatch(data: bytes, names: dict[int, str], on_change: Callable[[str], bool]) -> bool:
    """Call ``on_change`` for each event of ``data``; whether any mattered."""
    mattered = False
    pos = 0
    while pos + _EVENT.size <= len(data):
        wd, mask, _cookie, length = _EVENT.unpack_from(data, pos)
        pos += _EVENT.size
        name = data[pos : pos + length].split(b"\0", 1)[0]
        pos += length
        if mask & IN_Q_OVERFLOW:
            mattered = on_change("") or mattered
            continue
        directory = names.get(wd)
        if directory is None:
            continue
        path = os.path.join(directory, os.fsdecode(name)) if name else directory
        mattered = on_change(path) or mattered
    return mattered
