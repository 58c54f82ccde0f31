"""Requests whose end no line logs, ended by the engine's own word that it is idle.

vLLM V1 logs ``Received request`` and ``Added request`` but no completion line, so without
this its requests would stay ``running`` for ever (160k "running" in a log whose engine
said 255). The rule:

- A request is *open* while its state is ``received`` or ``running``.
- A vLLM stats line (``phase == "engine"``) gives each engine label's latest ``running``
  and ``waiting`` (and ``swapped``, V0). When every engine label of the path has last
  reported 0 running and 0 waiting, the engine holds no request, so every open request of
  that path whose time is strictly before the stats line's time has ended: its state
  becomes ``end_unlogged`` and ``ended_by_ts`` the stats line's time. No latency is
  invented for it.
- "Its time" is ``received_ts``, which holds the last of its ``Received``/``Added`` times.
  The same second is not before: the API server may log ``Received`` a moment before the
  engine takes the request. Without both times nothing is closed.
- Per path: an idle line closes the requests first seen in files of the same path (every
  incarnation of a rotated path), never another file's: two files given together are
  usually two servers, and one server's idle engine says nothing of the other's requests.
- Only vLLM's periodic engine lines count. SGLang logs batch lines only while it works,
  and its prefill line's ``#running-req`` leaves out the batch being prefilled.
- A later line that makes the request open again (``received``/``running``) reopens it
  (``ended_by_ts`` unknown again); a finish line sets ``finished``/``aborted`` as always,
  and ``ended_by_ts`` stays: the engine was idle then all the same.

Cost: each path keeps its open rows in an ``array('i')`` (4 B a row). An idle line visits
each once and keeps only those not yet closable (same second); the list is compacted
when it doubles, so requests that finish normally do not pile up in it.

Split reads (``ingest.parallel``): a byte range read alone does not know the engines'
state at its start nor the requests still open there. With ``record`` it keeps, per path,
its idle moments (time, and which engine labels it had seen then), the labels seen when
it closed rows, each label's state at its end and the ids still open at its end
(``LifecyclePart``). ``check_parts`` refuses a split where a range closed rows while an
engine that only earlier ranges had seen was busy; ``before_part`` closes the rows still
open from earlier ranges at the first of the range's moments that one reader would have
seen as idle; ``after_part`` carries the open rows and engine states on.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Mapping
from dataclasses import dataclass, field

from sparseety_tui.core.store import STATE_CODE, RequestStore
from sparseety_tui.events import StatsPayload

RECEIVED = STATE_CODE["received"]
RUNNING = STATE_CODE["running"]
END_UNLOGGED = STATE_CODE["end_unlogged"]
#: Open rows kept before the first compaction of a path's list.
COMPACT_MIN = 1024


#: The states of an open request (``state in OPEN_CODES`` on the hot path).
OPEN_CODES = (RECEIVED, RUNNING)


def is_open(code: int) -> bool:
    return code in OPEN_CODES


@dataclass
class LifecyclePart:
    """What one byte range of a file saw (``Lifecycle.export``), in a picklable form."""

    #: engine label -> idle at its last report in the range
    engines: dict[str, bool] = field(default_factory=dict)
    #: the engine labels seen so far, each time a new one appeared
    groups: list[frozenset[str]] = field(default_factory=list)
    #: idle moments in line order: time (array 'd') and index into ``groups`` (array 'i')
    moment_ts: bytes = b""
    moment_group: bytes = b""
    #: groups at which the range itself closed rows
    closed_groups: set[int] = field(default_factory=set)
    #: ids of the range's rows still open at its end
    open_ids: list[str] = field(default_factory=list)


@dataclass
class _Track:
    """One path's engines and open rows."""

    engines: dict[str, bool] = field(default_factory=dict)
    busy: int = 0  # labels whose last report was not idle
    open_rows: array[int] = field(default_factory=lambda: array("i"))
    compact_at: int = COMPACT_MIN
    # recorded for a split read only
    groups: list[frozenset[str]] = field(default_factory=list)
    moment_ts: array[float] = field(default_factory=lambda: array("d"))
    moment_group: array[int] = field(default_factory=lambda: array("i"))
    closed_groups: set[int] = field(default_factory=set)


def _qualified(carried: Mapping[str, bool], seen: frozenset[str]) -> bool:
    """Whether a range's idle moment, taken with the labels ``seen`` in the range so far,
    is idle for one reader too: every label only earlier ranges reported is idle."""
    return all(idle for label, idle in carried.items() if label not in seen)


