"""`sparseety-tui plot`: per-minute trends of logs as a PNG, SVG or PDF (matplotlib).

``plot_data`` turns what was read into one JSON-ready dict (title, files, time range,
panels and their series) and ``cli.plot_render.render`` draws only that dict: the
boundary where the output can be changed as a whole (redaction of paths) before it is
drawn. The series are ``core.figures.compute_trends``' (the TUI's trends screen) and
``core.figures``'s, so the picture and the screen show the same numbers.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sparseety_tui.cli.errors import CliError
from sparseety_tui.cli.redaction import redactor_of
from sparseety_tui.cli.redaction import report as report_redaction
from sparseety_tui.cli.shared_args import selection_args
from sparseety_tui.cli.summary import summarise
from sparseety_tui.core.figures import ModelShape, Trend, compute_trends, skip_trends
from sparseety_tui.core.query import Selection, select_rows
from sparseety_tui.core.redact import Redactor
from sparseety_tui.core.store import ExtractorView
from sparseety_tui.core.text import json_text
from sparseety_tui.formats import utc_text
from sparseety_tui.ingest.batch import Options, make_shape

FORMATS = (".png", ".svg", ".pdf")
#: Panels in drawing order (trend keys); the rest of ``core.figures`` (queue, KV) are the
#: engine's and are drawn when a log has them.
PANELS = ("latency", "ttft", "tokens", "requests", "cache", "compute", "skips", "errors")
EXTRA_PANELS = ("queue", "kv")
STACKED = ("compute",)


@dataclass(frozen=True)
class PlotSide:
    """One set of logs to draw: a ``label`` (None alone, else "baseline"/"candidate")."""

    label: str | None
    paths: tuple[str, ...]
    extractor: ExtractorView
    shape: ModelShape
    selection: Selection


def side_trends(side: PlotSide) -> tuple[tuple[int, ...], list[Trend]]:
    """The side's minutes and its trends (those of the TUI's trends screen, then compute
    and skips), over its window and its rows."""
    rows = None
    since = until = None
    if side.selection.narrows:
        selected = select_rows(side.extractor, side.shape, side.selection)
        rows = selected.rows
        if selected.window is not None:
            since, until = selected.window.since, selected.window.until
    trends = compute_trends(side.extractor, since=since, until=until, rows=rows)
    compute, skips = skip_trends(side.extractor, side.shape, trends.minutes, rows)
    return trends.minutes, [*trends.trends, compute, skips]


def _range_text(minutes: Sequence[int]) -> str:
    if not minutes:
        return "no times"
    start = utc_text(minutes[0], "%Y-%m-%d %H:%M")
    end = utc_text(minutes[-1] + 60, "%H:%M" if len(minutes) < 1440 else "%Y-%m-%d %H:%M")
    return f"{start}–{end} UTC ({len(minutes)} min)"


def paired_panels(pairs: Mapping[str, tuple[Any, Any]]) -> list[dict[str, Any]]:
    """Panels of matched requests (``compare --plot``): each pair's value on both sides,
    the pairs in the order of the baseline's latency (``pairs``: figure -> the baseline's
    and the candidate's values, pair by pair; NaN unknown)."""
    import numpy as np

    latency = np.asarray(pairs["latency_s"][0], dtype=np.float64)
    order = np.argsort(np.where(np.isnan(latency), np.inf, latency), kind="stable")
    x = list(range(1, len(order) + 1))
    out = []
    for key, title, unit in (
        ("latency_s", "latency of each matched request", "s"),
        ("effective_compute_tokens", "effective compute of each matched request", "tokens"),
    ):
        base, cand = (np.asarray(v, dtype=np.float64)[order] for v in pairs[key])
        lines = [
            {"name": key.split("_")[0], "side": label, "x": x, "y": _known(values)}
            for label, values in (("baseline", base), ("candidate", cand))
        ]
        out.append(
            {
                "key": f"pairs_{key}",
                "title": title,
                "unit": unit,
                "sources": ["matched requests, in the order of the baseline's latency"],
                "stacked": False,
                "points": True,
                "x_label": "matched request (by baseline latency)",
                "lines": lines,
            }
        )
    return out


