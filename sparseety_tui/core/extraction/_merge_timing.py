"""A request's timing as the store keeps it: where its time went, where each figure came
from, the W3C ids of its span, and which row a span joins.

The Merger (``core.extraction``) reads these from a request payload here, so that its own
hot path stays as it was for the many lines that carry none of them.

Where a figure comes from is a code per timing field (``core.store.TIMING_FROM``): 0 says
"as the row's file says" (a JSONL trace's records are ``trace``, a server log's lines
``log``), any other a ``TimingSource`` the payload named in ``timing_from``. A later value
wins, and so does its source: a line that sets a figure as its file says sets its code
back to 0 (``reset_sources``).

Spans join by request id: vLLM names a request inside its engine ``<id>-<8 hex>``, its API
id with a suffix, and its span carries that id. A span payload whose id has such a suffix
joins the row of ``<id>`` when there is one; else it makes its own row (under the id it
has) and ``RequestStore.span_aliases`` remembers it by ``<id>``, so a later line naming
the API id joins it: one row per request, whichever comes first.
"""

from __future__ import annotations

import re
from typing import Any

from sparseety_tui.core.extraction._merge_tokens import is_count
from sparseety_tui.core.store import (
    FLOAT32_MAX,
    NAN,
    PHASE_COLUMNS,
    TIMING_FIELDS,
    TIMING_FROM,
    TIMING_SOURCE_CODE,
    UNKNOWN,
    RequestStore,
)
from sparseety_tui.events import RequestPayload, TimingSource

#: Payload keys that make a request's timing more than its latency and TTFT.
TIMING_KEYS = frozenset((*PHASE_COLUMNS, "preemptions", "timing_from", "trace_id", "span_id"))
SPAN = TimingSource.SPAN.value
DERIVED_CODE = TIMING_SOURCE_CODE[TimingSource.DERIVED.value]
#: vLLM's engine-side request id: the API id and 8 lowercase hex digits.
_ENGINE_ID = re.compile(r"(.+)-[0-9a-f]{8}")
_TRACE_ID = re.compile(r"[0-9a-f]{32}")
_SPAN_ID = re.compile(r"[0-9a-f]{16}")

#: (preemptions, queue, prefill, decode, inference) of a payload that says none of them.
NO_PHASES: tuple[Any, ...] = (UNKNOWN, NAN, NAN, NAN, NAN)
#: Source codes (``TIMING_FROM`` order) and trace columns of a payload with no timing.
NO_SOURCES: tuple[int, ...] = (0,) * len(TIMING_FROM)
NO_TRACE: tuple[int, int, int] = (0, 0, 0)


def duration_or_nan(value: Any) -> float:
    """Seconds a float32 column holds: a number from 0 to ``FLOAT32_MAX``, else NaN."""
    if (type(value) is float or type(value) is int) and 0 <= value <= FLOAT32_MAX:
        return float(value)  # (an int compares exactly, however big)
    return NAN


def source_code(p: RequestPayload) -> int:
    """The code of the payload's ``timing_from`` (0: absent, or no source this knows)."""
    named: Any = p.get("timing_from")
    return TIMING_SOURCE_CODE.get(named, 0) if type(named) is str else 0


def timing_values(
    p: RequestPayload, latency: float, ttft: float
) -> tuple[tuple[Any, ...], tuple[int, ...], tuple[int, int, int]]:
    """(preemptions, queue, prefill, decode, inference), the source code of each timing
    field (``TIMING_FROM`` order: 0 where the payload does not set it) and the trace
    columns of a payload that has some ``TIMING_KEYS``; ``latency`` and ``ttft`` are its
    values as read (NaN: not set)."""
    get = p.get
    preemptions: Any = get("preemptions")
    phases = (
        preemptions if is_count(preemptions) else UNKNOWN,
        duration_or_nan(get("queue_s")),
        duration_or_nan(get("prefill_s")),
        duration_or_nan(get("decode_s")),
        duration_or_nan(get("inference_s")),
    )
    code = source_code(p)
    sources = NO_SOURCES
    if code:
        # TIMING_FIELDS order: a known duration (not NaN), a known count (not -1).
        _, queue, prefill, decode, inference = phases
        sources = (
            code if queue == queue else 0,
            code if prefill == prefill else 0,
            code if decode == decode else 0,
            code if inference == inference else 0,
            code if ttft == ttft else 0,
            code if latency == latency else 0,
            code if phases[0] != UNKNOWN else 0,
        )
    return phases, sources, trace_columns(get("trace_id"), get("span_id"))


def trace_columns(trace_id: Any, span_id: Any) -> tuple[int, int, int]:
    """(trace_hi, trace_lo, span_id) of W3C ids in lowercase hex; 0 for one that is not
    (an all-zero id is invalid in W3C, and is unknown here)."""
    hi = lo = span = 0
    if type(trace_id) is str and _TRACE_ID.fullmatch(trace_id):
        hi, lo = int(trace_id[:16], 16), int(trace_id[16:], 16)
    if type(span_id) is str and _SPAN_ID.fullmatch(span_id):
        span = int(span_id, 16)
    return hi, lo, span


def trace_ids(hi: int, lo: int, span: int) -> tuple[str | None, str | None]:
    """The W3C trace and span ids in lowercase hex (None: unknown)."""
    trace = f"{hi:016x}{lo:016x}" if hi or lo else None
    return trace, (f"{span:016x}" if span else None)


def reset_sources(store: RequestStore, row: int, p: RequestPayload) -> None:
    """A payload without ``timing_from`` set the timing fields it names as its file says:
    their codes go back to 0 (only called once some row has another code)."""
    columns = store.columns
    for name in TIMING_FIELDS:
        if name in p:
            value: Any = p[name]  # type: ignore[literal-required]
            known = is_count(value) if name == "preemptions" else duration_or_nan(value) == value
            codes = columns[TIMING_FROM[name]]
            if known and codes[row] != 0:
                codes[row] = 0


def span_row(store: RequestStore, rid: str, p: RequestPayload) -> int | None:
    """The row a request payload joins: its id's, else for a span named by vLLM's
    engine-side id the row of the API id, else for another payload the row a span made
    under the API id with a suffix (None: a new row)."""
    row = store.ids.find(rid)
    if row is not None:
        return row
    if p.get("timing_from") == SPAN:
        engine_side = _ENGINE_ID.fullmatch(rid)
        if engine_side is not None:
            return store.ids.find(engine_side.group(1))
        return None
    return store.span_aliases.get(rid) if store.span_aliases else None


def note_span_row(store: RequestStore, rid: str, row: int, p: RequestPayload) -> None:
    """A span made row ``row`` under ``rid``: remember it by its API id when ``rid`` is
    an engine-side id."""
    if p.get("timing_from") == SPAN:
        engine_side = _ENGINE_ID.fullmatch(rid)
        if engine_side is not None:
            store.span_aliases.setdefault(engine_side.group(1), row)
