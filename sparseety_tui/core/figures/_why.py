"""Why a request was slow: the part of its latency that dominated, against its peers, and
the engine it arrived at.

A request's latency splits into ``queue`` (waiting to be scheduled), ``prefill``,
``decode`` (in the model, for each phase) and ``other`` (the latency minus the parts
known, when that is not negative). The dominant component is the largest of those known;
with no part known there is none (a latency alone says nothing of where it went), and
none without a latency above 0.

Peers are the requests of the same model whose prompt length is in the same power-of-two
bucket and that were received in the same ``PEER_WINDOW_S`` window (aligned on the epoch);
the peers' median is that component's median over the peers that have it, the request
itself left out. All of it is numpy over columns: requests are grouped once, sorted once
per component, and each request's median is read from its group's sorted values.

The engine state at arrival is the nearest stats line at or before the request's receive
time, of the request's own log when that log has stats lines, else of any; the series
keeps the last ``STATS_POINTS`` lines, and before those the mean of the minute the request
arrived in stands in (``from: "minute"``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sparseety_tui.core.store import SOURCE_SEP, EngineSeries, minute_cells

if TYPE_CHECKING:
    import numpy as np

#: The components of a latency, by their code (-1: none).
COMPONENTS = ("queue", "prefill", "decode", "other")
#: Seconds of the receive-time window peers share.
PEER_WINDOW_S = 300.0


def dominant(
    queue: Any, prefill: Any, decode: Any, latency: Any
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Each request's dominant component code (-1: none), its seconds (NaN: none) and its
    ``other`` seconds (NaN: unknown), from float arrays with NaN for unknown."""
    import numpy as np

    parts = np.stack([np.asarray(v, dtype=np.float64) for v in (queue, prefill, decode)])
    latency = np.asarray(latency, dtype=np.float64)
    known = ~np.isnan(parts)
    some = known.any(axis=0)
    with np.errstate(invalid="ignore"):
        other = latency - np.where(known, parts, 0.0).sum(axis=0)
        other[~((other >= 0) & some)] = np.nan
        some &= latency > 0
    every = np.concatenate([parts, other[None, :]])
    filled = np.where(np.isnan(every), -np.inf, every)
    code = np.argmax(filled, axis=0).astype(np.int8)
    code[~some] = -1
    seconds = np.where(some, filled.max(axis=0, initial=-np.inf), np.nan)
    return code, seconds, other


def _bucket(prompt: Any) -> np.ndarray[Any, Any]:
    """A prompt length's power-of-two bucket (0 tokens: -1; unknown: -2)."""
    import numpy as np

    prompt = np.asarray(prompt, dtype=np.float64)
    out = np.full(len(prompt), -2, dtype=np.int64)
    known = prompt >= 0
    out[known] = -1
    positive = prompt > 0
    out[positive] = np.floor(np.log2(prompt[positive])).astype(np.int64)
    return out


def peer_groups(model: Any, prompt: Any, received: Any) -> np.ndarray[Any, Any]:
    """Each request's peer group (-1: no time, no peers), numbered from 0."""
    import numpy as np

    received = np.asarray(received, dtype=np.float64)
    timed = ~np.isnan(received)
    window = np.where(timed, np.floor(np.where(timed, received, 0.0) / PEER_WINDOW_S), 0)
    key = (window.astype(np.int64) << 24) | ((_bucket(prompt) + 2) << 16)
    key |= np.asarray(model, dtype=np.int64)
    groups = np.full(len(key), -1, dtype=np.int64)
    if timed.any():
        _, groups[timed] = np.unique(key[timed], return_inverse=True)
    return groups


