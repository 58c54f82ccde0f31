"""Column-at-a-time ingestion of simple request records (the big-request-log fast path).

Semantics are those of ``Extractor._request_values`` (one request line -> one row); this
module only changes *how* they are computed: a list comprehension per field and numpy
for the arithmetic, instead of ~25 dict lookups and ~20 appends per line. A block is
taken only when every value has the type the per-line path expects and every request id
is new; otherwise ``append_block`` returns False and the caller takes the per-line path,
so odd input is never handled differently. A test holds both paths equal.

Blocks arrive two ways: as a tuple of values per field from the Python decoder
(``append_block``), or as typed columns from the native scanner (``append_scanned``,
formats/trace_native.py). Both end in ``append_typed``, the one place the rules that
combine fields are applied.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

from sparseety_tui.core.store import (
    COUNT_REPORTED,
    FLOAT32_MAX,
    INT_COLUMNS,
    KV_SKIP_NAMES,
    ROW_LAYOUT,
    STATE_CODE,
    UNKNOWN,
    EncodedIds,
    RequestStore,
)
from sparseety_tui.formats.timestamps import TIME_END, parse_timestamp
from sparseety_tui.formats.trace_native import OUTCOME_BITS, ScanResult

_FINISHED = STATE_CODE["finished"]
#: Store columns that only a per-line merge sets: sampling parameters (a record with
#: ``sampling`` is not simple) and the bound core.lifecycle gives an unlogged end.
_NOT_IN_SIMPLE_RECORDS = ("max_tokens", "sampling_n", "temperature", "top_p", "ended_by_ts")


def _int_column(values: tuple[Any, ...] | None, n: int) -> Any | None:
    """int32 column, -1 for absent/negative; None if any value is not a plain int."""
    import numpy as np

    if values is None:
        return np.full(n, UNKNOWN, dtype=np.int32)
    kinds = set(map(type, values))
    if kinds != {int}:
        if not kinds <= {int, type(None)}:
            return None
        values = tuple(UNKNOWN if v is None else v for v in values)
    try:
        column = np.array(values, dtype=np.int32)
    except OverflowError:
        return None  # a count beyond int32: the per-line path says why
    column[column < 0] = UNKNOWN
    return column


def _float_column(values: tuple[Any, ...] | None, n: int) -> Any | None:
    """float64 column, NaN for absent/negative; None if a value is not a number."""
    import numpy as np

    if values is None:
        return np.full(n, math.nan)
    kinds = set(map(type, values))
    if not kinds <= {int, float}:
        if not kinds <= {int, float, type(None)}:
            return None
        values = tuple(math.nan if v is None else v for v in values)
    column = np.array(values, dtype=np.float64)
    column[column < 0] = math.nan
    return column


def _iso_fixed(values: tuple[str, ...]) -> Any | None:
    """Vectorised ``YYYY-MM-DD[T ]HH:MM:SS[.fff[fff]][Z]`` (all one length) -> unix seconds.

    The same value ``datetime.fromisoformat(...).timestamp()`` gives (whole microseconds
    over 1e6), or None when any string is not exactly this shape or not a real date, so
    the caller falls back to a general parser. ~50 ns a value instead of ~750 for numpy's
    datetime64 parsing.
    """
    import numpy as np

    length = len(values[0])
    zulu = values[0].endswith("Z")
    body = length - zulu
    if body not in (19, 23, 26) or set(map(len, values)) != {length}:
        return None
    try:
        raw = np.array(values, dtype=f"S{length}")
    except UnicodeEncodeError:
        return None
    u = np.frombuffer(raw.tobytes(), dtype=np.uint8).reshape(len(values), length)
    seps = ((4, b"-"), (7, b"-"), (13, b":"), (16, b":")) + (((19, b"."),) if body > 19 else ())
    for pos, char in seps:
        if not (u[:, pos] == ord(char)).all():
            return None
    if not ((u[:, 10] == ord("T")) | (u[:, 10] == ord(" "))).all():
        return None
    if zulu and not (u[:, length - 1] == ord("Z")).all():
        return None
    digit_pos = [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18, *range(20, body)]
    d = u[:, digit_pos].astype(np.int64) - ord("0")
    if ((d < 0) | (d > 9)).any():
        return None
    year = d[:, 0] * 1000 + d[:, 1] * 100 + d[:, 2] * 10 + d[:, 3]
    month = d[:, 4] * 10 + d[:, 5]
    day = d[:, 6] * 10 + d[:, 7]
    hour, minute, second = (
        d[:, 8] * 10 + d[:, 9],
        d[:, 10] * 10 + d[:, 11],
        d[:, 12] * 10 + d[:, 13],
    )
    micros = np.zeros(len(values), dtype=np.int64)
    for i in range(14, d.shape[1]):  # 3 or 6 fraction digits
        micros = micros * 10 + d[:, i]
    micros *= 10 ** (6 - (d.shape[1] - 14)) if d.shape[1] > 14 else 1
    leap = ((year % 4 == 0) & (year % 100 != 0)) | (year % 400 == 0)
    month_days = np.array([0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])
    valid = (
        (year >= 1)
        & (month >= 1)
        & (month <= 12)
        & (day >= 1)
        & (hour < 24)
        & (minute < 60)
        & (second < 60)
    )
    if not valid.all():
        return None
    if not (day <= month_days[month] + ((month == 2) & leap)).all():
        return None
    # Days from the civil date (H. Hinnant's algorithm), proleptic Gregorian.
    y = year - (month <= 2)
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (month + np.where(month > 2, -3, 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    days = era * 146097 + doe - 719468
    seconds = days * 86400 + hour * 3600 + minute * 60 + second
    total = seconds * 1_000_000 + micros
    # Python divides the exact integer; so does this while int64 -> float64 is exact
    # (until the year 2255): later dates take the general parser.
    if (np.abs(total) > 2**53).any():
        return None
    return total / 1e6


def _time_column(values: tuple[Any, ...] | None, n: int) -> Any | None:
    """Unix seconds; ISO strings parsed as UTC when naive, others as the per-line path.
    None when a value is no timestamp or out of range: the per-line path counts each
    such value as ignored (``LineParser.ignored``)."""
    import numpy as np

    if values is None:
        return np.full(n, math.nan)
    if set(map(type, values)) == {str}:
        fast = _iso_fixed(values)
        if fast is None:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # numpy's note that it drops the zone
                    stamps = np.array(values).astype("datetime64[us]")
            except ValueError:
                stamps = None
            if stamps is not None and not np.isnat(stamps).any():
                fast = stamps.astype(np.int64) / 1e6
        if fast is not None:
            return fast if ((fast >= 0) & (fast < TIME_END)).all() else None
    parsed = [parse_timestamp(v) if v is not None else math.nan for v in values]
    if None in parsed:
        return None
    return np.array(parsed, dtype=np.float64)


def _codes(values: tuple[Any, ...] | None, n: int, table: dict[str, int]) -> Any | None:
    """uint8 codes of names (0 when absent or unknown); None for a non-string value."""
    import numpy as np

    if values is None:
        return np.zeros(n, dtype=np.uint8)
    if not set(map(type, values)) <= {str, type(None)}:
        return None
    lookup = {name: table.get(name, 0) for name in set(values) if name is not None}
    lookup[None] = 0
    return np.array([lookup[v] for v in values], dtype=np.uint8)


@dataclass
class TypedBlock:
    """One block of request records as typed columns, before the cross-field rules.

    Unknown is -1 (counts), NaN (seconds and times) or 0 (codes), as in the store.
    """

    counts: dict[str, Any]  # COUNT_COLUMNS -> int32
    latency_s: Any  # float64
    ttft_s: Any
    ts: Any  # unix seconds, float64
    received_ts: Any
    finished_ts: Any
    state: Any  # uint8 STATE_CODE
    finishing: Any  # bool: no state, or a final one ("finished", "aborted")
    starting: Any  # bool: "received" or "running"
    reports_outcome: Any  # bool: the line has completion_tokens or latency_s
    kv_skip: Any  # uint8 KV_SKIP_NAMES code
    cache_hit: Any  # uint8: 0 unknown, 1 miss, 2 hit
    model: Any  # uint16 store model code


#: Count fields in their column order: (request key, store column).
COUNT_FIELDS = (
    ("prompt_tokens", "prompt_tokens"),
    ("completion_tokens", "completion_tokens"),
    ("cached_tokens", "cached_tokens"),
    ("sparse.topk_experts", "topk_experts"),
    ("sparse.total_experts", "total_experts"),
    ("sparse.skipped_attention_heads", "skipped_heads"),
    ("sparse.total_attention_heads", "total_heads"),
    ("sparse.kv_kept", "kv_kept"),
    ("sparse.kv_total", "kv_total"),
)


def append_block(
    store: RequestStore,
    columns_in: dict[str, tuple[Any, ...]],
    file: int,
    offsets: list[int],
    lengths: list[int],
    first_line_no: int,
) -> bool:
    """Append one row per record; False (and nothing changed) if the block is not simple."""
    import numpy as np

    ids = list(columns_in["request_id"])
    n = len(ids)
    if len(set(ids)) != n or "" in ids or store.ids.any_present(ids):
        return False
    get = columns_in.get
    counts: dict[str, Any] = {}
    for key, name in COUNT_FIELDS:
        column = _int_column(get(key), n)
        if column is None:
            return False
        counts[name] = column
    latency = _float_column(get("latency_s"), n)
    ttft = _float_column(get("ttft_s"), n)
    kv_skip = _codes(get("sparse.kv_skip"), n, KV_SKIP_NAMES)
    state = _codes(get("state"), n, STATE_CODE)
    if latency is None or ttft is None or kv_skip is None or state is None:
        return False
    state_names = get("state")
    if state_names is None:
        finishing = np.ones(n, dtype=bool)
        starting = np.zeros(n, dtype=bool)
    else:
        finishing = np.array([s is None or s in ("finished", "aborted") for s in state_names])
        starting = np.array([s in ("received", "running") for s in state_names])
    ts = _time_column(get("ts"), n)
    received_ts = _time_column(get("received_ts"), n)
    finished_ts = _time_column(get("finished_ts"), n)
    if ts is None or received_ts is None or finished_ts is None:
        return False
    hits = get("cache_hit")
    block = TypedBlock(
        counts=counts,
        latency_s=latency,
        ttft_s=ttft,
        ts=ts,
        received_ts=received_ts,
        finished_ts=finished_ts,
        state=state,
        finishing=finishing,
        starting=starting,
        reports_outcome=np.full(n, "completion_tokens" in columns_in or "latency_s" in columns_in),
        kv_skip=kv_skip,
        cache_hit=(
            np.zeros(n, dtype=np.uint8)
            if hits is None
            else np.array([0 if h is None else (2 if h else 1) for h in hits], dtype=np.uint8)
        ),
        model=_model_codes(store, get("model"), n),
    )
    append_typed(store, ids, block, file, offsets, lengths, first_line_no)
    return True


def _model_codes(store: RequestStore, models: tuple[Any, ...] | None, n: int) -> Any:
    import numpy as np

    if models is None:
        return np.zeros(n, dtype=np.uint16)
    names = [m for m in dict.fromkeys(models) if type(m) is str]  # first-seen order
    codes: dict[Any, int] = {m: store.model_code(m) for m in names}
    if set(map(type, models)) <= {str, type(None)}:
        codes[None] = 0
        return np.fromiter(map(codes.__getitem__, models), dtype=np.uint16, count=n)
    # odd values (numbers, lists) name no model, as on the per-line path
    return np.array([codes.get(m, 0) if type(m) is str else 0 for m in models], dtype=np.uint16)


def append_typed(
    store: RequestStore,
    ids: list[str] | EncodedIds,
    block: TypedBlock,
    file: int,
    offsets: Any,
    lengths: Any,
    first_line_no: int,
) -> None:
    """Apply the rules that combine fields (as ``Extractor._on_request`` does for one
    line) and append the rows. The caller has checked that every id is new."""
    import numpy as np

    n = len(ids)
    out: dict[str, Any] = dict(block.counts)
    # Beyond float32 a duration would be stored as infinity: unknown, as per line.
    latency = np.where(block.latency_s <= FLOAT32_MAX, block.latency_s, math.nan)
    out["latency_s"] = latency
    out["ttft_s"] = np.where(block.ttft_s <= FLOAT32_MAX, block.ttft_s, math.nan)
    out["kv_skip"] = block.kv_skip
    # A line that reports an outcome and no state is a finished request (as per line).
    out["state"] = np.where((block.state == 0) & block.reports_outcome, _FINISHED, block.state)
    ts = block.ts
    finished = np.where(np.isnan(block.finished_ts) & block.finishing, ts, block.finished_ts)
    received = np.where(np.isnan(block.received_ts) & block.starting, ts, block.received_ts)
    # The per-line path derives the start from the float32 latency it stored: do the same.
    derived = finished - latency.astype(np.float32).astype(np.float64)
    derived[~((derived >= 0) & (derived < TIME_END))] = math.nan  # no date: no start
    out["received_ts"] = np.where(np.isnan(received), derived, received)
    out["finished_ts"] = finished
    out["cache_hit"] = block.cache_hit
    out["prompt_source"] = np.where(out["prompt_tokens"] >= 0, COUNT_REPORTED, 0)
    out["completion_source"] = np.where(out["completion_tokens"] >= 0, COUNT_REPORTED, 0)
    out["model"] = block.model
    # Columns no simple record fills (a record with ``sampling`` takes the per-line path).
    for name in _NOT_IN_SIMPLE_RECORDS:
        out[name] = np.full(n, UNKNOWN if name in INT_COLUMNS else math.nan)
    store.extend_rows(
        ids,
        {name: out[name] for name in ROW_LAYOUT},
        file,
        offsets,
        lengths,
        np.arange(first_line_no, first_line_no + n, dtype=np.int32),
    )


def append_scanned(
    store: RequestStore, scan: ScanResult, file: int, base_offset: int, first_line_no: int
) -> bool:
    """Append the records of one native scan (formats/trace_native.py); False (and nothing
    changed) if an id repeats or is already known: the caller takes the per-line path."""
    import numpy as np

    n = scan.n
    ids = EncodedIds(
        scan.id_blob,
        np.frombuffer(scan.id_ends, dtype=np.int64),
        np.frombuffer(scan.id_hashes, dtype=np.int64),
    )
    if not store.ids.all_new(ids):
        return False
    counts = np.frombuffer(scan.counts, dtype=np.int32).reshape(len(COUNT_FIELDS), n)
    latency, ttft, ts, received, finished = np.frombuffer(scan.floats, dtype=np.float64).reshape(
        5, n
    )
    models, states, kv_skips = np.frombuffer(scan.names, dtype=np.uint8).reshape(3, n)
    model_names, state_names, kv_names = scan.name_tables
    # Index 0 of every lookup is "absent or null".
    model_codes = np.array([0, *map(store.model_code, model_names)], dtype=np.uint16)
    state_codes = np.array([0, *(STATE_CODE.get(s, 0) for s in state_names)], dtype=np.uint8)
    finishing = np.array([True, *(s in ("finished", "aborted") for s in state_names)])
    starting = np.array([False, *(s in ("received", "running") for s in state_names)])
    kv_codes = np.array([0, *(KV_SKIP_NAMES.get(k, 0) for k in kv_names)], dtype=np.uint8)
    block = TypedBlock(
        counts={name: counts[i] for i, (_, name) in enumerate(COUNT_FIELDS)},
        latency_s=latency,
        ttft_s=ttft,
        ts=ts,
        received_ts=received,
        finished_ts=finished,
        state=state_codes[states],
        finishing=finishing[states],
        starting=starting[states],
        reports_outcome=(np.frombuffer(scan.present, dtype=np.uint32) & OUTCOME_BITS) != 0,
        kv_skip=kv_codes[kv_skips],
        cache_hit=np.frombuffer(scan.cache_hit, dtype=np.uint8),
        model=model_codes[models],
    )
    offsets = np.frombuffer(scan.offsets, dtype=np.int64) + base_offset
    append_typed(
        store,
        ids,
        block,
        file,
        offsets,
        np.frombuffer(scan.lengths, dtype=np.uint32),
        first_line_no,
    )
    return True
