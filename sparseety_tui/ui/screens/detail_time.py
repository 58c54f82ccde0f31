"""The detail's Time tab: where one request's time went, as a waterfall.

One bar split queue │ prefill │ decode │ other in proportion to the latency, then each
figure with its seconds, its share and where it comes from (``timing_from``), the
preemptions, the one-line why against the request's peers, the engine state at its
arrival and its W3C ``traceparent``. The figures are ``core.figures``' (``timing_records``,
``WhyTable``: those of ``extract`` and ``/requests/ID``), worked out on the detail's worker
thread; this module only lays them out. Unknown is said, never drawn as 0.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rich.text import Text

from sparseety_tui.core.figures import (
    PEER_WINDOW_S,
    EngineAtArrival,
    WhyTable,
    timing_records,
)
from sparseety_tui.core.store import ExtractorView
from sparseety_tui.ui.fmt import fmt_clock, fmt_seconds
from sparseety_tui.ui.safe_text import escape

#: The parts of a latency in the bar, each with its glyph (told apart without colour) and
#: colour.
PARTS: tuple[tuple[str, str, str], ...] = (
    ("queue", "░", "yellow"),
    ("prefill", "▒", "cyan"),
    ("decode", "█", "green"),
    ("other", "·", "bright_black"),
)
#: How each source of a figure is said.
SOURCE_WORDS = {
    "span": "from span",
    "meta_info": "from meta_info",
    "response": "from response metrics",
    "log": "from log line times",
    "trace": "from trace record",
    "derived": "derived",
}
#: Widest bar drawn (cells).
BAR_MAX = 72
PREEMPTED = "↺"


@dataclass(frozen=True)
class RequestTime:
    """A request's time as the outputs give it (``extract``'s ``timing`` keys) and the
    engine state at its arrival."""

    timing: Mapping[str, Any]
    timing_from: Mapping[str, str]
    trace: Mapping[str, Any]
    why: Mapping[str, Any] | None
    why_text: str | None
    engine: EngineAtArrival | None
    received: float

    @property
    def traceparent(self) -> str | None:
        value = self.trace.get("traceparent")
        return value if isinstance(value, str) else None


def request_time(state: ExtractorView, row: int) -> RequestTime:
    """Store row ``row``'s time, against every request of ``state`` (its peers); O(rows):
    call it off the UI thread."""
    table = WhyTable(state)
    cols = state.store.numeric_view(row, row + 1)
    record = next(timing_records(state, table, cols, row, row + 1))
    received = float(cols["received_ts"][0])
    file = int(cols["file"][0])
    engine = None
    if 0 <= file < len(table.paths):
        engine = table.arrival.at(received, table.paths[file])
    return RequestTime(
        timing=record["timing"],
        timing_from=record["timing_from"],
        trace=record["trace"],
        why=record["why"],
        why_text=record["why_text"],
        engine=engine,
        received=received,
    )


def _seconds(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) else math.nan


def parts_of(timing: Mapping[str, Any]) -> tuple[dict[str, float], float, float]:
    """Each part's seconds (NaN: unknown; ``other`` is the latency less the parts known,
    when that is not negative, as ``core.figures.dominant`` has it), the latency and the
    total the bar stands for (the latency, or the parts' sum when larger or no latency)."""
    parts = {name: _seconds(timing.get(f"{name}_s")) for name in ("queue", "prefill", "decode")}
    latency = _seconds(timing.get("latency_s"))
    known = [v for v in parts.values() if not math.isnan(v)]
    other = latency - sum(known) if known else math.nan
    parts["other"] = other if other >= 0 else math.nan
    total = latency if not math.isnan(latency) else math.nan
    if known and (math.isnan(total) or sum(known) > total):
        total = sum(known)
    return parts, latency, total


def bar_cells(values: Sequence[float], total: float, width: int) -> list[int]:
    """Cells of each value in a bar of ``width`` cells standing for ``total`` (largest
    remainders; a value above 0 gets a cell at least; NaN gets none)."""
    if not total > 0 or width <= 0:
        return [0] * len(values)
    exact = [(v / total) * width if v > 0 else 0.0 for v in values]
    cells = [int(e) for e in exact]
    for i, v in enumerate(values):
        if v > 0 and cells[i] == 0:
            cells[i] = 1
    spare = width - sum(cells)
    order = sorted(range(len(values)), key=lambda i: cells[i] - exact[i])
    for i in order:
        if spare <= 0:
            break
        if values[i] > 0:
            cells[i] += 1
            spare -= 1
    while sum(cells) > width:  # the cells given to tiny parts: taken from the largest
        cells[cells.index(max(cells))] -= 1
    return cells


def time_text(time: RequestTime | None, width: int) -> Text:
    """The Time tab (``width``: the cells it has)."""
    out = Text(end="")
    if time is None:
        out.append("working out where the time went…", "dim")
        return out
    timing = time.timing
    parts, latency, total = parts_of(timing)
    if all(math.isnan(parts[name]) for name in ("queue", "prefill", "decode")):
        _nothing_known(out, latency, time)
        _context(out, time)
        return out
    out.append("Where the time went", "bold")
    out.append("  latency ", "dim")
    out.append(_figure(latency))
    out.append(f"  {_source(time, 'latency_s')}\n", "dim")
    _bar(out, parts, total, time, width)
    _rows(out, parts, latency, total, time)
    _context(out, time)
    return out


def _bar(
    out: Text, parts: Mapping[str, float], total: float, time: RequestTime, width: int
) -> None:
    preemptions = time.timing.get("preemptions")
    mark = f" {PREEMPTED}{preemptions}" if isinstance(preemptions, int) and preemptions else ""
    shown = [(n, g, s) for n, g, s in PARTS if not math.isnan(parts[n]) and parts[n] > 0]
    room = max(8, min(BAR_MAX, width - len(mark) - 2)) - max(0, len(shown) - 1)
    cells = bar_cells([parts[n] for n, _, _ in shown], total, room)
    for i, ((_, glyph, style), n) in enumerate(zip(shown, cells)):
        if i:
            out.append("│", "dim")
        out.append(glyph * n, style)
    if mark:
        out.append(mark, "bold red")
    out.append("\n")


def _rows(
    out: Text, parts: Mapping[str, float], latency: float, total: float, time: RequestTime
) -> None:
    unknown = [n for n in ("queue", "prefill", "decode") if math.isnan(parts[n])]
    for name, glyph, style in PARTS:
        value = parts[name]
        out.append(f"{name:<8}", "bold" if time.why and time.why["component"] == name else "")
        out.append(glyph, style)
        out.append(f" {_figure(value):>9}")
        share = _share(value, total)
        out.append(f"  {share:>5}  ")
        if name == "other":
            if math.isnan(value) and not math.isnan(latency):
                out.append("— the parts add to more than the latency (other clocks)", "dim")
            elif math.isnan(value):
                out.append("— no latency to take the parts from", "dim")
            else:
                said = "the latency less the parts known"
                if unknown:
                    said += f" (so it holds the unknown {' and '.join(unknown)})"
                out.append(said, "dim")
        else:
            out.append(_source(time, f"{name}_s"), "dim")
        out.append("\n")
    for name, key in (("ttft", "ttft_s"), ("tpot", "tpot_s"), ("inference", "inference_s")):
        value = _seconds(time.timing.get(key))
        if math.isnan(value) and name != "ttft":
            continue
        out.append(f"{name:<10}{_figure(value):>9}         ")
        out.append(_source(time, key) + "\n", "dim")
    preemptions = time.timing.get("preemptions")
    out.append(f"{'preempted':<10}")
    if isinstance(preemptions, int):
        out.append(f"{preemptions:>9,}", "bold red" if preemptions else "")
        out.append(f"{' ' + PREEMPTED if preemptions else '  '}       ")
        out.append(_source(time, "preemptions") + "\n", "dim")
    else:
        out.append(f"{'unknown':>9}\n", "dim")


def _nothing_known(out: Text, latency: float, time: RequestTime) -> None:
    out.append("No part of this request's time is known", "bold")
    if not math.isnan(latency):
        out.append(f" (latency {_figure(latency)}, {_source(time, 'latency_s')})", "dim")
    out.append(
        ".\nWhere it went (queue, prefill, decode) comes from the server: vLLM's spans "
        "(tail --otlp PORT, or an OTLP/JSON file), SGLang's Finish: meta_info, a saved "
        "response's metrics, or a trace record's queue_s / prefill_s / decode_s.\n",
        "dim",
    )


def _context(out: Text, time: RequestTime) -> None:
    """The why line, the peers, the engine at arrival and the trace."""
    out.append("\n")
    if time.why_text:
        out.append("why      ", "bold")
        out.append(escape(time.why_text) + "\n")
    why = time.why
    if why is not None:
        out.append("peers    ", "dim")
        scope = f"same model, prompt within 2×, same {PEER_WINDOW_S / 60:.0f} min"
        median = why.get("peers_median_s")
        if median is None:
            out.append(f"{why['peers']:,} ({scope}); none has a {why['component']} to compare\n")
        else:
            out.append(
                f"median {why['component']} {_figure(float(median))} of {why['peers']:,} "
                f"({scope})\n"
            )
    out.append("arrival  ", "dim")
    out.append(_engine_text(time.engine, time.received) + "\n")
    traceparent = time.traceparent
    out.append("traceparent " if traceparent is not None else "trace    ", "dim")
    if traceparent is not None:
        out.append(escape(traceparent), "bold")
        out.append("  y: copy\n", "dim")
    else:
        trace_id = time.trace.get("trace_id")
        if isinstance(trace_id, str):
            out.append(f"trace id {escape(trace_id)} (no span id: no traceparent)\n")
        else:
            out.append("no trace id (a span of the server would give one)\n", "dim")


def _engine_text(engine: EngineAtArrival | None, received: float) -> str:
    """The engine state at the request's arrival, and which stats line says it."""
    if engine is None:
        if math.isnan(received):
            return "unknown (no arrival time)"
        return "unknown (no engine stats line before it)"
    said = []
    if engine.waiting is not None:
        said.append(f"{engine.waiting:.0f} waiting")
    if engine.running is not None:
        said.append(f"{engine.running:.0f} running")
    if engine.kv_usage is not None:
        said.append(f"KV {100 * engine.kv_usage:.0f} %")
    text = " · ".join(said) if said else "no figures"
    if engine.engine:
        text += f" on engine {escape(engine.engine)}"
    if engine.source == "line":
        return text + f" (stats line {_plain_seconds(received - engine.ts)} before)"
    return text + f" (mean of the minute {fmt_clock(engine.ts)[:5]}: older lines)"


def _share(value: float, total: float) -> str:
    """A part's share of the bar: "<1 %" for a part too small to round to 1, never "0 %"
    for a part that took time."""
    if not total > 0 or math.isnan(value):
        return ""
    share = 100 * value / total
    return "<1 %" if 0 < share < 0.5 else f"{share:.0f} %"


def _figure(value: float) -> str:
    return "unknown" if math.isnan(value) else _plain_seconds(value)


def _plain_seconds(value: float) -> str:
    text = fmt_seconds(value)
    if text.endswith("ms"):
        return text[:-2] + " ms"
    return text[:-1] + " s" if text.endswith("s") else text


def _source(time: RequestTime, key: str) -> str:
    source = time.timing_from.get(key)
    return SOURCE_WORDS.get(source, escape(source)) if source else ""