def peer_medians(
    groups: Any, code: Any, values: Sequence[Any]
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Each request's peers (its group's size less one; 0 without a group) and the median
    of its dominant component over the peers that have it, itself left out (NaN: none).
    ``values``: each component's seconds per request (``COMPONENTS`` order, NaN unknown)."""
    import numpy as np

    groups = np.asarray(groups)
    n = len(groups)
    grouped = groups >= 0
    sizes = np.bincount(groups[grouped]) if grouped.any() else np.zeros(0, dtype=np.int64)
    peers = np.zeros(n, dtype=np.int64)
    peers[grouped] = sizes[groups[grouped]] - 1
    median = np.full(n, np.nan)
    for c, component in enumerate(values):
        component = np.asarray(component, dtype=np.float64)
        have = grouped & ~np.isnan(component)
        wanted = have & (code == c)
        if not wanted.any():
            continue
        rows = np.flatnonzero(have)
        order = np.lexsort((component[rows], groups[rows]))
        rows = rows[order]
        ordered = component[rows]
        g = groups[rows]
        start = np.searchsorted(g, g, side="left")  # each one's group's first position
        count = np.bincount(g, minlength=len(sizes))[g]
        rank = np.arange(len(rows)) - start
        target = code[rows] == c
        k = count - 1  # the peers that have it
        lower = _others_at(ordered, start, rank, (k - 1) // 2)
        upper = _others_at(ordered, start, rank, k // 2)
        found = np.where(k > 0, (lower + upper) / 2.0, np.nan)
        median[rows[target]] = found[target]
    return peers, median


def _others_at(ordered: Any, start: Any, rank: Any, j: Any) -> Any:
    """For each request, the ``j``-th value of its group's others (sorted values from
    ``start``, its own at ``rank`` skipped)."""
    import numpy as np

    at = start + j + (j >= rank)
    return ordered[np.clip(at, 0, len(ordered) - 1)]


@dataclass(frozen=True, slots=True)
class EngineAtArrival:
    """An engine's figures at a request's arrival: those of its nearest stats line at or
    before it (``from: "line"``), or the mean of that minute's (``from: "minute"``)."""

    waiting: float | None
    running: float | None
    kv_usage: float | None
    ts: float
    engine: str
    source: str

    def to_json(self) -> dict[str, Any]:
        return {
            "waiting": self.waiting,
            "running": self.running,
            "kv_usage": self.kv_usage,
            "ts": round(self.ts, 3),
            "engine": self.engine or None,
            "from": self.source,
        }


class ArrivalStates:
    """Looks up the engine state at a time, per log (``EngineSeries``'s points and
    per-minute means)."""

    def __init__(self, engine: EngineSeries) -> None:
        import numpy as np

        self._engine = engine
        by_source: dict[str, list[Mapping[str, Any]]] = {}
        everyone: list[Mapping[str, Any]] = []
        for point in engine.points:
            if type(point.get("ts")) in (int, float) and point.get("phase") != "spec":
                by_source.setdefault(str(point.get("source", "")), []).append(point)
                everyone.append(point)
        self._points = {key: _sorted(points) for key, points in by_source.items()}
        self._everyone = _sorted(everyone)
        self._sources = {key.split(SOURCE_SEP, 1)[0] for key in engine.labels}
        #: Whether older lines than the points kept were read (their minutes stand in).
        self._older = engine.count > len(engine.points)
        self._np = np

    def at(self, ts: float, source: str) -> EngineAtArrival | None:
        """The state at ``ts`` of log ``source``'s engines (else of any log's)."""
        if ts != ts:
            return None
        own = source in self._sources
        points = self._points.get(source) if own else self._everyone
        if points is not None and points[0].size and points[0][0] <= ts:
            times, payloads = points
            at = int(self._np.searchsorted(times, ts, side="right")) - 1
            point = payloads[at]
            return EngineAtArrival(
                waiting=_waiting(point),
                running=_figure(point.get("running")),
                kv_usage=_figure(point.get("kv_usage")),
                ts=float(times[at]),
                engine=str(point.get("engine", "")),
                source="line",
            )
        return self._minute(ts, source if own else None) if self._older else None

    def _minute(self, ts: float, source: str | None) -> EngineAtArrival | None:
        """The mean of the stats lines of the minute ``ts`` is in (the engine label with
        the most lines then), of log ``source`` or of any."""
        minute = int(ts // 60) * 60
        best: tuple[float, str, dict[str, float]] | None = None
        for key, series in self._engine.labels.items():
            log, _, label = key.partition(SOURCE_SEP)
            if source is not None and log != source:
                continue
            bucket = series.per_minute.get(minute)
            if bucket is None:
                continue
            means = {
                name: total / count
                for name, (total, count) in minute_cells(bucket).items()
                if count
            }
            lines = max((c for _, c in minute_cells(bucket).values()), default=0)
            if best is None or lines > best[0]:
                best = (lines, label, means)
        if best is None:
            return None
        means = best[2]
        return EngineAtArrival(
            waiting=_waiting(means),
            running=_figure(means.get("running")),
            kv_usage=_figure(means.get("kv_usage")),
            ts=float(minute),
            engine=best[1],
            source="minute",
        )


def _sorted(points: list[Mapping[str, Any]]) -> tuple[Any, list[Mapping[str, Any]]]:
    import numpy as np

    points = sorted(points, key=lambda p: float(p["ts"]))
    return np.array([float(p["ts"]) for p in points], dtype=np.float64), points


def _waiting(figures: Mapping[str, Any]) -> float | None:
    """Requests waiting to be scheduled: vLLM's ``Waiting``, SGLang's ``#queue-req``
    (``queued`` in a stats payload)."""
    waiting = _figure(figures.get("waiting"))
    return _figure(figures.get("queued")) if waiting is None else waiting


def _figure(value: Any) -> float | None:
    if type(value) not in (int, float) or value != value:
        return None
    return round(float(value), 4)


def why_text(
    component: str,
    seconds: float,
    latency: float,
    peers_median: float | None,
    engine: EngineAtArrival | None,
) -> str:
    """One line: "queue 8.2 s = 91 % of 9.0 s (peers' median 0.1 s); arrived behind 194
    waiting on engine 1, KV 99 %"."""
    text = (
        f"{component} {_seconds(seconds)} = {100 * seconds / latency:.0f} % of {_seconds(latency)}"
    )
    if peers_median is not None:
        text += f" (peers' median {_seconds(peers_median)})"
    if engine is not None:
        parts = []
        if engine.waiting is not None:
            parts.append(f"arrived behind {engine.waiting:.0f} waiting")
        if engine.running is not None:
            parts.append(f"{engine.running:.0f} running")
        where = f" on engine {engine.engine}" if engine.engine else ""
        said = ", ".join(parts) + where
        if engine.kv_usage is not None:
            said += (", " if said else "") + f"KV {100 * engine.kv_usage:.0f} %"
        if said:
            text += "; " + said.lstrip(" ")
    return text


def _seconds(value: float) -> str:
    if value < 0.1:
        return f"{value * 1000:.0f} ms"
    return f"{value:.1f} s" if value < 100 else f"{value:.0f} s"


def finite(value: float) -> float | None:
    """None for NaN."""
    return None if math.isnan(value) else value
