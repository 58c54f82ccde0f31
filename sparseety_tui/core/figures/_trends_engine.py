"""Trend lines from the engines' stats: a figure's fleet mean per minute
(``core.figures.per_minute``), SGLang's prefill tokens per second, and a ratio of the
engines' recent stats lines (``core.store.STATS_POINTS``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from sparseety_tui.core.figures._trend_lines import Line, Trend, Value, is_date_seconds
from sparseety_tui.core.store import EngineSeries, label_key


def engine_line(
    name: str,
    engine_minutes: Mapping[int, tuple[int, Mapping[str, float]]],
    minutes: Sequence[int],
    field: str,
    scale: float = 1.0,
) -> Line:
    values: list[Value] = []
    for minute in minutes:
        cell = engine_minutes.get(minute)
        value = cell[1].get(field) if cell is not None else None
        values.append(None if value is None else float(value) * scale)
    return Line(name, tuple(values))


def engine_trend(
    key: str,
    title: str,
    unit: str,
    engine_minutes: Mapping[int, tuple[int, Mapping[str, float]]],
    minutes: Sequence[int],
    fields: Iterable[tuple[str, str, float]],
) -> Trend:
    lines = tuple(
        line
        for line in (engine_line(n, engine_minutes, minutes, f, s) for n, f, s in fields)
        if line.known
    )
    return Trend(key, title, unit, "engine stats, fleet mean in the minute", lines)


def prefill_line(
    engine_minutes: Mapping[int, tuple[int, Mapping[str, float]]], minutes: Sequence[int]
) -> Line:
    """Prefill tokens/s from the tokens SGLang's prefill batch lines count (``#new-token``),
    for an engine that logs no input throughput: the minute's sum / 60. A minute with
    stats lines but no prefill line had no prefill (0) when the engine logs them at all."""
    if not any("new_tokens_sum" in figures for _, figures in engine_minutes.values()):
        return Line("prefill", (None,) * len(minutes))
    values: list[Value] = []
    for minute in minutes:
        cell = engine_minutes.get(minute)
        values.append(None if cell is None else cell[1].get("new_tokens_sum", 0.0) / 60)
    return Line("prefill", tuple(values))


def points_ratio(engine: EngineSeries, minutes: Sequence[int], field: str) -> tuple[Value, ...]:
    """A ratio field of the engine's recent stats lines per minute: each engine's mean in
    the minute, averaged over engines (replica ranks log the same batch, so averaging
    them changes nothing), in %."""
    cells: dict[int, dict[str, list[float]]] = {}
    for stats in engine.points:
        value, ts = stats.get(field), stats.get("ts")
        if not isinstance(value, (int, float)) or ts is None or not is_date_seconds(ts):
            continue
        per = cells.setdefault(int(ts // 60) * 60, {})
        acc = per.setdefault(label_key(stats), [0.0, 0.0])
        acc[0] += float(value)
        acc[1] += 1
    out: list[Value] = []
    for minute in minutes:
        found = cells.get(minute)
        if not found:
            out.append(None)
            continue
        means = [s / n for s, n in found.values()]
        out.append(100.0 * sum(means) / len(means))
    return tuple(out)
