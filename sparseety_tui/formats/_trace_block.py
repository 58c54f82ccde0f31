"""The pure-Python fast path of JSONL request records: a block of same-shaped simple
records decoded at once (``formats._trace.decode_simple_block``) and made typed columns,
a ``Batch`` of complete request records (sparseety_tui.batch) for core's applier.

Semantics are those of the per-line path (one request line -> one row); this module only
changes *how* they are computed: a list comprehension per field and numpy for the
arithmetic. A block is given only when every value has the type the per-line path
expects; otherwise ``block_batch`` returns None and the caller takes the per-line path,
so odd input is never handled differently. A test holds both paths equal.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

from sparseety_tui.batch import RECORD_COUNT_COLUMNS, Batch, Names, NewRows, RecordFields
from sparseety_tui.events import LineKind
from sparseety_tui.formats._timestamps import TIME_END, parse_timestamp
from sparseety_tui.formats._trace import decode_simple_block

#: Unknown in a count column.
UNKNOWN = -1
#: Count fields, by record key, in ``RECORD_COUNT_COLUMNS`` order.
COUNT_KEYS = (
    "prompt_tokens",
    "completion_tokens",
    "cached_tokens",
    "sparse.topk_experts",
    "sparse.total_experts",
    "sparse.skipped_attention_heads",
    "sparse.total_attention_heads",
    "sparse.kv_kept",
    "sparse.kv_total",
)


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


def _names(values: tuple[Any, ...] | None, n: int) -> Names | None:
    """A names column (0 when absent); None for a value that is not a string."""
    import numpy as np

    if values is None:
        return Names((), np.zeros(n, dtype=np.uint8))
    if not set(map(type, values)) <= {str, type(None)}:
        return None
    table = [v for v in dict.fromkeys(values) if v is not None]  # first-seen order
    lookup: dict[Any, int] = {name: i + 1 for i, name in enumerate(table)}
    lookup[None] = 0
    return Names(table, np.array([lookup[v] for v in values], dtype=np.uint16))


def _models(values: tuple[Any, ...] | None, n: int) -> Names | None:
    """Model names; a value that is not a string (a number, a list) names no model, as on
    the per-line path."""
    import numpy as np

    if values is None:
        return Names((), np.zeros(n, dtype=np.uint8))
    table = [m for m in dict.fromkeys(values) if type(m) is str]  # first-seen order
    lookup = {name: i + 1 for i, name in enumerate(table)}
    codes = [lookup.get(m, 0) if type(m) is str else 0 for m in values]
    return Names(table, np.array(codes, dtype=np.uint16))


def block_batch(lines: list[bytes]) -> Batch | None:
    """The block's records as a batch (offsets not set: the caller knows them), or None
    when any line needs the per-line path."""
    import numpy as np

    columns_in = decode_simple_block(lines)
    if columns_in is None:
        return None
    ids = list(columns_in["request_id"])
    n = len(ids)
    get = columns_in.get
    counts: dict[str, Any] = {}
    for key, name in zip(COUNT_KEYS, RECORD_COUNT_COLUMNS):
        column = _int_column(get(key), n)
        if column is None:
            return None
        counts[name] = column
    times = {
        "latency_s": _float_column(get("latency_s"), n),
        "ttft_s": _float_column(get("ttft_s"), n),
        "ts": _time_column(get("ts"), n),
        "received_ts": _time_column(get("received_ts"), n),
        "finished_ts": _time_column(get("finished_ts"), n),
    }
    kv_skip = _names(get("sparse.kv_skip"), n)
    state = _names(get("state"), n)
    model = _models(get("model"), n)
    if kv_skip is None or state is None or model is None or any(v is None for v in times.values()):
        return None
    hits = get("cache_hit")
    record = RecordFields(
        counts=counts,
        times=times,
        model=model,
        kv_skip=kv_skip,
        cache_hit=(
            np.zeros(n, dtype=np.uint8)
            if hits is None
            else np.array([0 if h is None else (2 if h else 1) for h in hits], dtype=np.uint8)
        ),
        reports_outcome=np.full(n, "completion_tokens" in columns_in or "latency_s" in columns_in),
    )
    return Batch(
        n,
        0,
        0,
        counts=((0, LineKind.TRACE_REQUEST, n),),
        rows=NewRows(ids, state, {}, record),
    )
