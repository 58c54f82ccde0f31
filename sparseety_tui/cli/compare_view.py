"""The Rich rendering of a ``compare`` document (the dict ``--json`` prints).

Strings from the document (paths, request ids: they come from logs and file names) are
shown literally (``core.literal.escape``) in ``Text`` cells, never read as markup.
"""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from sparseety_tui.core.compare.figures import figure_better, figure_unit
from sparseety_tui.core.literal import escape


def fmt_value(value: float | int | None, unit: str) -> str:
    """A figure in its unit: counts with thousands separators, ratios as %."""
    if value is None:
        return "—"
    if unit == "ratio":
        return f"{100 * value:.2f}%"
    if unit == "s":
        return f"{value:.4f}"
    if isinstance(value, int) or float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.2f}"


def fmt_delta(value: float | None, unit: str) -> str:
    if value is None:
        return "—"
    if unit == "ratio":
        return f"{100 * value:+.2f} pp"
    if unit == "s":
        return f"{value:+.4f}"
    return f"{value:+,.2f}"


def fmt_rel(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:+.1f}%"


def delta_style(name: str, value: float | None) -> str:
    """Green when the change is for the better, red when for the worse."""
    better = figure_better(name)
    if value is None or not value or better is None:
        return ""
    return "green" if (value < 0) == (better == "lower") else "red"


def _side_line(label: str, side: dict[str, Any]) -> Text:
    where = ", ".join(escape(p) for p in side["paths"])
    window = f" window {escape(side['window'])}" if side.get("window") else ""
    return Text(f"{label}: {where}{window} ({side['requests']:,} requests)")


def figures_table(doc: dict[str, Any]) -> Table:
    table = Table(title=Text("Figures", style="bold"), title_justify="left")
    for i, column in enumerate(
        ("figure", "unit", "baseline", "candidate", "Δ", "Δ%", "CI95 (paired)")
    ):
        table.add_column(column, justify="left" if i < 2 else "right")
    base, cand = doc["baseline"]["figures"], doc["candidate"]["figures"]
    for name, entry in doc["delta"].items():
        unit = figure_unit(name)
        ci = entry.get("ci95")
        ci_text = "—" if not ci else f"[{fmt_delta(ci[0], unit)}, {fmt_delta(ci[1], unit)}]"
        style = delta_style(name, entry["abs"])
        table.add_row(
            Text(name),
            unit,
            fmt_value(base.get(name), unit),
            fmt_value(cand.get(name), unit),
            Text(fmt_delta(entry["abs"], unit), style=style),
            Text(fmt_rel(entry["rel"]), style=style),
            ci_text,
        )
    return table


def regressions_table(doc: dict[str, Any]) -> Table:
    title = (
        f"Regressions ({len(doc['regressions']):,} of {doc['regressions_total']:,}, worst first)"
    )
    table = Table(title=Text(title, style="bold"), title_justify="left")
    for i, column in enumerate(
        ("baseline id", "candidate id", "latency s", "Δ latency", "compute", "Δ compute")
    ):
        table.add_column(column, justify="left" if i < 2 else "right")
    for r in doc["regressions"]:
        lat, comp = r["latency_s"], r["effective_compute_tokens"]
        table.add_row(
            Text(escape(r["baseline_id"])),
            Text(escape(r["candidate_id"])),
            f"{fmt_value(lat['baseline'], 's')} → {fmt_value(lat['candidate'], 's')}",
            Text(fmt_rel(lat["rel"]), style="red" if (lat["abs"] or 0) > 0 else ""),
            f"{fmt_value(comp['baseline'], 'tokens')} → {fmt_value(comp['candidate'], 'tokens')}",
            Text(fmt_rel(comp["rel"]), style="red" if (comp["abs"] or 0) > 0 else ""),
        )
    return table


def match_line(doc: dict[str, Any]) -> Text:
    how = {
        "request_id": "by request id",
        "prompt": "by prompt (hash of text or token ids)",
        "workload": "not matched: workloads compared as a whole",
    }[doc["match_by"]]
    return Text(
        f"matched {doc['matched']:,} {how}; only in baseline {doc['only_baseline']:,}, "
        f"only in candidate {doc['only_candidate']:,}"
    )


def render_compare(doc: dict[str, Any]) -> RenderableType:
    parts: list[RenderableType] = [
        _side_line("baseline", doc["baseline"]),
        _side_line("candidate", doc["candidate"]),
        match_line(doc),
        figures_table(doc),
    ]
    if doc["regressions"]:
        parts.append(regressions_table(doc))
    boot = doc["bootstrap"]
    parts.append(
        Text(
            f"CI95: paired percentile bootstrap over matched requests, {boot['resamples']:,} "
            f"resamples, seed {boot['seed']}",
            style="dim",
        )
    )
    return Group(*parts)