def _known(values: Any) -> list[float | None]:
    return [None if v != v else float(v) for v in values.tolist()]


def plot_data(
    sides: Sequence[PlotSide], pairs: Mapping[str, tuple[Any, Any]] | None = None
) -> dict[str, Any]:
    """Everything the picture shows, as a JSON-ready dict (module docstring). With two
    sides the x axis is minutes from each side's first minute, so runs at different
    times overlay; ``pairs`` (matched requests' values) add the ``paired_panels`` first."""
    overlay = len(sides) > 1
    panels: dict[str, dict[str, Any]] = {}
    described = []
    for side in sides:
        minutes, trends = side_trends(side)
        described.append(
            {
                "label": side.label,
                "files": [json_text(p) for p in side.paths],
                "range": _range_text(minutes),
                "window": side.selection.window.text if side.selection.window else None,
            }
        )
        x = [(m - minutes[0]) / 60 for m in minutes] if overlay and minutes else list(minutes)
        for trend in trends:
            panel = panels.setdefault(
                trend.key,
                {
                    "key": trend.key,
                    "title": trend.title,
                    "unit": trend.unit,
                    "sources": [],
                    "stacked": trend.key in STACKED and not overlay,
                    "lines": [],
                },
            )
            if trend.source not in panel["sources"]:
                panel["sources"].append(trend.source)
            for line in trend.lines:
                if line.known:
                    panel["lines"].append(
                        {"name": line.name, "side": side.label, "x": x, "y": list(line.values)}
                    )
    order = [k for k in PANELS if k in panels]
    order += [k for k in EXTRA_PANELS if k in panels and panels[k]["lines"]]
    return {
        "title": "sparseety-tui: baseline vs candidate" if overlay else "sparseety-tui",
        "sides": described,
        "x_axis": "minutes from the side's first minute" if overlay else "time (UTC)",
        "panels": (paired_panels(pairs) if pairs else []) + [panels[k] for k in order],
    }


def write_plot(
    out: str,
    sides: Sequence[PlotSide],
    pairs: Mapping[str, tuple[Any, Any]] | None = None,
    redactor: Redactor | None = None,
) -> None:
    """Draw ``sides`` (and ``pairs``, see ``plot_data``) to ``out`` (its suffix says the
    format); with ``redactor``, its text (file names, the title) redacted and the title
    saying so."""
    from sparseety_tui.cli import plot_render

    check_output(out)
    data = plot_data(sides, pairs)
    if redactor is not None:
        data = redactor.document(data)
        data["title"] = f"{data['title']} (REDACTED)"
    plot_render.render(data, out)


def check_output(out: str) -> None:
    """That ``out`` can be drawn: a known image kind, and matplotlib installed (checked
    before anything is read: a missing extra costs no wait)."""
    if not out.lower().endswith(FORMATS):
        raise CliError(f"-o {out!r}: the name must end in {', '.join(FORMATS)}")
    try:
        import matplotlib  # noqa: F401  (plot_render draws with it)
    except ImportError:
        raise CliError("plots need matplotlib: pip install 'sparseety-tui[plot]'") from None


def run(args: argparse.Namespace, options: Options) -> int:
    """0, or 1 when entries of a named directory could not be read (reported on stderr)."""
    check_output(args.output)
    selection = selection_args(args)
    redactor = redactor_of(args)  # a bad rule or key: exit 2 before anything is read
    extractor, skipped, _document = summarise(args.paths, options, selection, args.jobs)
    side = PlotSide(None, tuple(args.paths), extractor, make_shape(options), selection)
    write_plot(args.output, [side], redactor=redactor)
    report_redaction(redactor)
    return 1 if skipped else 0
