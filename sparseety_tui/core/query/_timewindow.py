"""Time windows: ``--since``/``--until`` and the TUI's ``t``, parsed, resolved, applied.

A window is written as two bounds, each absolute or relative:

- absolute: ``2026-11-30T10:00``, ``2026-11-30 10:00:00``, with or without ``Z`` or an
  offset (``+02:00``); a date alone (its midnight); epoch seconds (``1764496800``; the unit
  of a bigger number is told by its size as for log times, ``formats._timestamps``); a
  time of day alone (``10:00``, ``10:00:30``), on the UTC day of the anchor (below).
- relative: a duration before the anchor: ``90s``, ``10m``, ``2h``, ``1d``, ``1h30m``;
  ``now`` is the anchor itself.

**Zone.** A time without a zone is UTC: every time the tool shows (the ``received``
column, ``summary``, ``extract``) is UTC, so what you read is what you type. Log times
are read into true epoch seconds when parsed (vLLM and SGLang stamps in the host's local
zone, ISO strings without a zone as UTC: ``formats._timestamps``), so on a host whose
zone is not UTC give the offset (``2026-11-30T10:00+02:00``) to mean the host's clock.

**Anchor.** Relative bounds count back from the NEWEST time in the logs read
(``newest_time``: request and engine stats times), not from the wall clock: following a
live log that is "now"; for yesterday's incident log ``--since 10m`` still means its
last ten minutes.

**Which time of a request.** A request is in ``[since, until)`` when its received time,
or (no received time logged) its finish time, is. A request with neither is outside
every window and counted apart (``requests_without_time``). Engine stats lines are in
by their own ``ts``; error records by theirs.
"""

from __future__ import annotations

import math
import re
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, TypeVar

from sparseety_tui.core.store import EngineSeries, ErrorRecord, ExtractorView, StoreView
from sparseety_tui.events import StatsPayload
from sparseety_tui.formats import TIME_END, epoch_seconds, known_time, utc_text

if TYPE_CHECKING:
    import numpy as np

_UNIT_SECONDS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
#: ``1h30m``, ``90s``: one to four number+unit parts, each unit once at most (bounded, so
#: linear in the text's length).
_DURATION = re.compile(r"(?:\d{1,9}(?:\.\d{1,6})?[smhd]){1,4}")
_DURATION_PART = re.compile(r"(\d{1,9}(?:\.\d{1,6})?)([smhd])")
_EPOCH = re.compile(r"\d{1,20}(?:\.\d{1,9})?")
_CLOCK = re.compile(r"(\d{1,2}):(\d\d)(?::(\d\d)(?:\.(\d{1,6}))?)?")
_DATE = re.compile(r"\d{4}-\d\d-\d\d")
#: Rows a window mask is computed over at a time (bounds transient memory, as totals do).
CHUNK_ROWS = 1 << 16

WINDOW_HELP = (
    "relative to the newest time in the logs (10m, 2h, 90s, 1d, 1h30m, now), or absolute "
    "(2026-11-30T10:00, '2026-11-30 10:00:00', with Z or +02:00, a date, epoch seconds, "
    "10:00 on the newest day); no zone = UTC"
)


class WindowError(ValueError):
    """A time or window the user wrote that cannot be read; the message says why."""


@dataclass(frozen=True)
class TimeBound:
    """One side of a window as written: exactly one of ``absolute`` (epoch seconds),
    ``back`` (seconds before the anchor) or ``clock`` (seconds after midnight UTC of the
    anchor's day) is set."""

    text: str
    absolute: float | None = None
    back: float | None = None
    clock: float | None = None

    @property
    def relative(self) -> bool:
        return self.absolute is None

    def resolve(self, anchor: float | None) -> float | None:
        """Epoch seconds, or None when it counts from an anchor the data does not have."""
        if self.absolute is not None:
            return self.absolute
        if anchor is None:
            return None
        if self.back is not None:
            return anchor - self.back
        assert self.clock is not None
        return math.floor(anchor / 86400.0) * 86400.0 + self.clock


