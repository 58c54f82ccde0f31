"""The error log: every error the logs showed, with where (file, line) and what (its class).

An error is a traceback (all its lines, one error), an ERROR/CRITICAL line, an HTTP 5xx
access line, or an engine warning that matters (out of memory, a retraction, a KV
transfer failure, a dead engine). The Merger (``core.extraction``) turns each error event into
an ``ErrorRecord``; ``ErrorLog`` keeps exact counts by class and by minute, and the
records themselves up to ``ERROR_RECORDS`` (the newest; how many were dropped is said).

A record holds no text beyond the first ``MESSAGE_CHARS`` of its message: the errors view
reads the lines again from the file (``file``, ``line``, ``lines``), as the request detail
does, so memory does not grow with traceback text.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

#: Records kept (the newest); all errors are counted whatever this is.
ERROR_RECORDS = 100_000
#: Characters of a message kept in a record (the view reads the whole text from the file).
MESSAGE_CHARS = 500

# Error classes (``ErrorRecord.kind``). A producer gives the base class; ``classify``
# refines a traceback or an error line by what its text says.
TRACEBACK = "traceback"
ERROR = "error"
HTTP_5XX = "http_5xx"
OOM = "oom"
RETRACTION = "retraction"
KV_TRANSFER = "kv_transfer"
ENGINE_DEAD = "engine_dead"
#: Every class, in the order they are listed (summary, totals strip, errors view).
KINDS = (TRACEBACK, ERROR, HTTP_5XX, OOM, RETRACTION, KV_TRANSFER, ENGINE_DEAD)
#: Short names for narrow places (the totals strip).
SHORT = {
    TRACEBACK: "traceback",
    ERROR: "error",
    HTTP_5XX: "5xx",
    OOM: "oom",
    RETRACTION: "retract",
    KV_TRANSFER: "kv xfer",
    ENGINE_DEAD: "dead",
}

#: Text that makes an error an out-of-memory one (torch's exception class, CUDA's and
#: PyTorch's messages: ``torch.OutOfMemoryError: CUDA out of memory. Tried to allocate …``).
_OOM_MARKS = ("OutOfMemoryError", "out of memory", "CUDA error: out of memory")
_DEAD_MARKS = ("EngineDeadError",)


def classify(kind: str | None, message: str, exception: str) -> str:
    """The class of an error: OOM and a dead engine are told by their text whatever the
    producer said (an OOM traceback is an OOM); otherwise the producer's class, and a
    producer that gave none made a ``traceback`` when it named an exception, else an
    ``error``."""
    base = kind or (TRACEBACK if exception else ERROR)
    if base in (TRACEBACK, ERROR):
        text = f"{exception} {message}"
        if any(mark in text for mark in _OOM_MARKS):
            return OOM
        if any(mark in text for mark in _DEAD_MARKS):
            return ENGINE_DEAD
    return base


@dataclass(frozen=True, slots=True)
class ErrorRecord:
    """One error: when, which class, where its first line is (``file`` index, 1-based
    ``line``, ``lines`` long, up to line ``last``: further when another process's lines
    are interleaved with it), its message and exception, the request and HTTP status it
    names (None: not named)."""

    ts: float | None
    kind: str
    file: int
    line: int
    lines: int
    last: int
    message: str
    exception: str
    request_id: str | None
    status: int | None

    def moved(self, file: int, shift: int) -> ErrorRecord:
        """This record of a byte range read apart, in the whole file: file index ``file``,
        line numbers ``shift`` on."""
        return ErrorRecord(
            self.ts,
            self.kind,
            file,
            self.line + shift,
            self.lines,
            self.last + shift,
            self.message,
            self.exception,
            self.request_id,
            self.status,
        )


def minute_of(ts: float) -> int:
    """The minute (unix seconds at its start) a time falls in."""
    return int(ts // 60) * 60


@dataclass
class ErrorLog:
    """Exact counts by class and by minute, and the newest ``cap`` records (writer side)."""

    cap: int = ERROR_RECORDS
    records: deque[ErrorRecord] = field(init=False)
    by_kind: dict[str, int] = field(default_factory=dict)
    #: minute (unix seconds) -> class -> count; errors without a time are not in it.
    per_minute: dict[int, dict[str, int]] = field(default_factory=dict)
    total: int = 0
    revision: int = 0
    #: Minutes changed since the last ``freeze``: only these are copied again (a live
    #: log of days has thousands of minutes, and is frozen many times a second).
    _dirty: set[int] = field(default_factory=set, repr=False)

    def __post_init__(self) -> None:
        self.records = deque(maxlen=self.cap)

    @property
    def dropped(self) -> int:
        """Records no longer kept (counted all the same)."""
        return self.total - len(self.records)

    def add(self, record: ErrorRecord) -> None:
        self.total += 1
        self.revision += 1
        self.by_kind[record.kind] = self.by_kind.get(record.kind, 0) + 1
        if record.ts is not None:
            key = minute_of(record.ts)
            minute = self.per_minute.setdefault(key, {})
            minute[record.kind] = minute.get(record.kind, 0) + 1
            self._dirty.add(key)
        self.records.append(record)

    def extend(self, other: ErrorLog | FrozenErrorLog, file: int, shift: int) -> None:
        """Add the errors of a later byte range of file ``file`` (``shift`` lines before
        it): counts add exactly, records move to the whole file's numbering."""
        self.total += other.total
        self.revision += 1
        for kind, n in other.by_kind.items():
            self.by_kind[kind] = self.by_kind.get(kind, 0) + n
        for minute, counts in other.per_minute.items():
            self._dirty.add(minute)
            mine = self.per_minute.setdefault(minute, {})
            for kind, n in counts.items():
                mine[kind] = mine.get(kind, 0) + n
        for record in other.records:
            self.records.append(record.moved(file, shift))

    def freeze(self, previous: FrozenErrorLog | None = None) -> FrozenErrorLog:
        """An immutable copy; ``previous``, this log's last one, is returned when nothing
        changed, and its minutes that did not change are shared."""
        if previous is not None and previous.revision == self.revision:
            return previous
        minutes: dict[int, Mapping[str, int]]
        if previous is None:
            minutes = {m: MappingProxyType(dict(c)) for m, c in self.per_minute.items()}
        else:
            minutes = dict(previous.per_minute)
            for m in self._dirty:
                minutes[m] = MappingProxyType(dict(self.per_minute[m]))
        self._dirty.clear()
        return FrozenErrorLog(
            records=tuple(self.records),
            by_kind=MappingProxyType(dict(self.by_kind)),
            per_minute=MappingProxyType(minutes),
            total=self.total,
            revision=self.revision,
        )


@dataclass(frozen=True)
class FrozenErrorLog:
    """The error log at one moment, read-only (``FrozenExtractor.error_log``)."""

    records: Sequence[ErrorRecord] = ()
    by_kind: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    per_minute: Mapping[int, Mapping[str, int]] = field(
        default_factory=lambda: MappingProxyType({})
    )
    total: int = 0
    revision: int = 0

    @property
    def dropped(self) -> int:
        return self.total - len(self.records)


def errors_by_kind(by_kind: Mapping[str, int]) -> dict[str, int]:
    """Counts by class in ``KINDS`` order (then any other class), zeros left out."""
    ordered = {kind: by_kind[kind] for kind in KINDS if by_kind.get(kind)}
    for kind, n in sorted(by_kind.items()):
        if n and kind not in ordered:
            ordered[kind] = n
    return ordered
