"""Exemplars of the request histograms: which request stands for each bucket.

A bucket's exemplar is the **slowest recent request in it**: of the requests whose value
falls in the bucket (``le`` the first bound at or above it), those that ended within
``RECENT_S`` of the newest such request (by the request's finish time, else its arrival
time), the one with the largest value. An on-call engineer looking at a spike wants the
worst example near it, and a window that follows the log lets the exemplar move on as new
requests come (an all-time maximum would keep pointing at the same old request). A bucket
whose requests have no time at all gives its largest value.

The window is kept exactly while the log is read a chunk at a time: each bucket keeps the
requests no newer request in it beats (its "skyline" in time and value, a handful in
practice), so that the maximum of any later window is among them. At most
``KEPT_PER_BUCKET`` are kept (the slowest); past that, a later window may name a request
that is not its very slowest, never one outside the bucket.

Labels (``exemplar_labels``): ``request_id`` and, when the request's span gave one,
``trace_id`` (32 hex). OpenMetrics allows 128 UTF-8 characters in an exemplar's label
names and values together: ``trace_id`` is left out when both do not fit (the request's
detail gives it), and an id too long on its own is cut, ending in ``…``. The characters
the exposition would have to escape (``\\``, ``"``, newline) and those with no UTF-8 form
(lone surrogates) become U+FFFD: Prometheus keeps an exemplar's label values as written,
escapes and all (its OpenMetrics parser unescapes a series' labels, not an exemplar's), and
prometheus-client's parser loses its place at an escaped quote in an exemplar; with nothing
to escape, both read the id as it was sent. The ``/requests/ID`` link of a cut or replaced
id cannot resolve; the exposition stays valid either way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

#: Seconds before a bucket's newest request within which its slowest one is its exemplar.
RECENT_S = 300.0
#: The most requests a bucket keeps as candidates (see the module docstring).
KEPT_PER_BUCKET = 256
#: OpenMetrics: an exemplar's label names and values, together, in UTF-8 characters.
LABEL_CHARS = 128
CUT = "…"
REPLACED = "\ufffd"
_ESCAPED = frozenset('\\"\n')


@dataclass(frozen=True)
class Pick:
    """A bucket's exemplar request: its value, time (NaN: unknown) and store row."""

    value: float
    time: float
    row: int


def bucket_edges(bounds: tuple[float, ...], dtype: Any) -> np.ndarray[Any, Any]:
    """A histogram's bounds as values of ``dtype`` compare with them: a float32 column
    holds a logged 0.1 as 0.10000000149..., which is the float32 of the bound 0.1, so it
    counts in ``le="0.1"`` as logged, not in the next bucket."""
    import numpy as np

    edges = np.asarray(bounds, dtype=np.float64)
    if np.dtype(dtype) == np.float32:
        edges = edges.astype(np.float32).astype(np.float64)
    return edges


@dataclass
class BucketPicks:
    """The candidates of each bucket of a histogram with bounds ``bounds`` (and +Inf)."""

    bounds: tuple[float, ...]
    # per bucket: (values, times with -inf for unknown, rows), or None while empty
    kept: list[tuple[Any, Any, Any] | None] = field(default_factory=list)

    def add(
        self, values: np.ndarray[Any, Any], times: np.ndarray[Any, Any], rows: np.ndarray[Any, Any]
    ) -> None:
        """Requests ``rows`` with their ``values`` (NaN: not observed) and ``times``."""
        import numpy as np

        if not self.kept:
            self.kept = [None] * (len(self.bounds) + 1)
        edges = bucket_edges(self.bounds, np.asarray(values).dtype)
        values = np.asarray(values, dtype=np.float64)
        known = ~np.isnan(values)
        values, rows = values[known], np.asarray(rows, dtype=np.int64)[known]
        times = np.asarray(times, dtype=np.float64)[known]
        times = np.where(np.isnan(times), -np.inf, times)
        bucket = np.searchsorted(edges, values, side="left")
        order = np.argsort(bucket, kind="stable")
        bucket, values, times, rows = bucket[order], values[order], times[order], rows[order]
        starts = np.flatnonzero(np.diff(bucket, prepend=-1))  # where each bucket's run starts
        stops = [*starts[1:].tolist(), len(bucket)]
        for b, start, stop in zip(bucket[starts].tolist(), starts.tolist(), stops):
            old = self.kept[b]
            parts = (values[start:stop], times[start:stop], rows[start:stop])
            if old is not None:
                parts = tuple(np.concatenate((o, p)) for o, p in zip(old, parts))  # type: ignore[assignment]
            self.kept[b] = _skyline(*parts)

    def picks(self) -> list[Pick | None]:
        """Each bucket's exemplar request (None: an empty bucket), +Inf's last."""
        out: list[Pick | None] = []
        for kept in self.kept or [None] * (len(self.bounds) + 1):
            if kept is None:
                out.append(None)
                continue
            values, times, rows = kept
            i = int(values.argmax())
            time = float(times[i])
            out.append(
                Pick(float(values[i]), time if math.isfinite(time) else math.nan, int(rows[i]))
            )
        return out


def _skyline(
    values: np.ndarray[Any, Any], times: np.ndarray[Any, Any], rows: np.ndarray[Any, Any]
) -> tuple[Any, Any, Any]:
    """The requests within ``RECENT_S`` of the newest that no newer (or as new) request
    beats in value; the slowest ``KEPT_PER_BUCKET`` of them."""
    import numpy as np

    newest = times.max()
    recent = times >= newest - RECENT_S  # every one when no time is known (-inf)
    values, times, rows = values[recent], times[recent], rows[recent]
    # Newest first; of requests at the same time, a smaller one before a larger one may
    # stay too (harmless: it leaves the window with the larger one).
    order = np.argsort(-times, kind="stable")
    v = values[order]
    beaten = np.concatenate(([-np.inf], np.maximum.accumulate(v)[:-1]))
    keep = order[v > beaten][-KEPT_PER_BUCKET:]
    return values[keep], times[keep], rows[keep]


def clean(text: str) -> str:
    """``text`` with what needs an escape (``\\``, ``"``, newline) and what has no UTF-8
    form (lone surrogates) as U+FFFD."""
    return "".join(REPLACED if c in _ESCAPED or 0xD800 <= ord(c) <= 0xDFFF else c for c in text)


def exemplar_labels(request_id: str, trace_id: str | None) -> dict[str, str]:
    """The exemplar's labels within OpenMetrics' ``LABEL_CHARS`` (module docstring)."""
    request_id = clean(request_id)
    room = LABEL_CHARS - len("request_id")
    if trace_id is not None and len(request_id) + len("trace_id") + len(trace_id) <= room:
        return {"request_id": request_id, "trace_id": trace_id}
    if len(request_id) > room:
        request_id = request_id[: room - len(CUT)] + CUT
    return {"request_id": request_id}
