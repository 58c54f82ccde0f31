"""Draw a ``cli.plot.plot_data`` dict with matplotlib (Agg: no display needed).

Readable in print: 10 pt text, the Okabe–Ito colour-blind-safe palette, a baseline drawn
solid and a candidate dashed, every axis labelled with its unit, and a header that says
which files and which time range the figure covers. SVG text stays text (searchable).
"""

from __future__ import annotations

import math
from typing import Any

#: Okabe & Ito (2008): distinguishable with every common colour-vision deficiency.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")
SIDE_STYLE = {None: "-", "baseline": "-", "candidate": "--"}
SIDE_MARKER = {None: ".", "baseline": "o", "candidate": "^"}
MAX_FILES_SHOWN = 3


def _files_text(files: list[str]) -> str:
    shown = ", ".join(files[:MAX_FILES_SHOWN])
    more = len(files) - MAX_FILES_SHOWN
    return shown + (f" and {more} more" if more > 0 else "")


def header(data: dict[str, Any]) -> str:
    lines = []
    for side in data["sides"]:
        who = f"{side['label']}: " if side["label"] else ""
        window = f", window {side['window']}" if side["window"] else ""
        lines.append(f"{who}{_files_text(side['files'])} — {side['range']}{window}")
    return "\n".join(lines)


def _values(values: list[float | None]) -> list[float]:
    return [math.nan if v is None else float(v) for v in values]


def render(data: dict[str, Any], out: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from datetime import datetime, timezone

    import matplotlib.dates as mdates
    import matplotlib.pyplot as plt

    panels = data["panels"]
    columns = 2
    rows = max(1, math.ceil(len(panels) / columns))
    with plt.rc_context(
        {
            "font.size": 10,
            "axes.titlesize": 11,
            "axes.labelsize": 10,
            "legend.fontsize": 8,
            "svg.fonttype": "none",
            "axes.grid": True,
            "grid.alpha": 0.3,
        }
    ):
        fig, axes = plt.subplots(rows, columns, figsize=(12, 2.9 * rows + 0.9), squeeze=False)
        dates = data["x_axis"].startswith("time")
        for ax, panel in zip(axes.flat, panels):
            if panel.get("x_label"):  # its own x axis (matched requests), not time
                _draw_points(ax, panel)
                continue
            colours: dict[str, str] = {}
            stacked = [line for line in panel["lines"] if panel["stacked"]]
            if stacked:
                xs = [_x(v, dates, datetime, timezone) for v in stacked[0]["x"]]
                ys = [[0.0 if math.isnan(y) else y for y in _values(line["y"])] for line in stacked]
                ax.stackplot(
                    xs,
                    *ys,
                    labels=[line["name"] for line in stacked],
                    colors=PALETTE[: len(stacked)],
                    alpha=0.85,
                )
            else:
                for line in panel["lines"]:
                    colour = colours.setdefault(line["name"], PALETTE[len(colours) % len(PALETTE)])
                    label = line["name"] if not line["side"] else f"{line['name']} ({line['side']})"
                    ax.plot(
                        [_x(v, dates, datetime, timezone) for v in line["x"]],
                        _values(line["y"]),
                        SIDE_STYLE.get(line["side"], "-"),
                        color=colour,
                        label=label,
                        linewidth=1.6,
                        # Few minutes: markers, a side's own shape (one point has no line).
                        marker=SIDE_MARKER.get(line["side"], "o") if len(line["x"]) < 30 else None,
                        markersize=5,
                    )
            if panel["key"] == "skips" and panel["lines"]:
                ax.set_yscale("symlog", linthresh=1.0)  # kinds differ by orders of magnitude
            ax.set_title(panel["title"])
            ax.set_ylabel(panel["unit"])
            if panel["lines"]:
                ax.legend(loc="best", frameon=True, framealpha=0.8, ncol=2)
            else:
                ax.text(
                    0.5, 0.5, "not in these logs", ha="center", va="center", transform=ax.transAxes
                )
        for ax in axes.flat[len(panels) :]:
            ax.set_visible(False)
        for ax, panel in zip(axes.flat, panels):
            if not panel.get("x_label"):
                xs = [x for line in panel["lines"] for x in line["x"]]
                if len(set(xs)) == 1 and not dates:  # one minute: a point, not a span
                    ax.set_xlim(xs[0] - 0.5, xs[0] + 0.5)
        for ax in axes[-1]:
            ax.set_xlabel(data["x_axis"])
            minutes = max((len(line["x"]) for p in panels for line in p["lines"]), default=0)
            if dates and minutes:  # no times at all: matplotlib's default axis
                every = max(1, math.ceil(minutes / 8))
                ax.xaxis.set_major_locator(
                    mdates.MinuteLocator(interval=every, tz=timezone.utc)  # type: ignore[no-untyped-call]
                )
                ax.xaxis.set_major_formatter(mdates.DateFormatter("%H:%M", tz=timezone.utc))  # type: ignore[no-untyped-call]
        height = fig.get_figheight()
        fig.suptitle(
            data["title"], fontsize=13, fontweight="bold", x=0.01, y=1 - 0.12 / height, ha="left"
        )
        fig.text(0.01, 1 - 0.42 / height, header(data), fontsize=9, va="top")
        fig.tight_layout(rect=(0, 0, 1, 1 - (0.55 + 0.16 * len(data["sides"])) / height))
        # No creation date in the file: the same input draws the same bytes.
        metadata = {"Date": None} if out.lower().endswith(".svg") else None
        if out.lower().endswith(".pdf"):
            metadata = {"CreationDate": None}
        fig.savefig(out, dpi=110, metadata=metadata)
        plt.close(fig)


def _draw_points(ax: Any, panel: dict[str, Any]) -> None:
    """A panel of matched requests: each side's value per pair, baseline and candidate."""
    for i, line in enumerate(panel["lines"]):
        ax.plot(
            line["x"],
            _values(line["y"]),
            SIDE_MARKER.get(line["side"], "o"),
            color=PALETTE[i % len(PALETTE)],
            label=line["side"] or line["name"],
            markersize=5,
            linestyle="none",
        )
    ax.set_title(panel["title"])
    ax.set_ylabel(panel["unit"])
    ax.set_xlabel(panel["x_label"])
    ax.set_ylim(bottom=0)
    ax.legend(loc="best", frameon=True, framealpha=0.8)


def _x(value: float, dates: bool, datetime: Any, timezone: Any) -> Any:
    return datetime.fromtimestamp(value, timezone.utc) if dates else value
