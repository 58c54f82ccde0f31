"""The window of recently received request ids that a vLLM parser maps engine-side ids
against (``RequestLines._canonical``): the last ``RECENT_IDS`` ids remembered.

An id is remembered once (received again while still in the window, it keeps its place),
and the window is the last ``size`` ids remembered. It is kept as ``id -> serial`` (the
how-many-th id remembered it was) in two plain dicts, the generation being filled and
the one before it, instead of an ``OrderedDict`` dropping its oldest id at every insert:
so a run of new ids read by the native scanner is remembered with one ``dict.update``
(C), and whether an id was in the window at any line of the run is arithmetic on serials
(``formats.vllm.native``), not a replay of the run id by id.

When the generation being filled holds ``size`` ids it becomes the one before, and the
one before is dropped: what it held is out of the window (the ids after it are at least
``size``). Each dict stays within about two windows, small enough to stay in the cache,
and no id is ever copied; a single dict compacted now and then was a tenth of reading a
big log (its lookups missing the cache, its growth rehashing, each compaction copying).
"""

from __future__ import annotations

from collections.abc import Iterator


class RecentIds:
    """The last ``size`` distinct ids remembered, with ``remembered`` counting every id
    ever remembered (evicted ones included)."""

    __slots__ = ("_ahead", "_new", "_old", "horizon", "remembered", "size")

    def __init__(self, size: int) -> None:
        self.size = size
        self.remembered = 0
        #: id -> its serial (1-based), for the generation being filled and the one
        #: before it; ids at or below ``remembered - size`` are out of the window. An id
        #: in both has its latest serial in ``_new``.
        self._new: dict[str, int] = {}
        self._old: dict[str, int] = {}
        #: ``look_back``: the window as it was when ``horizon`` ids were remembered.
        self.horizon: int | None = None
        self._ahead: list[str] = []

    def serial_of(self, rid: str) -> int:
        """The serial ``rid`` was last remembered with; 0 when it is not held (never
        remembered, or dropped with a generation: out of the window at every later
        line). An id held is in the window iff its serial is above ``remembered - size``."""
        serial = self._new.get(rid)
        return serial if serial is not None else self._old.get(rid, 0)

    def __contains__(self, rid: object) -> bool:
        if not isinstance(rid, str):
            return False
        serial = self.serial_of(rid)
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
        new = self._new
        for rid in newest:
            del new[rid]  # (an id out of the window that it held: out of it again)
        self.remembered -= len(newest)

    def __iter__(self) -> Iterator[str]:
        """The ids in the window, oldest first."""
        floor = self.remembered - self.size
        latest = {**self._old, **self._new}
        live = [(s, rid) for rid, s in latest.items() if s > floor]
        live.sort()
        return (rid for _s, rid in live)

    def remember(self, rid: str) -> bool:
        """Remember ``rid``; False when it is in the window already (it keeps its place)."""
        if self.horizon is not None:
            self.forget(self._ahead)
        if rid in self:
            return False
        self._next_generation_if_full()
        self.remembered += 1
        self._new[rid] = self.remembered
        return True

    def remember_new(self, ids: list[str]) -> bool:
        """Remember ``ids`` in order when none of them is in the window and none repeats:
        their serials are ``remembered + 1 ...``; False (nothing changed) otherwise."""
        self._next_generation_if_full()
        new, old = self._new, self._old
        start = self.remembered + 1
        if new.keys().isdisjoint(ids) and old.keys().isdisjoint(ids):  # the usual case
            had = len(new)
            new.update(zip(ids, range(start, start + len(ids))))
            if len(new) - had != len(ids):  # one repeats: undone
                for rid in ids:
                    new.pop(rid, None)
                return False
        else:
            # One of them is held: in the window, or out of it but not yet dropped.
            floor = self.remembered - self.size
            if any(self.serial_of(rid) > floor for rid in ids):
                return False
            fresh = dict(zip(ids, range(start, start + len(ids))))
            if len(fresh) != len(ids):
                return False
            new.update(fresh)
        self.remembered += len(ids)
        return True

    def _next_generation_if_full(self) -> None:
        # (Before an id is added: ``forget`` then finds a run's ids in ``_new``.)
        if len(self._new) >= self.size:
            self._old, self._new = self._new, {}
