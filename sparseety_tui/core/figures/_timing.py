"""Where each request's time went, as outputs give it: per request (``extract``,
``/requests/ID``: ``timing``, ``timing_from``, ``trace``, ``why``, ``why_text``) and over
requests (``summary --json``: ``timing`` and ``slow``).

``tpot_s`` (time per output token) is derived: ``decode_s / (completion_tokens - 1)``, else
``(latency_s - ttft_s) / (completion_tokens - 1)``, for a request of more than one
completion token. A timing source code 0 is the row's file's own: ``trace`` for a JSONL
trace, ``log`` for any other log (core.store).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from sparseety_tui.core.figures import _document as doc
from sparseety_tui.core.figures._totals import sorted_quantiles
from sparseety_tui.core.figures._why import (
    COMPONENTS,
    ArrivalStates,
    dominant,
    peer_groups,
    peer_medians,
    why_text,
)
from sparseety_tui.core.store import (
    PHASE_COLUMNS,
    TIMING_FIELDS,
    TIMING_FROM,
    TIMING_SOURCE_CODE,
    TIMING_SOURCES,
    ExtractorView,
)
from sparseety_tui.events import TimingSource

if TYPE_CHECKING:
    import numpy as np

#: The figures of ``timing``, in output order.
TIMING_OUTPUT = (*PHASE_COLUMNS, "ttft_s", "latency_s", "tpot_s", "preemptions")
#: The seconds figures ``summary --json`` gives quantiles of.
SECONDS_OUTPUT = tuple(name for name in TIMING_OUTPUT if name != "preemptions")
_DERIVED = TimingSource.DERIVED.value
_TRACE_FORMAT = "trace"
#: The columns the per-request timing reads.
TIMING_READS = (
    *TIMING_FIELDS,
    *TIMING_FROM.values(),
    "completion_tokens",
    "trace_hi",
    "trace_lo",
    "span_id",
    "received_ts",
    "file",
)


def tpot(decode: Any, latency: Any, ttft: Any, completion: Any) -> np.ndarray[Any, Any]:
    """Seconds per output token after the first (NaN: unknown), from float arrays."""
    import numpy as np

    steps = np.asarray(completion, dtype=np.float64) - 1
    with np.errstate(invalid="ignore", divide="ignore"):
        decode = np.asarray(decode, dtype=np.float64)
        rest = np.asarray(latency, dtype=np.float64) - np.asarray(ttft, dtype=np.float64)
        rest[~(rest >= 0)] = np.nan
        spent = np.where(np.isnan(decode), rest, decode)
        out = np.where(steps >= 1, spent / steps, np.nan)
    return out


def file_sources(extractor: ExtractorView) -> list[str]:
    """What code 0 means in each file: ``trace`` for a JSONL trace, else ``log``."""
    return [
        TimingSource.TRACE.value if f.format_name == _TRACE_FORMAT else TimingSource.LOG.value
        for f in extractor.files
    ]


def _any_part(extractor: ExtractorView) -> bool:
    """Whether some row knows its queue, prefill or decode time."""
    import numpy as np

    names = ("queue_s", "prefill_s", "decode_s")
    return any(
        not np.isnan(cols[name]).all() for cols in _chunks(extractor, names, None) for name in names
    )


class WhyTable:
    """Each request's dominant component, its peers and their median, for every row of
    a store at once (peers are found over all rows, whatever rows an output shows)."""

    def __init__(self, extractor: ExtractorView) -> None:
        import numpy as np

        store = extractor.store
        self.arrival = ArrivalStates(extractor.engine)
        self.paths = [f.path for f in extractor.files]
        self.any = _any_part(extractor)
        if not self.any:
            return  # no row has a part of its latency: no row has a why
        cols = store.numeric_view(
            0,
            len(store),
            ("queue_s", "prefill_s", "decode_s", "latency_s", "model", "prompt_tokens"),
        )
        q, p, d, lat = (cols[n] for n in ("queue_s", "prefill_s", "decode_s", "latency_s"))
        self.code, self.seconds, other = dominant(q, p, d, lat)
        self.latency = lat.astype(np.float64)
        self.peers = np.zeros(len(store), dtype=np.int64)
        self.median = np.full(len(store), np.nan)
        if (self.code >= 0).any():
            received = store.numeric_view(0, len(store), ("received_ts",))["received_ts"]
            groups = peer_groups(cols["model"], cols["prompt_tokens"], received)
            self.peers, self.median = peer_medians(groups, self.code, (q, p, d, other))

    def why(self, row: int, received: float, file: int) -> tuple[dict[str, Any] | None, str | None]:
        """The ``why`` object and line of ``row`` (None, None: no component known)."""
        if not self.any:
            return None, None
        code = int(self.code[row])
        if code < 0:
            return None, None
        seconds, latency = float(self.seconds[row]), float(self.latency[row])
        median = float(self.median[row])
        engine = self.arrival.at(received, self.paths[file])
        peers_median = None if median != median else round(median, 5)
        out = {
            "component": COMPONENTS[code],
            "seconds": round(seconds, 5),
            "share": round(seconds / latency, 4),
            "latency_s": round(latency, 5),
            "peers": int(self.peers[row]),
            "peers_median_s": peers_median,
            "engine": None if engine is None else engine.to_json(),
        }
        return out, why_text(COMPONENTS[code], seconds, latency, peers_median, engine)


def timing_records(
    extractor: ExtractorView,
    table: WhyTable,
    cols: Mapping[str, Any],
    first: int,
    last: int,
) -> Iterator[dict[str, Any]]:
    """The timing keys of rows ``first .. last`` of an output record, in order;
    ``cols``: those rows' ``numeric_view`` (``TIMING_READS`` at least). Figures no row
    of the chunk has are skipped at once (most logs have a latency and a TTFT at most)."""
    import numpy as np

    defaults = file_sources(extractor)
    arrays = {name: cols[name] for name in TIMING_FIELDS}
    arrays["tpot_s"] = tpot(
        cols["decode_s"], cols["latency_s"], cols["ttft_s"], cols["completion_tokens"]
    )
    present = [name for name in TIMING_OUTPUT if not np.isnan(arrays[name]).all()]
    values = {name: arrays[name].tolist() for name in present}
    codes = {name: cols[TIMING_FROM[name]].tolist() for name in present if name in TIMING_FROM}
    blank = dict.fromkeys(TIMING_OUTPUT)
    files, received = cols["file"].tolist(), cols["received_ts"].tolist()
    traces = _trace_objects(cols)
    why_rows = table.any and bool((table.code[first:last] >= 0).any())
    for i in range(last - first):
        timing: dict[str, Any] = blank.copy()
        sources: dict[str, str] = {}
        for name in present:
            value = values[name][i]
            if value != value:
                continue
            if name == "tpot_s":
                timing[name] = round(value, 5)
                sources[name] = _DERIVED
                continue
            timing[name] = int(value) if name == "preemptions" else round(value, 5)
            code = codes[name][i]
            sources[name] = TIMING_SOURCES[code] if code else defaults[int(files[i])]
        why, line = table.why(first + i, received[i], int(files[i])) if why_rows else (None, None)
        yield {
            "timing": timing,
            "timing_from": {name: sources[name] for name in TIMING_OUTPUT if name in sources},
            "trace": traces[i] if traces is not None else dict(_NO_TRACE),
            "why": why,
            "why_text": line,
        }


_NO_TRACE: dict[str, Any] = {"trace_id": None, "span_id": None, "traceparent": None}


def _trace_objects(cols: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """Each row's ``trace`` object, or None when no row of the chunk has an id."""
    hi, lo, span = (cols[n] for n in ("trace_hi", "trace_lo", "span_id"))
    if not (hi.any() or lo.any() or span.any()):
        return None
    out = []
    for h, low, s in zip(hi.tolist(), lo.tolist(), span.tolist()):
        trace = f"{h:016x}{low:016x}" if h or low else None
        span_id = f"{s:016x}" if s else None
        out.append(
            {
                "trace_id": trace,
                "span_id": span_id,
                "traceparent": f"00-{trace}-{span_id}-01" if trace and span_id else None,
            }
        )
    return out