@dataclass(frozen=True)
class WindowSpec:
    """A window as the user wrote it (``--since``/``--until``, or ``t``); ``resolve``
    turns it into a ``TimeWindow`` against the data."""

    since: TimeBound | None = None
    until: TimeBound | None = None

    @property
    def text(self) -> str:
        """How the status line and ``summary`` write it back."""
        if self.until is None:
            return f"since {self.since.text}" if self.since is not None else "all"
        return f"{self.since.text if self.since else ''}..{self.until.text}"

    @property
    def relative(self) -> bool:
        return any(b is not None and b.relative for b in (self.since, self.until))

    def resolve(self, anchor: float | None) -> TimeWindow:
        since = self.since.resolve(anchor) if self.since is not None else None
        until = self.until.resolve(anchor) if self.until is not None else None
        # A bound counted from an anchor the data lacks: no request has a time, so none
        # is in; ``empty`` keeps the window from reading as "everything".
        empty = (self.since is not None and since is None) or (
            self.until is not None and until is None
        )
        return TimeWindow(since, until, anchor if self.relative else None, self, empty)


@dataclass(frozen=True)
class TimeWindow:
    """A resolved window: times ``t`` with ``since <= t < until`` (None: open side)."""

    since: float | None
    until: float | None
    #: The newest time in the data that relative bounds counted from (None: absolute).
    anchor: float | None = None
    spec: WindowSpec | None = None
    #: Nothing can be in it (a relative bound and no time in the data).
    empty: bool = False

    def contains(self, ts: float | None) -> bool:
        if self.empty or ts is None or not known_time(ts):
            return False
        return (self.since is None or ts >= self.since) and (self.until is None or ts < self.until)

    def mask(self, times: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        """Which of ``times`` (float seconds, NaN unknown) are in the window."""
        import numpy as np

        with np.errstate(invalid="ignore"):
            inside = (times >= 0) & (times < TIME_END)
            if self.empty:
                return np.zeros(len(times), dtype=bool)
            if self.since is not None:
                inside &= times >= self.since
            if self.until is not None:
                inside &= times < self.until
        return np.asarray(inside, dtype=bool)

    def text(self) -> str:
        """``10:20:00–10:30:00 UTC`` (dates shown when the two sides differ in day)."""
        since, until = self.since, self.until
        days = {utc_text(t, "%Y-%m-%d") for t in (since, until) if t is not None}
        pattern = "%H:%M:%S" if len(days) == 1 else "%Y-%m-%d %H:%M:%S"
        left = utc_text(since, pattern) if since is not None else "start"
        right = utc_text(until, pattern) if until is not None else "end"
        return f"{left}–{right} UTC"


# -- parsing -----------------------------------------------------------------------------


def parse_bound(text: str) -> TimeBound:
    """One bound: a duration before the anchor, ``now``, or an absolute time."""
    raw = text.strip()
    if not raw:
        raise WindowError("empty time")
    low = raw.lower()
    if low == "now":
        return TimeBound(raw, back=0.0)
    if _DURATION.fullmatch(low):
        units = [m.group(2) for m in _DURATION_PART.finditer(low)]
        if len(set(units)) != len(units):
            raise WindowError(f"{raw!r}: a unit appears twice")
        back = sum(float(n) * _UNIT_SECONDS[u] for n, u in _DURATION_PART.findall(low))
        return TimeBound(raw, back=back)
    if _EPOCH.fullmatch(raw):
        seconds = epoch_seconds(float(raw))
        if seconds is None:
            raise WindowError(f"{raw!r}: epoch time out of range")
        return TimeBound(raw, absolute=seconds)
    clock = _CLOCK.fullmatch(raw)
    if clock is not None:
        hour, minute, second = int(clock.group(1)), int(clock.group(2)), int(clock.group(3) or 0)
        if hour > 23 or minute > 59 or second > 59:
            raise WindowError(f"{raw!r}: not a time of day")
        frac = float("0." + clock.group(4)) if clock.group(4) else 0.0
        return TimeBound(raw, clock=hour * 3600.0 + minute * 60.0 + second + frac)
    iso = raw[:-1] + "+00:00" if raw[-1:] in ("Z", "z") else raw
    try:
        parsed = datetime.fromisoformat(iso)
    except ValueError:
        raise WindowError(
            f"{raw!r} is not a time: use 10m, 2h, 1h30m, now, 2026-11-30T10:00[Z|+02:00], "
            "a date, epoch seconds or 10:00"
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)  # the zone every time is shown in
    seconds = parsed.timestamp()
    if not known_time(seconds):
        raise WindowError(f"{raw!r}: out of range")
    return TimeBound(raw, absolute=seconds)


def window_from_args(since: str | None, until: str | None) -> WindowSpec | None:
    """The window of ``--since``/``--until`` (None: neither given)."""
    if since is None and until is None:
        return None
    spec = WindowSpec(
        parse_bound(since) if since is not None else None,
        parse_bound(until) if until is not None else None,
    )
    _check_order(spec)
    return spec


def parse_window(text: str) -> WindowSpec | None:
    """The TUI's ``t`` prompt: ``10m`` (since), ``10:00..10:30`` or ``since..until``
    (either side may be empty), or empty text for no window (None)."""
    raw = text.strip()
    if not raw or raw.lower() in ("all", "*"):
        return None
    if ".." in raw:
        left, _, right = raw.partition("..")
        if not left.strip() and not right.strip():
            return None
        spec = WindowSpec(
            parse_bound(left) if left.strip() else None,
            parse_bound(right) if right.strip() else None,
        )
    else:
        spec = WindowSpec(parse_bound(raw), None)
    _check_order(spec)
    return spec


def _check_order(spec: WindowSpec) -> None:
    """Reject ``since >= until`` when that is known without the data."""
    since, until = spec.since, spec.until
    if since is None or until is None:
        return
    if since.absolute is not None and until.absolute is not None:
        bad = since.absolute >= until.absolute
    elif since.back is not None and until.back is not None:
        bad = since.back <= until.back
    elif since.clock is not None and until.clock is not None:
        bad = since.clock >= until.clock
    else:
        return
    if bad:
        raise WindowError(f"--since {since.text} is not before --until {until.text}")


# -- applying ----------------------------------------------------------------------------


#: The columns ``request_times`` reads.
TIME_COLUMNS = ("received_ts", "finished_ts")


def request_times(cols: Mapping[str, Any]) -> np.ndarray[Any, Any]:
    """The time a request is placed at: received, else finished (NaN: neither)."""
    import numpy as np

    received = cols["received_ts"]
    times: np.ndarray[Any, Any] = np.where(np.isnan(received), cols["finished_ts"], received)
    return times.astype(np.float64)


def newest_time(extractor: ExtractorView) -> float | None:
    """The newest time in the data (the anchor of relative bounds): the latest request
    time of any kind (received, finished, ended-by) or engine stats ``ts``."""
    import numpy as np

    newest = -math.inf
    store = extractor.store
    for first in range(0, len(store), CHUNK_ROWS):
        names = ("received_ts", "finished_ts", "ended_by_ts")
        cols = store.numeric_view(first, first + CHUNK_ROWS, names)
        for name in names:
            values = cols[name]
            with np.errstate(invalid="ignore"):
                known = values[(values >= 0) & (values < TIME_END)]
            if known.size:
                newest = max(newest, float(known.max()))
    for series in extractor.engine.labels.values():
        ts = series.last.get("ts")
        if isinstance(ts, (int, float)) and known_time(ts):
            newest = max(newest, float(ts))
    return newest if newest > -math.inf else None


def time_span(store: StoreView) -> tuple[float, float] | None:
    """The first and last request time (``request_times``) of ``store``, or None."""
    import numpy as np

    low, high = math.inf, -math.inf
    for first in range(0, len(store), CHUNK_ROWS):
        times = request_times(store.numeric_view(first, first + CHUNK_ROWS, TIME_COLUMNS))
        with np.errstate(invalid="ignore"):
            known = times[(times >= 0) & (times < TIME_END)]
        if known.size:
            low, high = min(low, float(known.min())), max(high, float(known.max()))
    return (low, high) if high >= low else None


@dataclass(frozen=True)
class WindowRows:
    """The store rows in a window, and how the others split."""

    rows: np.ndarray[Any, Any]  # int64, ascending
    outside: int  # had a time, outside the window
    without_time: int  # had no time: outside every window


def window_rows(store: StoreView, window: TimeWindow) -> WindowRows:
    """The rows of ``store`` whose request time is in ``window``."""
    import numpy as np

    picked: list[np.ndarray[Any, Any]] = []
    outside = without = 0
    for first in range(0, len(store), CHUNK_ROWS):
        times = request_times(store.numeric_view(first, first + CHUNK_ROWS, TIME_COLUMNS))
        with np.errstate(invalid="ignore"):
            timed = (times >= 0) & (times < TIME_END)
        inside = window.mask(times)
        picked.append(np.flatnonzero(inside) + first)
        without += int((~timed).sum())
        outside += int((timed & ~inside).sum())
    rows = np.concatenate(picked) if picked else np.zeros(0, dtype=np.int64)
    return WindowRows(rows.astype(np.int64), outside, without)


P = TypeVar("P", bound=Mapping[str, Any])


def points_in(points: Iterable[P], window: TimeWindow | None) -> list[P]:
    """Stats points whose ``ts`` is in ``window`` (all: None)."""
    if window is None:
        return list(points)
    return [p for p in points if window.contains(_ts(p.get("ts")))]


def records_in(records: Iterable[ErrorRecord], window: TimeWindow | None) -> list[ErrorRecord]:
    """Error records in ``window`` (all: None)."""
    if window is None:
        return list(records)
    return [r for r in records if window.contains(_ts(r.ts))]


def _ts(value: object) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


class WindowedEngineSeries(EngineSeries):
    """An engine series that also keeps the stats lines that may fall in ``spec`` once it
    is resolved (the anchor of a relative bound is only known at the end of the read):
    ``windowed`` then gives the window's own series, every line of it, for ``summary``.

    What may fall in it: a line at or after an absolute ``since`` (before an absolute
    ``until``); for a relative ``since``, a line not older than the newest stats time so
    far minus its duration (the anchor can only be newer). Memory grows with the stats
    lines in the window, not with the log."""

    def __init__(self, spec: WindowSpec) -> None:
        super().__init__()
        self.spec = spec
        self.kept: deque[StatsPayload] = deque()
        self._newest = -math.inf

    def add(self, stats: StatsPayload) -> None:
        super().add(stats)
        ts = stats.get("ts")
        if ts is None:
            return  # no time: in no window
        since, until = self.spec.since, self.spec.until
        if until is not None and until.absolute is not None and ts >= until.absolute:
            return
        if since is not None and since.absolute is not None:
            if ts < since.absolute:
                return
        elif since is not None and since.back is not None:
            if ts > self._newest:
                self._newest = ts
                floor = ts - since.back
                kept = self.kept
                while kept and kept[0].get("ts", floor) < floor:
                    kept.popleft()  # older than any anchor can reach back to
            if ts < self._newest - since.back:
                return
        self.kept.append(stats)

    def windowed(self, window: TimeWindow) -> EngineSeries:
        """The series of the stats lines in ``window``, in line order."""
        series = EngineSeries()
        for stats in self.kept:
            if window.contains(stats.get("ts")):
                series.add(stats)
        return series


def window_series(engine: EngineSeries, window: TimeWindow) -> tuple[EngineSeries, bool]:
    """The engine series of ``window``, and whether it has every stats line of it: exact
    from a ``WindowedEngineSeries`` (``summary``); else from the recent points a series
    keeps (``STATS_POINTS``), complete only if none of the window's lines was dropped
    from them (the oldest point kept is before ``since``, or no point was dropped)."""
    if isinstance(engine, WindowedEngineSeries):
        return engine.windowed(window), True
    series = EngineSeries()
    for stats in points_in(engine.points, window):
        series.add(stats)
    dropped = engine.count > len(engine.points)
    oldest = _ts(engine.points[0].get("ts")) if engine.points else None
    complete = not dropped or (
        window.since is not None and oldest is not None and oldest < window.since
    )
    return series, complete
