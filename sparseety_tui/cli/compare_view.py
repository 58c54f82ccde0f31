"""The Rich rendering of a ``compare`` document (the dict ``--json`` prints).

Strings from the document (paths, request ids: they come from logs and file names) are
shown literally (``core.text.escape``) in ``Text`` cells, never read as markup.
"""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from sparseety_tui.core.compare import (
    before_after,
    figure_cells,
    fmt_rel,
    match_text,
)
from sparseety_tui.core.text import escape

STYLE = {"better": "green", "worse": "red", "": ""}


def side_line(label: str, side: dict[str, Any]) -> str:
    where = ", ".join(escape(p) for p in side["paths"])
    window = f" window {escape(side['window'])}" if side.get("window") else ""
    return f"{label}: {where}{window} ({side['requests']:,} requests)"


def figures_table(doc: dict[str, Any]) -> Table:
    table = Table(title=Text("Figures", style="bold"), title_justify="left")
    table.add_column("figure", no_wrap=True)
    for column in ("baseline", "candidate", "Δ", "Δ%", "CI95"):
        table.add_column(column, justify="right", min_width=12 if column == "CI95" else None)
    for name in doc["delta"]:
        cells = figure_cells(doc, name)
        style = STYLE[cells.change]
        table.add_row(
            Text(name),
            cells.baseline,
            cells.candidate,
            Text(cells.delta, style=style),
            Text(cells.rel, style=style),
            cells.ci95,
        )
    return table


def regressions_table(doc: dict[str, Any]) -> Table:
    shown, total = len(doc["regressions"]), doc["regressions_total"]
    title = f"Regressions ({shown:,} of {total:,}, the largest increase first)"
    table = Table(title=Text(title, style="bold"), title_justify="left")
    table.add_column("baseline id")
    table.add_column("candidate id")
    for column in ("latency s", "Δ latency", "compute tokens", "Δ compute"):
        table.add_column(column, justify="right")
    for r in doc["regressions"]:
        lat, comp = r["latency_s"], r["effective_compute_tokens"]
        table.add_row(
            Text(escape(r["baseline_id"])),
            Text(escape(r["candidate_id"])),
            before_after(lat, "s"),
            Text(fmt_rel(lat["rel"]), style="red" if (lat["abs"] or 0) > 0 else ""),
            before_after(comp, "tokens"),
            Text(fmt_rel(comp["rel"]), style="red" if (comp["abs"] or 0) > 0 else ""),
        )
    return table


def render_compare(doc: dict[str, Any]) -> RenderableType:
    parts: list[RenderableType] = [
        Text(side_line("baseline", doc["baseline"])),
        Text(side_line("candidate", doc["candidate"])),
        Text(match_text(doc)),
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