#: Rows read at once by ``timing_totals`` (transient memory bounded by it, not the store).
_CHUNK_ROWS = 1 << 16
_PARTS = ("queue_s", "prefill_s", "decode_s", "latency_s")


def _chunks(
    extractor: ExtractorView, names: tuple[str, ...], rows: np.ndarray[Any, Any] | None
) -> Iterator[dict[str, Any]]:
    """The columns ``names`` a chunk of rows at a time (of ``rows`` only, when given)."""
    import numpy as np

    store = extractor.store
    n = len(store)
    picked = None if rows is None else np.unique(np.asarray(rows, dtype=np.int64))
    for first in range(0, n, _CHUNK_ROWS):
        last = min(first + _CHUNK_ROWS, n)
        if picked is None:
            yield store.numeric_view(first, last, names)
            continue
        lo, hi = np.searchsorted(picked, (first, last))
        if hi > lo:
            cols = store.numeric_view(first, last, names)
            local = picked[lo:hi] - first
            yield {name: values[local] for name, values in cols.items()}


def timing_totals(
    extractor: ExtractorView, rows: np.ndarray[Any, Any] | None = None
) -> tuple[doc.TimingTotals, doc.SlowTotals]:
    """``timing`` and ``slow`` over every request, or over ``rows`` (store rows)."""
    import numpy as np

    defaults = np.array(
        [TIMING_SOURCE_CODE[s] for s in file_sources(extractor)] or [0], dtype=np.int64
    )
    known: dict[str, list[Any]] = {name: [] for name in SECONDS_OUTPUT}
    counts = {name: np.zeros(len(TIMING_SOURCES), dtype=np.int64) for name in SECONDS_OUTPUT}
    names = (*TIMING_FIELDS, *TIMING_FROM.values(), "completion_tokens", "file")
    for cols in _chunks(extractor, names, rows):
        for name in SECONDS_OUTPUT:
            if name == "tpot_s":
                values = tpot(
                    cols["decode_s"], cols["latency_s"], cols["ttft_s"], cols["completion_tokens"]
                )
                code = np.full(int(np.count_nonzero(~np.isnan(values))), 0)
            else:
                values = cols[name]
                have = ~np.isnan(values)
                code = cols[TIMING_FROM[name]][have].astype(np.int64)
                code = np.where(code == 0, defaults[cols["file"][have].astype(np.int64)], code)
            known[name].append(values[~np.isnan(values)])
            counts[name] += np.bincount(code, minlength=len(TIMING_SOURCES))
    figures: dict[str, doc.TimingQuantiles] = {}
    for name in SECONDS_OUTPUT:
        parts = known.pop(name)
        q = sorted_quantiles(np.concatenate(parts) if parts else np.zeros(0, dtype=np.float32))
        if name == "tpot_s":
            sources = {_DERIVED: q.count} if q.count else {}
        else:
            sources = {TIMING_SOURCES[c]: int(k) for c, k in enumerate(counts[name]) if k}
        figures[name] = doc.TimingQuantiles(
            q.count, q.p50, q.p95, q.p99, q.max, dict(sorted(sources.items()))
        )
    return doc.TimingTotals(figures), _slow(extractor, rows)


def _slow(extractor: ExtractorView, rows: np.ndarray[Any, Any] | None) -> doc.SlowTotals:
    """The requests over the p95 latency (nearest rank), by dominant component."""
    import math

    import numpy as np

    by_component = dict.fromkeys((*COMPONENTS, "unknown"), 0)
    parts = [c["latency_s"] for c in _chunks(extractor, ("latency_s",), rows)]
    latency = np.concatenate(parts) if parts else np.zeros(0, dtype=np.float32)
    latency = latency[~np.isnan(latency)]
    if latency.size == 0:
        return doc.SlowTotals(None, 0, by_component)
    latency.sort()
    threshold = latency[max(math.ceil(0.95 * latency.size), 1) - 1]
    del latency
    over = 0
    for cols in _chunks(extractor, _PARTS, rows):
        slow = cols["latency_s"] > threshold
        if not slow.any():
            continue
        over += int(np.count_nonzero(slow))
        code, _, _ = dominant(*(cols[name][slow] for name in _PARTS))
        for c, name in enumerate(COMPONENTS):
            by_component[name] += int(np.count_nonzero(code == c))
        by_component["unknown"] += int(np.count_nonzero(code < 0))
    return doc.SlowTotals(round(float(threshold), 5), over, by_component)
