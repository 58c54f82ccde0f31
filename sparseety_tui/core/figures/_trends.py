"""Per-minute trends: what the trends screen plots, so "since when" is one look.

One value per wall-clock minute (UTC) per series, over the minutes the input covers (from its
first timestamp to its last, all sources together), at most ``MAX_MINUTES`` of them (the
latest: a day; the cost is bounded by that, not by the log's span):

- **latency / TTFT** p50, p95, p99 of the requests that ended in the minute (nearest rank,
  as ``_totals.sorted_quantiles``). A request's end is its finish time, else its arrival plus
  its latency. A minute where no request ended has no percentile: None, a gap.
- **queue / prefill / decode**: the p95 of each part of the latency over the requests that
  ended in the minute and know that part (a gap where none did).
- **tokens/s** prompt and generation: the engine's own throughput where its stats lines log
  it (``core.figures.per_minute``: engines summed; SGLang prefill lines without an input
  throughput give prefill tokens/s as their ``#new-token`` sum / 60), else the tokens of the requests counted
  in the minute divided by 60 (``_sums._per_minute``, on the same time as
  ``summary``'s ``throughput_per_minute``). The trend names the source it used.
- **requests/s**: requests finished in the minute / 60, and received / 60 (finished only
  when finish times are logged for most requests: ``_sums.throughput_basis``).
- **cache hit rate**: cached / prompt tokens of the minute's requests that report both;
  else the engine's cached / (cached + new) prefill tokens; else the mean of the engine's
  ``prefix_cache_hit_rate`` over its recent stats lines (``core.store.STATS_POINTS``).
- **queue** (waiting requests, SGLang ``#queue-req``) and **KV usage**: fleet means per minute.
- **errors and HTTP 5xx** per minute, from an error log's per-minute counts when one is given,
  else from the recent error samples (minutes before the oldest kept sample are then
  unknown when samples were dropped; 5xx cannot be told from them, so it is unknown).

Unknown is None, never 0: a count (requests, errors) is 0 only in a minute the input
covers; an engine figure is None in a minute with no stats line.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from sparseety_tui.core.figures import _fleet as fleet
from sparseety_tui.core.figures._sums import CHUNK_ROWS, _per_minute, throughput_basis
from sparseety_tui.core.figures._totals import QUANTILES
from sparseety_tui.core.figures._trend_lines import Line, Trend, Trends, Value, is_date_seconds
from sparseety_tui.core.figures._trends_engine import (
    engine_line,
    engine_trend,
    points_ratio,
    prefill_line,
)
from sparseety_tui.core.store import EngineSeries
from sparseety_tui.formats import TIME_END

if TYPE_CHECKING:
    from sparseety_tui.core.store import ExtractorView

#: The most minutes a trend holds (the latest ones): a day.
MAX_MINUTES = 1440
#: The error kind of HTTP 5xx access lines in an error log's per-minute counts.
HTTP_5XX = "http_5xx"


def compute_trends(
    state: ExtractorView,
    *,
    since: float | None = None,
    until: float | None = None,
    rows: Any = None,
    max_minutes: int = MAX_MINUTES,
) -> Trends:
    """The trends of ``state`` (module docstring); errors from its error log's exact
    per-minute counts. ``since`` /
    ``until`` (unix s): only the minutes of that window. ``rows``: the store rows the
    request trends count (a filtered view), None for every row."""
    req = _request_columns(state, rows)
    engines = fleet.fleet(state.engine).engines
    engine_minutes = fleet.per_minute(engines)  # {minute start s: (engines, figures)}
    errors = state.error_log.per_minute

    seen: list[float] = []
    for times in (req["end"], req["received"]):
        if times.size:
            seen += [float(times.min()), float(times.max())]
    seen += [m for m in engine_minutes if is_date_seconds(m)]
    seen += [m for m in errors if is_date_seconds(m)]
    if not seen:
        return Trends((), ())
    first, last = int(min(seen) // 60), int(max(seen) // 60)
    if since is not None:
        first = max(first, int(since // 60))
    if until is not None:  # exclusive: a window to 12:03 ends with the minute 12:02
        last = min(last, math.ceil(until / 60) - 1)
    if last < first:
        return Trends((), ())
    older = 0
    if last - first + 1 > max_minutes:
        older = _minutes_with_data(req, engine_minutes, errors, first, last - max_minutes + 1)
        first = last - max_minutes + 1
    count = last - first + 1
    minutes = tuple(60 * (first + i) for i in range(count))
    trends = [
        _percentiles("latency", "latency", req["end"], req["latency"], first, count),
        _percentiles("ttft", "TTFT", req["end"], req["ttft"], first, count),
        _parts(req, first, count),
        _tokens(req, engine_minutes, minutes, first, count),
        _requests(req, first, count),
        _errors(errors, minutes),
        _cache(req, engine_minutes, state.engine, minutes, first, count),
        engine_trend(
            "queue",
            "queue",
            "requests",
            engine_minutes,
            minutes,
            (("waiting", "waiting", 1.0), ("queue-req", "queued", 1.0)),
        ),
        engine_trend(
            "kv", "KV cache usage", "%", engine_minutes, minutes, (("KV", "kv_usage", 100.0),)
        ),
    ]
    return Trends(minutes, tuple(trends), older)


# -- inputs ------------------------------------------------------------------------------------


def _dates(values: Any) -> Any:
    return (values >= 0) & (values < TIME_END)  # NaN is neither


def _request_columns(state: ExtractorView, rows: Any) -> dict[str, Any]:
    """The columns the request trends need, chunk by chunk (``_sums.CHUNK_ROWS``), as
    float64: ``end`` (finish time, else arrival + latency) with the latency and TTFT of the
    requests that have an end; ``received``; and ``cols`` (the raw columns, for
    ``_per_minute``)."""
    import numpy as np

    store = state.store
    n = len(store)
    keep = rows_mask(n, rows)
    parts: dict[str, list[Any]] = {}
    names = (
        "finished_ts",
        "received_ts",
        "latency_s",
        "ttft_s",
        "prompt_tokens",
        "completion_tokens",
        "cached_tokens",
        *PARTS,
    )
    for start in range(0, n, CHUNK_ROWS):
        stop = min(start + CHUNK_ROWS, n)
        cols = store.numeric_view(start, stop, names)
        mask = keep[start:stop] if keep is not None else slice(None)
        for name in names:
            parts.setdefault(name, []).append(np.asarray(cols[name], dtype=np.float64)[mask])
    cols = {name: np.concatenate(parts[name]) if name in parts else np.zeros(0) for name in names}
    received, latency = cols["received_ts"], cols["latency_s"]
    end = request_end(cols)
    has_end = _dates(end)
    return {
        "cols": cols,
        "memo": {},  # per-minute counts by time column (_count_minutes)
        "end": end[has_end],
        "latency": latency[has_end],
        "ttft": cols["ttft_s"][has_end],
        **{name: cols[name][has_end] for name in PARTS},
        "received": received[_dates(received)],
    }


def rows_mask(n: int, rows: Any) -> Any:
    """A boolean mask over ``n`` store rows of the ``rows`` given (None: None, every row)."""
    import numpy as np

    if rows is None:
        return None
    keep = np.zeros(n, dtype=bool)
    wanted = np.asarray(rows, dtype=np.int64)
    keep[wanted[(wanted >= 0) & (wanted < n)]] = True
    return keep


def request_end(cols: Mapping[str, Any]) -> Any:
    """Each request's end as the request trends count it: its finish time, else its
    arrival plus its latency (NaN or no date when neither is known)."""
    import numpy as np

    finished = np.asarray(cols["finished_ts"], dtype=np.float64)
    received = np.asarray(cols["received_ts"], dtype=np.float64)
    latency = np.asarray(cols["latency_s"], dtype=np.float64)
    return np.where(_dates(finished), finished, received + latency)


def is_date(values: Any) -> Any:
    """Which of ``values`` (unix s) are dates (NaN is not)."""
    return _dates(values)


def _minutes_with_data(
    req: Mapping[str, Any],
    engine_minutes: Mapping[int, Any],
    errors: Mapping[int, Any],
    first: int,
    stop: int,
) -> int:
    """How many minutes in [first, stop) (minute numbers) have any data: what the cap on
    minutes leaves out."""
    import numpy as np

    found: set[int] = set()
    for times in (req["end"], req["received"]):
        m = (times // 60).astype(np.int64)
        found.update(np.unique(m[(m >= first) & (m < stop)]).tolist())
    found.update(m // 60 for m in (*engine_minutes, *errors) if first <= m // 60 < stop)
    return len(found)


# -- trends ------------------------------------------------------------------------------------


def _percentiles(key: str, title: str, end: Any, values: Any, first: int, count: int) -> Trend:
    lines = [
        Line(name, _to_tuple(column))
        for (name, _), column in zip(
            QUANTILES, minute_quantiles(end, values, first, count, [q for _, q in QUANTILES])
        )
    ]
    return Trend(key, title, "s", "requests that ended in the minute", tuple(lines))


#: The parts of a latency the trends give the p95 of, per minute.
PARTS = ("queue_s", "prefill_s", "decode_s")
PARTS_P95 = 0.95


def _parts(req: Mapping[str, Any], first: int, count: int) -> Trend:
    """The p95 of queue, prefill and decode per minute (no line for a part no request of
    the minutes shown knows)."""
    lines = []
    for name in PARTS:
        (column,) = minute_quantiles(req["end"], req[name], first, count, [PARTS_P95])
        line = Line(name.removesuffix("_s"), _to_tuple(column))
        if line.known:
            lines.append(line)
    source = "p95 of the requests that ended in the minute"
    return Trend("parts", "time per part p95", "s", source, tuple(lines))


def minute_quantiles(
    times: Any, values: Any, first: int, count: int, qs: Sequence[float]
) -> list[Any]:
    """Nearest-rank quantiles ``qs`` of ``values`` per minute of ``times`` (unix s), for the
    ``count`` minutes from minute number ``first``: one float array each, NaN where no
    value fell in the minute. Vectorised: one sort of (minute, value)."""
    import numpy as np

    index = (times // 60).astype(np.int64) - first
    keep = ~np.isnan(values) & (index >= 0) & (index < count)
    index, known = index[keep], values[keep].astype(np.float64)
    # By minute, then by value: a stable sort by minute of the values sorted (two argsorts
    # beat np.lexsort here).
    by_value = np.argsort(known)
    order = by_value[np.argsort(index[by_value], kind="stable")]
    index, known = index[order], known[order]
    per_minute = np.bincount(index, minlength=count)
    starts = np.concatenate(([0], np.cumsum(per_minute)[:-1]))
    has = per_minute > 0
    out = []
    for q in qs:
        rank = np.maximum(np.ceil(q * per_minute), 1).astype(np.int64)
        column = np.full(count, np.nan)
        column[has] = known[(starts + rank - 1)[has]]
        out.append(column)
    return out


def _to_tuple(column: Any) -> tuple[Value, ...]:
    return tuple(None if v != v else float(v) for v in column.tolist())


def _count_minutes(
    req: Mapping[str, Any], time_column: str, first: int, count: int
) -> tuple[dict[int, list[int]], int]:
    """``_sums._per_minute`` over the requests whose ``time_column`` falls in the
    minutes shown (the rest cannot change a row shown); memoised in ``req``."""
    import numpy as np

    memo = req["memo"]
    if time_column not in memo:
        cols = req["cols"]
        times = cols[time_column]
        inside = (times >= 60 * first) & (times < 60 * (first + count))
        part = {name: values[inside] for name, values in cols.items()}
        acc: dict[int, list[int]] = {}
        counted = _per_minute(acc, part, time_column) if np.any(inside) else 0
        memo[time_column] = (acc, counted)
    result: tuple[dict[int, list[int]], int] = memo[time_column]
    return result


def _tokens(
    req: Mapping[str, Any],
    engine_minutes: Mapping[int, tuple[int, Mapping[str, float]]],
    minutes: Sequence[int],
    first: int,
    count: int,
) -> Trend:
    prompt = engine_line("prompt", engine_minutes, minutes, "prompt_throughput")
    gen = engine_line("gen", engine_minutes, minutes, "generation_throughput")
    source = "engine stats"
    if not prompt.known:
        prompt = prefill_line(engine_minutes, minutes)
        if prompt.known:
            source = "engine stats; prefill: #new-token / 60"
    engine = tuple(line for line in (prompt, gen) if line.known)
    if engine:
        return Trend("tokens", "tokens", "tok/s", source, engine)
    finished, with_finish = _count_minutes(req, "finished_ts", first, count)
    received, with_arrival = _count_minutes(req, "received_ts", first, count)
    basis = throughput_basis(with_finish, with_arrival)
    acc = received if basis == "received" else finished
    from_prompt: list[Value] = []
    from_completion: list[Value] = []
    for i in range(count):
        bucket = acc.get(first + i)
        # [requests, prompt, completion, with prompt, with completion]: None when none of
        # the minute's requests reported the count (or none were counted in it)
        from_prompt.append(bucket[1] / 60 if bucket and bucket[3] else None)
        from_completion.append(bucket[2] / 60 if bucket and bucket[4] else None)
    lines = (Line("prompt", tuple(from_prompt)), Line("gen", tuple(from_completion)))
    source = f"tokens of requests {basis or 'finished'} in the minute / 60"
    return Trend("tokens", "tokens", "tok/s", source, lines)


def _requests(req: Mapping[str, Any], first: int, count: int) -> Trend:
    """Requests per second: a count, so 0 in every minute the input covers."""
    finished, with_finish = _count_minutes(req, "finished_ts", first, count)
    received, with_arrival = _count_minutes(req, "received_ts", first, count)
    basis = throughput_basis(with_finish, with_arrival)
    lines = []
    if basis == "finished":
        lines.append(Line("finished", _rates(finished, first, count)))
    if with_arrival:
        lines.append(Line("received", _rates(received, first, count)))
    source = "requests per minute / 60"
    if basis == "received":
        source += " (finish times not logged for most requests)"
    return Trend("requests", "requests", "req/s", source, tuple(lines))


def _rates(acc: Mapping[int, list[int]], first: int, count: int) -> tuple[Value, ...]:
    return tuple(acc[first + i][0] / 60 if first + i in acc else 0.0 for i in range(count))


def _errors(errors: Mapping[int, Mapping[str, int]], minutes: Sequence[int]) -> Trend:
    """Errors (every class but HTTP 5xx) and 5xx per minute: exact counts, so a minute of
    the input without any is a true 0."""
    other: list[Value] = []
    http: list[Value] = []
    for minute in minutes:
        kinds = errors.get(minute, {})
        other.append(float(sum(c for k, c in kinds.items() if k != HTTP_5XX)))
        http.append(float(kinds.get(HTTP_5XX, 0)))
    lines = (Line("errors", tuple(other)), Line("5xx", tuple(http)))
    return Trend("errors", "errors & HTTP 5xx", "/min", "error log", lines)


def _cache(
    req: Mapping[str, Any],
    engine_minutes: Mapping[int, tuple[int, Mapping[str, float]]],
    engine: EngineSeries,
    minutes: Sequence[int],
    first: int,
    count: int,
) -> Trend:
    import numpy as np

    cols = req["cols"]
    both = ~np.isnan(cols["cached_tokens"]) & ~np.isnan(cols["prompt_tokens"])
    # the request's end, else its arrival: the minute it counts in
    finished, received = cols["finished_ts"][both], cols["received_ts"][both]
    end = np.where(_dates(finished), finished, received + cols["latency_s"][both])
    index = (np.where(_dates(end), end, received) // 60) - first
    inside = (index >= 0) & (index < count)  # NaN (no time) is neither
    # Requests that report both, in the minutes shown, are the source; else the engine.
    if inside.any():
        index = index[inside].astype(np.int64)
        cached = np.bincount(index, weights=cols["cached_tokens"][both][inside], minlength=count)
        prompt = np.bincount(index, weights=cols["prompt_tokens"][both][inside], minlength=count)
        rate = tuple(
            100.0 * float(c) / float(p) if p > 0 else None
            for c, p in zip(cached.tolist(), prompt.tolist())
        )
        source = "cached / prompt tokens of requests reporting both"
        return Trend("cache", "cache hit rate", "%", source, (Line("hit", rate),))
    values: list[Value] = []
    for minute in minutes:
        cell = engine_minutes.get(minute)
        figures = cell[1] if cell is not None else {}
        hit, new = figures.get("cached_tokens_sum"), figures.get("new_tokens_sum")
        values.append(100.0 * hit / (hit + new) if hit is not None and new and hit + new else None)
    line = Line("hit", tuple(values))
    if line.known:
        source = "engine cached / (cached + new) prefill tokens"
        return Trend("cache", "cache hit rate", "%", source, (line,))
    line = Line("hit", points_ratio(engine, minutes, "prefix_cache_hit_rate"))
    source = "engine prefix cache hit rate (recent stats lines)"
    return Trend("cache", "cache hit rate", "%", source, (line,) if line.known else ())
