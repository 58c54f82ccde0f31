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


class WhyTable:
    """Each request's dominant component, its peers and their median, for every row of
    a store at once (peers are found over all rows, whatever rows an output shows)."""

    def __init__(self, extractor: ExtractorView) -> None:
        import numpy as np

        store = extractor.store
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
        self.arrival = ArrivalStates(extractor.engine)
        self.paths = [f.path for f in extractor.files]

    def why(self, row: int, received: float, file: int) -> tuple[dict[str, Any] | None, str | None]:
        """The ``why`` object and line of ``row`` (None, None: no component known)."""
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
    ``cols``: those rows' ``numeric_view`` (``TIMING_READS`` at least)."""
    defaults = file_sources(extractor)
    values = {name: cols[name].tolist() for name in TIMING_FIELDS}
    values["tpot_s"] = tpot(
        cols["decode_s"], cols["latency_s"], cols["ttft_s"], cols["completion_tokens"]
    ).tolist()
    codes = {name: cols[code].tolist() for name, code in TIMING_FROM.items()}
    hi, lo, span = (cols[n].tolist() for n in ("trace_hi", "trace_lo", "span_id"))
    files, received = cols["file"].tolist(), cols["received_ts"].tolist()
    for i in range(last - first):
        timing: dict[str, Any] = {}
        sources: dict[str, str] = {}
        for name in TIMING_OUTPUT:
            value = values[name][i]
            if value != value:
                timing[name] = None
                continue
            timing[name] = int(value) if name == "preemptions" else round(value, 5)
            if name == "tpot_s":
                sources[name] = _DERIVED
            else:
                code = codes[name][i]
                sources[name] = TIMING_SOURCES[code] if code else defaults[int(files[i])]
        trace = f"{hi[i]:016x}{lo[i]:016x}" if hi[i] or lo[i] else None
        span_id = f"{span[i]:016x}" if span[i] else None
        why, line = table.why(first + i, received[i], int(files[i]))
        yield {
            "timing": timing,
            "timing_from": sources,
            "trace": {
                "trace_id": trace,
                "span_id": span_id,
                "traceparent": f"00-{trace}-{span_id}-01" if trace and span_id else None,
            },
            "why": why,
            "why_text": line,
        }


def timing_totals(
    extractor: ExtractorView, rows: np.ndarray[Any, Any] | None = None
) -> tuple[doc.TimingTotals, doc.SlowTotals]:
    """``timing`` and ``slow`` over every request, or over ``rows`` (store rows)."""
    import numpy as np

    store = extractor.store
    names = (*TIMING_FIELDS, *TIMING_FROM.values(), "completion_tokens", "file")
    cols = store.numeric_view(0, len(store), names)
    if rows is not None:
        picked = np.unique(np.asarray(rows, dtype=np.int64))
        cols = {name: values[picked] for name, values in cols.items()}
    defaults = np.array(
        [TIMING_SOURCE_CODE[s] for s in file_sources(extractor)] or [0], dtype=np.int64
    )
    figures: dict[str, doc.TimingQuantiles] = {}
    for name in SECONDS_OUTPUT:
        if name == "tpot_s":
            values = tpot(
                cols["decode_s"], cols["latency_s"], cols["ttft_s"], cols["completion_tokens"]
            )
            sources = {_DERIVED: int(np.count_nonzero(~np.isnan(values)))}
        else:
            values = cols[name]
            known = ~np.isnan(values)
            code = cols[TIMING_FROM[name]][known].astype(np.int64)
            code = np.where(code == 0, defaults[cols["file"][known].astype(np.int64)], code)
            counts = np.bincount(code, minlength=len(TIMING_SOURCES))
            sources = {TIMING_SOURCES[c]: int(n) for c, n in enumerate(counts) if n}
        quantiles = sorted_quantiles(values[~np.isnan(values)].copy())
        figures[name] = doc.TimingQuantiles(
            quantiles.count,
            quantiles.p50,
            quantiles.p95,
            quantiles.p99,
            quantiles.max,
            dict(sorted(sources.items())) if quantiles.count else {},
        )
    return doc.TimingTotals(figures), _slow(cols)


def _slow(cols: Mapping[str, Any]) -> doc.SlowTotals:
    """The requests over the p95 latency, by dominant component."""
    import math

    import numpy as np

    latency = cols["latency_s"]
    known = np.sort(latency[~np.isnan(latency)])
    by_component = dict.fromkeys((*COMPONENTS, "unknown"), 0)
    if known.size == 0:
        return doc.SlowTotals(None, 0, by_component)
    threshold = known[max(math.ceil(0.95 * known.size), 1) - 1]
    over = latency > threshold
    code, _, _ = dominant(
        cols["queue_s"][over], cols["prefill_s"][over], cols["decode_s"][over], latency[over]
    )
    for c, name in enumerate(COMPONENTS):
        by_component[name] = int(np.count_nonzero(code == c))
    by_component["unknown"] = int(np.count_nonzero(code < 0))
    return doc.SlowTotals(round(float(threshold), 5), int(np.count_nonzero(over)), by_component)
