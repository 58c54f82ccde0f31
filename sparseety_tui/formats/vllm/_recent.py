"""The window of recently received request ids that a vLLM parser maps engine-side ids
against (``RequestLines._canonical``): the last ``RECENT_IDS`` ids remembered.

An id is remembered once (received again while still in the window, it keeps its place),
and the window is the last ``size`` ids remembered. It is kept as ``id -> serial`` (the
how-many-th id remembered it was), instead of an ``OrderedDict`` dropping its oldest id
at every insert: so a run of new ids read by the native scanner is remembered in one
call, and whether an id was in the window at any line of the run is arithmetic on
serials (``formats.vllm._native``), not a replay of the run id by id.

The serials are kept for two generations of ids, the one being filled and the one before
it. When the one being filled holds ``size`` ids it becomes the one before, and the one
before is dropped: what it held is out of the window (the ids after it are at least
``size``). So each stays within about two windows, and no id is ever copied (a single
dict compacted now and then had lookups missing the cache, growth rehashing and every
compaction copying). ``Generations`` (native/id_window.c) keeps them in C when built,
``_Dicts`` in two dicts otherwise: a big vLLM log remembers every request's id, and the
dicts were a tenth of reading it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from sparseety_tui.native import PURE_PYTHON

try:
    from sparseety_tui._idwindow import Generations
except ImportError:  # built without a C compiler
    Generations = None  # type: ignore[assignment,misc]
if PURE_PYTHON:
    Generations = None  # type: ignore[assignment,misc]


class _Serials(Protocol):
    """``id -> serial`` for two generations (``Generations``, ``_Dicts``)."""

    def serial_of(self, rid: str) -> int:
        """The serial ``rid`` was last kept with (the newer generation's when both have it);
        0: none."""
        ...

    def add(self, rid: str, serial: int) -> None:
        """``rid -> serial`` in the newer generation."""
        ...

    def add_run(self, ids: list[str], start: int, floor: int) -> bool:
        """``ids[i] -> start + i`` in the newer generation, unless one of them is kept with
        a serial above ``floor`` or one comes twice; False (nothing changed) then."""
        ...

    def discard(self, ids: list[str]) -> None:
        """``ids`` out of the newer generation."""
        ...

    def next_generation(self, size: int) -> None:
        """When the newer generation holds ``size`` ids, it becomes the older one (the
        older is dropped)."""
        ...

    def latest(self) -> dict[str, int]:
        """Every id kept, with its latest serial."""
        ...


class _Dicts:
    """``_Serials`` in two dicts (without the C module)."""

    __slots__ = ("new", "old")

    def __init__(self) -> None:
        self.new: dict[str, int] = {}
        self.old: dict[str, int] = {}

    def serial_of(self, rid: str) -> int:
        serial = self.new.get(rid)
        return serial if serial is not None else self.old.get(rid, 0)

    def add(self, rid: str, serial: int) -> None:
        self.new[rid] = serial

    def add_run(self, ids: list[str], start: int, floor: int) -> bool:
        new, old = self.new, self.old
        if new.keys().isdisjoint(ids) and old.keys().isdisjoint(ids):  # the usual case
            had = len(new)
            new.update(zip(ids, range(start, start + len(ids))))
            if len(new) - had != len(ids):  # one repeats: undone
                for rid in ids:
                    new.pop(rid, None)
                return False
            return True
        # One of them is kept: in the window, or out of it but not yet dropped.
        floor = max(floor, 0)  # (0: not kept)
        if any(self.serial_of(rid) > floor for rid in ids):
            return False
        fresh = dict(zip(ids, range(start, start + len(ids))))
        if len(fresh) != len(ids):
            return False
        new.update(fresh)
        return True

    def discard(self, ids: list[str]) -> None:
        for rid in ids:
            self.new.pop(rid, None)

    def next_generation(self, size: int) -> None:
        if len(self.new) >= size:
            self.old, self.new = self.new, {}

    def latest(self) -> dict[str, int]:
        return {**self.old, **self.new}


class RecentIds:
    """The last ``size`` distinct ids remembered, with ``remembered`` counting every id
    ever remembered (evicted ones included)."""

    __slots__ = ("_ahead", "_serials", "horizon", "remembered", "size")

    def __init__(self, size: int, native: bool = True) -> None:
        self.size = size
        self.remembered = 0
        #: id -> its serial (1-based); ids at or below ``remembered - size`` are out of
        #: the window. ``native``: in C when it was built (tests compare the two).
        self._serials: _Serials = Generations() if native and Generations is not None else _Dicts()
        #: ``look_back``: the window as it was when ``horizon`` ids were remembered.
        self.horizon: int | None = None
        self._ahead: list[str] = []

    def serial_of(self, rid: str) -> int:
        """The serial ``rid`` was last remembered with; 0 when it is not held (never
        remembered, or dropped with a generation: out of the window at every later
        line). An id held is in the window iff its serial is above ``remembered - size``."""
        return self._serials.serial_of(rid)

    def __contains__(self, rid: object) -> bool:
        if not isinstance(rid, str):
            return False
        serial = self._serials.serial_of(rid)
        limit = self.remembered if self.horizon is None else self.horizon
        return serial > 0 and limit - self.size < serial <= limit

    def look_back(self, ahead: list[str]) -> None:
        """Answer as the window was before the last ``len(ahead)`` ids remembered
        (``ahead``, in order) until ``look_ahead`` or ``forget``: a run's ids are
        remembered in one step, and a line read in the middle of the run sees the window
        as it was at that line. Remembering an id meanwhile forgets ``ahead`` first (the
        run ends at that line: the ids after it are not read)."""
        self.horizon = self.remembered - len(ahead)
        self._ahead = ahead

    def look_ahead(self) -> None:
        """Answer as the window is now again (``look_back``)."""
        self.horizon, self._ahead = None, []

    def forget(self, newest: list[str]) -> None:
        """Undo remembering ``newest``, the last ids remembered (``remember_new``), which
        went to the generation being filled."""
        self.look_ahead()
        # (An id out of the window that it held before: out of it again.)
        self._serials.discard(newest)
        self.remembered -= len(newest)

    def __iter__(self) -> Iterator[str]:
        """The ids in the window, oldest first."""
        floor = self.remembered - self.size
        live = [(s, rid) for rid, s in self._serials.latest().items() if s > floor]
        live.sort()
        return (rid for _s, rid in live)

    def remember(self, rid: str) -> bool:
        """Remember ``rid``; False when it is in the window already (it keeps its place)."""
        if self.horizon is not None:
            self.forget(self._ahead)
        if rid in self:
            return False
        self._serials.next_generation(self.size)  # (first: forget finds a run in the newer)
        self.remembered += 1
        self._serials.add(rid, self.remembered)
        return True

    def remember_new(self, ids: list[str]) -> bool:
        """Remember ``ids`` in order when none of them is in the window and none repeats:
        their serials are ``remembered + 1 ...``; False (nothing changed) otherwise."""
        self._serials.next_generation(self.size)
        if not self._serials.add_run(ids, self.remembered + 1, self.remembered - self.size):
            return False
        self.remembered += len(ids)
        return True
