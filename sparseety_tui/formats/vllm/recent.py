"""The window of recently received request ids that a vLLM parser maps engine-side ids
against (``RequestLines._canonical``): the last ``RECENT_IDS`` ids remembered.

An id is remembered once (received again while still in the window, it keeps its place),
and the window is the last ``size`` ids remembered. It is kept as ``id -> serial`` (the
how-many-th id remembered it was) in a plain dict that is compacted now and then,
instead of an ``OrderedDict`` dropping its oldest id at every insert: so a run of new
ids read by the native scanner is remembered with one ``dict.update`` (C), and whether an
id was in the window at any line of the run is arithmetic on serials
(``formats.vllm.native``), not a replay of the run id by id.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

#: The dict is compacted when it would hold this many times the window's ids.
COMPACT_AT = 8


class RecentIds:
    """The last ``size`` distinct ids remembered, with ``remembered`` counting every id
    ever remembered (evicted ones included)."""

    __slots__ = ("_ahead", "_serial", "horizon", "remembered", "size")

    def __init__(self, size: int) -> None:
        self.size = size
        self.remembered = 0
        #: id -> its serial (1-based); ids at or below ``remembered - size`` are evicted
        #: and wait for the next compaction.
        self._serial: dict[str, int] = {}
        #: ``look_back``: the window as it was when ``horizon`` ids were remembered.
        self.horizon: int | None = None
        self._ahead: list[str] = []

    def __contains__(self, rid: object) -> bool:
        serial = self._serial.get(rid)  # type: ignore[call-overload]
        limit = self.remembered if self.horizon is None else self.horizon
        return serial is not None and limit - self.size < serial <= limit

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
        """Undo remembering ``newest``, the last ids remembered (``remember_new``)."""
        self.look_ahead()
        serial = self._serial
        for rid in newest:
            del serial[rid]  # (an evicted id updated by remember_new: out of the window)
        self.remembered -= len(newest)

    def __iter__(self) -> Iterator[str]:
        """The ids in the window, oldest first."""
        floor = self.remembered - self.size
        live = [(s, rid) for rid, s in self._serial.items() if s > floor]
        live.sort()
        return (rid for _s, rid in live)

    def remember(self, rid: str) -> bool:
        """Remember ``rid``; False when it is in the window already (it keeps its place)."""
        if self.horizon is not None:
            self.forget(self._ahead)
        if rid in self:
            return False
        self.remembered += 1
        self._serial[rid] = self.remembered
        self._compact_if_over(0)
        return True

    def serials(self) -> Mapping[str, int]:
        """id -> serial (read only), for lookups in bulk. An id not in it was never
        remembered or is compacted away (then it is out of the window at every later
        line); one in it is in the window iff its serial is above ``remembered - size``."""
        return self._serial

    def remember_new(self, ids: list[str]) -> bool:
        """Remember ``ids`` in order when none of them is in the window and none repeats:
        their serials are ``remembered + 1 ...``; False (nothing changed) otherwise."""
        self._compact_if_over(len(ids))
        serial = self._serial
        start = self.remembered + 1
        if serial.keys().isdisjoint(ids):  # the usual case: two passes in C
            had = len(serial)
            serial.update(zip(ids, range(start, start + len(ids))))
            if len(serial) - had != len(ids):  # one repeats: undone
                for rid in ids:
                    serial.pop(rid, None)
                return False
        else:
            # One of them is in the dict: in the window, or evicted but not yet compacted.
            floor = self.remembered - self.size
            if any(serial.get(rid, 0) > floor for rid in ids):
                return False
            fresh = dict(zip(ids, range(start, start + len(ids))))
            if len(fresh) != len(ids):
                return False
            serial.update(fresh)
        self.remembered += len(ids)
        return True

    def _compact_if_over(self, coming: int) -> None:
        # At 8x the window, a compaction drops ~7/8 of what it reads: each id is read
        # ~1.1 times in all (at 2x: twice, and 5 % of a big log's reading time).
        if len(self._serial) + coming > COMPACT_AT * self.size:
            self._compact()

    def _compact(self) -> None:
        """Drop the evicted ids (only ids out of the window at every later line)."""
        floor = self.remembered - self.size
        self._serial = {rid: s for rid, s in self._serial.items() if s > floor}