class Lifecycle:
    """Closes open requests at idle stats lines (one writer, beside the ``Merger``)."""

    def __init__(self, store: RequestStore, lineage: list[int], record: bool = False) -> None:
        """``lineage``: file index -> the first file of its path (the Merger's list);
        ``record``: keep what a split read's merge needs (``LifecyclePart``)."""
        self.store = store
        self._lineage = lineage
        self._record = record
        self._tracks: dict[int, _Track] = {}

    def _track(self, file: int) -> _Track:
        path = self._lineage[file]
        track = self._tracks.get(path)
        if track is None:
            track = self._tracks[path] = _Track()
        return track

    def opened(self, row: int, file: int) -> None:
        """``row`` became open (it was not) through a line of ``file``."""
        track = self._track(file)
        rows = track.open_rows
        rows.append(row)
        if len(rows) >= track.compact_at:
            state = self.store.state
            track.open_rows = array("i", [r for r in rows if is_open(state[r])])
            track.compact_at = max(COMPACT_MIN, 2 * len(track.open_rows))

    def stats(self, payload: StatsPayload, file: int) -> None:
        """A stats line of ``file``: note its engine's state; close open rows when every
        engine of the path is idle."""
        if payload.get("phase") != "engine":
            return
        running = payload.get("running")
        waiting = payload.get("waiting")
        if running is None or waiting is None:
            return
        idle = running == 0 and waiting == 0 and not payload.get("swapped")
        track = self._track(file)
        label = payload.get("engine", "")
        was = track.engines.get(label)
        if was is None:
            track.engines[label] = idle
            track.busy += not idle
            if self._record:
                track.groups.append(frozenset(track.engines))
        elif was != idle:
            track.engines[label] = idle
            track.busy += -1 if idle else 1
        ts = payload.get("ts")
        if not idle or track.busy or ts is None:
            return
        if self._record:
            track.moment_ts.append(ts)
            track.moment_group.append(len(track.groups) - 1)
        if track.open_rows and self._close(track, ts) and self._record:
            track.closed_groups.add(len(track.groups) - 1)

    def _close(self, track: _Track, ts: float) -> bool:
        """Close the track's open rows from before ``ts``; True if any was."""
        store = self.store
        state = store.state
        received = store.columns["received_ts"]
        ended = store.columns["ended_by_ts"]
        keep: array[int] = array("i")
        closed = False
        for row in track.open_rows:
            if not is_open(state[row]):
                continue
            t = received[row]
            if t < ts:
                store.touch(row)
                state[row] = END_UNLOGGED
                ended[row] = ts
                closed = True
            elif t == t:
                keep.append(row)  # the same second or later: a later idle line may close it
            # (a row without a time can never be closed: dropped)
        track.open_rows = keep
        track.compact_at = max(COMPACT_MIN, 2 * len(keep))
        return closed

    # -- a file read in byte ranges ------------------------------------------------------

    def export(self, file: int) -> LifecyclePart:
        """What this reader of one range of ``file`` must hand to the merge."""
        track = self._track(file)
        state = self.store.state
        ids = self.store.ids
        open_ids = [ids[row] for row in dict.fromkeys(track.open_rows) if is_open(state[row])]
        return LifecyclePart(
            engines=dict(track.engines),
            groups=list(track.groups),
            moment_ts=track.moment_ts.tobytes(),
            moment_group=track.moment_group.tobytes(),
            closed_groups=set(track.closed_groups),
            open_ids=open_ids,
        )

    def before_part(self, file: int, part: LifecyclePart) -> None:
        """Before a later range's rows are merged: close the rows still open from earlier
        ranges at the first of its idle moments that one reader would have seen, i.e. the
        first one after the row's time among those whose unseen engines are idle."""
        import numpy as np

        track = self._track(file)
        if not track.open_rows or not part.moment_ts:
            return
        times = np.frombuffer(part.moment_ts, dtype=np.float64)
        groups = np.frombuffer(part.moment_group, dtype=np.int32)
        ok = np.array([_qualified(track.engines, seen) for seen in part.groups], dtype=bool)
        times = times[ok[groups]] if len(ok) else times[:0]
        if not len(times):
            return
        # The first moment (in line order) later than t is where the running maximum of
        # the times first exceeds t (times need not be sorted: a clock may step back).
        ceiling = np.maximum.accumulate(times)
        store = self.store
        state = store.state
        received = store.columns["received_ts"]
        ended = store.columns["ended_by_ts"]
        keep: array[int] = array("i")
        for row in track.open_rows:
            if not is_open(state[row]):
                continue
            t = received[row]
            if t != t:
                continue
            i = int(np.searchsorted(ceiling, t, side="right"))
            if i < len(times):
                store.touch(row)
                state[row] = END_UNLOGGED
                ended[row] = float(times[i])
            else:
                keep.append(row)
        track.open_rows = keep

    def after_part(self, file: int, part: LifecyclePart, renames: Mapping[str, str] | None) -> None:
        """After a range's rows were merged: its open rows stay open here (an open row has
        no ``ended_by_ts``), and its engines' last states are the path's."""
        track = self._track(file)
        store = self.store
        state = store.state
        ended = store.columns["ended_by_ts"]
        for rid in part.open_ids:
            row = store.ids.find(renames.get(rid, rid) if renames else rid)
            if row is None or not is_open(state[row]):
                continue
            if not math.isnan(ended[row]):
                store.touch(row)
                ended[row] = math.nan
            track.open_rows.append(row)
        track.engines.update(part.engines)
        track.busy = sum(not idle for idle in track.engines.values())


def check_parts(parts: list[LifecyclePart | None]) -> str | None:
    """Why the ranges' own closings cannot all stand for one reader's (None: they can): a
    range closed rows at a moment when an engine only earlier ranges had seen was busy."""
    carried: dict[str, bool] = {}
    for part in parts:
        if part is None:
            return "a range without lifecycle notes"
        for group in part.closed_groups:
            if not _qualified(carried, part.groups[group]):
                return "a range took the engines to be idle while an earlier range's was busy"
        carried.update(part.engines)
    return None
