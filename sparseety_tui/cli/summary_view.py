"""The Rich rendering of a ``summary`` document (the same dict ``--json`` prints).

The document is read back as its types (``SummaryDocument.from_json``: it may have been
redacted, which works on the JSON) and shown from their attributes. Every string of the
document (paths, model names, kinds, metric names: many come from
logs or file names) is first shown literally with ``core.text.escape``, the rule the
TUI uses, so none can drive the terminal; and every cell that holds one is a ``Text``
object, never read as Rich markup.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from sparseety_tui.core.figures import (
    EngineTotals,
    ErrorTotals,
    RequestTotals,
    SkippedTotals,
    Totals,
)
from sparseety_tui.core.report import NOT_WINDOWED, SummaryDocument, SummaryWindow
from sparseety_tui.core.text import escape
from sparseety_tui.formats import utc_text


def fmt_int(value: int | float | None) -> str:
    return "—" if value is None else f"{int(round(value)):,}"


def fmt_float(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:,.{digits}f}"


def fmt_pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"


def _table(title: str, *columns: str) -> Table:
    table = Table(title=Text(title, style="bold"), title_justify="left", expand=False)
    for i, column in enumerate(columns):
        table.add_column(column, justify="left" if i == 0 else "right")
    return table


def _files(files: tuple[Mapping[str, Any], ...]) -> Table:
    table = _table("Files", "path", "format", "lines", "by kind")
    for f in files:
        kinds = ", ".join(f"{k} {v:,}" for k, v in f["lines"]["by_kind"].items())
        ignored = f.get("ignored_values")
        if ignored:  # lines that were read with one value left unknown
            kinds += "; values left unknown: " + ", ".join(f"{k} {v:,}" for k, v in ignored.items())
        fmt = f["format"]
        if fmt == "unknown":  # read by the fallback: tracebacks, errors, access lines only
            fmt = "unknown (no server format recognised)"
        table.add_row(Text(f["path"]), Text(fmt), fmt_int(f["lines"]["total"]), Text(kinds))
    return table


def coverage(requests: RequestTotals) -> str:
    """Which requests the cost-model figures cover: "over 35 of 60 requests"."""
    return f"over {requests.with_effective_compute:,} of {requests.count:,} requests"


def lower_bound_mark(requests: RequestTotals) -> str:
    """ "≥" while some covered request did not say its cache use (costed as no hit)."""
    return "≥" if requests.with_cache_unknown else ""


def _upper(mark: str, text: str) -> str:
    return "≤" + text if mark and text != "—" else text


def _requests(totals: Totals) -> Table:
    r = totals.requests
    table = _table("Requests", "figure", "value")
    states = ", ".join(f"{k} {v:,}" for k, v in r.by_state.items()) or "—"
    # The cost-model figures are over one subset of requests (those with both counts),
    # shown with their own logical tokens, so that no ratio mixes two subsets.
    over = f" ({coverage(r)})" if r.with_effective_compute else ""
    mark = lower_bound_mark(r)
    skip = fmt_pct(r.skip_ratio)
    skipped = fmt_float(r.sparse_skipped_tokens, 1)
    rows = [
        ("requests", fmt_int(r.count)),
        ("states", states),
        ("prompt tokens", fmt_int(r.prompt_tokens)),
        ("completion tokens", fmt_int(r.completion_tokens)),
        ("cached tokens (prefix hits)", fmt_int(r.cached_tokens)),
        (
            "cache hit rate (hit requests / flagged)"
            if r.cache_hit_rate_by == "requests"
            else "cache hit rate (cached / prompt)",
            fmt_pct(r.cache_hit_rate),
        ),
        ("completion / prompt tokens", fmt_float(r.completion_per_prompt_tokens, 3)),
        ("requests per minute", fmt_float(r.requests_per_minute, 2)),
        ("logical tokens", fmt_int(r.logical_tokens)),
        ("logical tokens of costed requests", fmt_int(r.logical_tokens_for_effective)),
        (
            "effective compute tokens",
            _upper(mark, fmt_float(r.effective_compute_tokens, 1)) + over,
        ),
        ("sparse skipped tokens", (mark if skipped != "—" else "") + skipped),
        ("skip ratio", (mark if skip != "—" else "") + skip + over),
        (
            "compute vs nominal model",
            _upper(mark, fmt_pct(totals.skipped.compute_vs_nominal)) + over,
        ),
    ]
    if mark:
        rows.append(
            (
                "cache use not logged (costed as no hit)",
                f"{r.with_cache_unknown:,} of {r.with_effective_compute:,} requests",
            )
        )
    hits = r.cache_hit_requests
    if hits is not None and hits.reported:
        rows.append(("requests reporting a cache hit", f"{hits.hit:,} of {hits.reported:,}"))
    for name, value in rows:
        table.add_row(name, Text(value))
    return table


_SKIP_LABELS = {
    "cached_tokens": ("cached", "prompt tokens"),
    "evicted_kv_positions": ("evicted", "visible KV positions"),
    "masked_kv_positions": ("masked", "visible KV positions"),
    "dropped_expert_slots": ("dropped", "routed expert slots"),
    "inactive_expert_slots": ("experts not routed", "expert slots"),
    "skipped_head_slots": ("heads skipped", "head slots"),
}


def _skips(skipped: SkippedTotals) -> Table:
    table = _table("Skips by kind (natural units)", "kind", "skipped", "of", "ratio")
    kinds = dict(skipped.kinds())
    for key, (label, unit) in _SKIP_LABELS.items():
        item = kinds[key]
        table.add_row(
            label,
            fmt_int(item.value),
            Text(f"{fmt_int(item.of)} {unit}"),
            fmt_pct(item.ratio),
        )
    return table


def _latency(totals: Totals) -> Table:
    table = _table(
        "Latency (exact, nearest rank)", "metric", "n", "mean", "p50", "p95", "p99", "max"
    )
    for key, q in (("latency_s", totals.latency_s), ("ttft_s", totals.ttft_s)):
        table.add_row(
            key,
            fmt_int(q.count),
            *(fmt_float(v) for v in (q.mean, q.p50, q.p95, q.p99, q.max)),
        )
    return table


def _timing(doc: SummaryDocument) -> Text | None:
    """One line: the p95 of each part of the latency known, and what made the slowest
    slow; None when no part is known (core.figures)."""
    if doc.timing is None:
        return None
    figures = doc.timing.figures
    known = [
        f"{name.removesuffix('_s')} p95 {fmt_float(q.p95)} s"
        for name in ("queue_s", "prefill_s", "decode_s", "inference_s")
        if (q := figures.get(name)) is not None and q.count
    ]
    if not known:
        return None
    text = "timing: " + ", ".join(known)
    slow = doc.slow
    if slow is not None and slow.threshold_s is not None:
        parts = ", ".join(f"{k} {fmt_int(n)}" for k, n in slow.by_component.items() if n)
        text += f"; over p95 latency {fmt_float(slow.threshold_s)} s: {fmt_int(slow.requests)}"
        text += f" ({parts})" if parts else ""
    return Text(text)


def _throughput(totals: Totals, last: int = 10) -> Table:
    minutes = totals.throughput_per_minute
    basis = "arrival" if totals.throughput_per_minute_by == "received" else "finish"
    table = _table(
        f"Throughput per minute (UTC, by {basis} time, "
        f"last {min(last, len(minutes))} of {len(minutes)})",
        "minute",
        "requests",
        "prompt tok",
        "completion tok",
    )
    for m in minutes[-last:]:
        stamp = utc_text(m.minute, "%Y-%m-%d %H:%M") or "—"
        table.add_row(
            stamp,
            fmt_int(m.requests),
            fmt_int(m.prompt_tokens),
            fmt_int(m.completion_tokens),
        )
    return table


def _experts(totals: Totals) -> Table | None:
    experts = totals.experts
    title, counted = "Expert load per layer", "routed slots"
    if experts is None and totals.expert_distribution is not None:
        experts = totals.expert_distribution
        title, counted = "Expert counts per layer (dump, not per-token routing)", "counts"
    if experts is None:
        return None
    # One model's rows at a time: a layer of two models is two rows, never one blend.
    by_model = experts.by_model or {}
    parts = list(by_model.items()) if len(by_model) > 1 else [("", experts)]
    columns = ["layer", counted, "busiest expert", "imbalance max/mean"]
    table = _table(title, *(["model", *columns] if parts[0][0] else columns))
    for model, heat in parts:
        for layer, counts, imbalance in zip(
            heat.layers, heat.counts, heat.imbalance_max_over_mean or ()
        ):
            busiest = max(range(len(counts)), key=counts.__getitem__) if counts else None
            cells = [
                str(layer),
                fmt_int(sum(counts)),
                "—" if busiest is None else str(busiest),
                fmt_float(imbalance, 2),
            ]
            table.add_row(*([Text(model), *cells] if model else cells))
    return table


def _engine(engine: EngineTotals | None) -> Table | None:
    if engine is None:
        return None
    engines = engine.engines
    fleet = f", fleet of {engines:,} engines: summed, ratios averaged" if engines > 1 else ""
    table = _table(f"Engine stats ({engine.stats_lines:,} lines, means{fleet})", "figure", "mean")
    for key, value in sorted(engine.mean.items()):
        table.add_row(Text(key), fmt_float(value, 3))
    prefill = engine.prefill_tokens
    if prefill.cached is not None:
        table.add_row("prefill tokens cached / total", fmt_pct(prefill.cached_ratio))
    return table


#: Errors the human summary shows with their place (the newest).
LAST_ERRORS_SHOWN = 5


def _errors(errors: ErrorTotals) -> RenderableType:
    """The error count by class, then the last few errors with file:line."""
    by_kind = ", ".join(f"{kind} {n:,}" for kind, n in errors.by_kind.items())
    head = Text(f"errors: {errors.count:,} (tracebacks grouped)", style="red")
    if by_kind:
        head.append(f": {by_kind}")
    shown = (errors.records or errors.recent)[-LAST_ERRORS_SHOWN:]
    # One line each (no table: a long file name must not squeeze the time away).
    lines: list[RenderableType] = [head, Text(f"last {len(shown)} errors:", style="bold")]
    for record in shown:
        path = record.path or "?"
        where = Text(f"  {utc_text(record.ts, '%Y-%m-%d %H:%M:%S') or '—'}  ")
        where.append(record.kind, style="red")
        where.append(f"  {path.rsplit('/', 1)[-1]}:{record.line}", style="bold")
        lines.append(where)
        lines.append(Text(f"    {record.message}", no_wrap=True, overflow="ellipsis"))
    return Group(*lines)


def literal(value: Any) -> Any:
    """``value`` with every string in it (keys too) escaped for the terminal."""
    if isinstance(value, str):
        return escape(value)
    if isinstance(value, dict):
        return {literal(k): literal(v) for k, v in value.items()}
    if isinstance(value, list):
        return [literal(v) for v in value]
    return value


def _window(window: SummaryWindow) -> Text:
    """The --since/--until line: the window resolved, and how the requests split."""
    since = window.since
    until = window.until
    start = "start" if since is None else f"{since.utc or '—'} ({since.text})"
    end = "end" if until is None else f"{until.utc or '—'} ({until.text})"
    anchor = window.anchor
    text = (
        f"window: {start} .. {end}"
        + (f", relative to the newest log time {anchor.utc}" if anchor else "")
        + f"; requests in {window.requests_in:,}, outside {window.requests_outside:,}"
        + f", without a time {window.requests_without_time:,}"
        + f"; over all requests still: {', '.join(NOT_WINDOWED)}"
    )
    return Text(text, style="bold")


def render_summary(document: Mapping[str, Any]) -> RenderableType:
    """``document``: the ``summary --json`` document (redacted, when asked), shown
    literally from its types."""
    doc = SummaryDocument.from_json(literal(document))
    totals = doc.totals
    parts: list[RenderableType] = [
        _files(doc.files),
        _requests(totals),
        _skips(totals.skipped),
        _latency(totals),
    ]
    timing = _timing(doc)
    if timing is not None:
        parts.append(timing)
    if doc.window is not None:
        parts.insert(1, _window(doc.window))
    if totals.throughput_per_minute:
        parts.append(_throughput(totals))
    for optional in (_experts(totals), _engine(totals.engine)):
        if optional is not None:
            parts.append(optional)
    if totals.errors.count:
        parts.append(_errors(totals.errors))
    parts.append(Text(f"tokenizer: {doc.tokenizer} [{doc.tokenizer_source}]"))
    parts.append(Text(f"cost model: {doc.cost_model}"))
    return Group(*parts)
