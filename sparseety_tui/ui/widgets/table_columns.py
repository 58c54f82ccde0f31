"""The request table's columns: which fit a width, how wide each is, how times are written."""

from __future__ import annotations

from dataclasses import dataclass, replace

from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

from sparseety_tui.formats import utc_text
from sparseety_tui.ui.fmt import fit
from sparseety_tui.ui.sorting import sorted_title


@dataclass(frozen=True)
class Column:
    key: str  # matches core.query.SORT_COLUMNS
    title: str
    width: int
    priority: int  # lower survives narrower terminals
    align: str = "right"


COLUMNS: tuple[Column, ...] = (
    # All eleven fit the table's share of a 160-column terminal (91 cells).
    Column("time", "received", 8, 2, "left"),
    Column("id", "request id", 12, 0, "left"),
    # Shown only when more than one log is read (``layout_columns(with_file=True)``).
    Column("file", "file", 12, 2, "left"),
    Column("model", "model", 12, 9, "left"),
    Column("state", "state", 8, 1, "left"),
    Column("prompt", "prompt", 6, 3),
    Column("completion", "compl", 6, 3),
    Column("cached", "cached", 6, 6),
    Column("skip", "skip%", 5, 4),
    Column("experts", "k/E", 5, 8),
    Column("latency", "latency", 7, 5),
    Column("ttft", "ttft", 6, 7),
    # The timing group (``w``): where each request's time went, and the part that dominated.
    Column("queue", "queue", 6, 2),
    Column("prefill", "prefill", 7, 3),
    Column("decode", "decode", 6, 3),
    Column("why", "why", 7, 1, "left"),
)
ID_MAX = 36  # the id column takes the spare width, up to this
#: The columns shown only with the timing group.
TIMING_KEYS = ("queue", "prefill", "decode", "why")
#: With the timing group, the order of the columns (the figures of time side by side) and
#: the priorities that change: time before the sparse figures, which drop first. At 80
#: columns that leaves id, received, state, queue, prefill, decode, ttft, latency and why.
TIMING_ORDER = (
    "time",
    "id",
    "file",
    "model",
    "state",
    "prompt",
    "completion",
    "cached",
    "skip",
    "experts",
    "queue",
    "prefill",
    "decode",
    "ttft",
    "latency",
    "why",
)
TIMING_PRIORITY = {
    "latency": 1,
    "time": 3,
    "file": 4,
    "ttft": 4,
    "prompt": 5,
    "completion": 6,
    "skip": 7,
    "cached": 8,
    "experts": 9,
}


def columns_for(timing: bool) -> tuple[Column, ...]:
    """The table's columns, in order: without the timing group as they always were; with
    it, the timing columns in and the priorities of ``TIMING_PRIORITY``."""
    if not timing:
        return tuple(c for c in COLUMNS if c.key not in TIMING_KEYS)
    by_key = {c.key: c for c in COLUMNS}
    return tuple(
        replace(by_key[key], priority=TIMING_PRIORITY.get(key, by_key[key].priority))
        for key in TIMING_ORDER
    )


def time_pattern(span: tuple[float, float] | None) -> str:
    """How the ``received`` column writes a time: the time of day while every request
    is on one UTC day; with the date when they span more (the year too across years)."""
    if span is None:
        return "%H:%M:%S"
    first, last = (utc_text(t, "%Y-%m-%d") or "" for t in span)
    if first == last:
        return "%H:%M:%S"
    return "%m-%d %H:%M:%S" if first[:4] == last[:4] else "%Y-%m-%d %H:%M:%S"


def layout_columns(
    width: int, time_cells: int = 8, with_file: bool = False, timing: bool = False
) -> list[tuple[Column, int]]:
    """Columns that fit ``width`` (dropping the least important first) and their widths;
    ``time_cells``: the width of the ``received`` column (wider with dates); the ``file``
    column only ``with_file`` (more than one log read); the timing group with ``timing``."""
    columns = tuple(
        replace(c, width=time_cells) if c.key == "time" else c
        for c in columns_for(timing)
        if with_file or c.key != "file"
    )
    chosen = sorted(columns, key=lambda c: c.priority)
    while chosen:
        need = sum(c.width for c in chosen) + len(chosen) - 1
        if need <= width or len(chosen) == 1:
            break
        chosen.pop()
    ordered = [c for c in columns if c in chosen]
    spare = max(0, width - (sum(c.width for c in ordered) + len(ordered) - 1))
    out: list[tuple[Column, int]] = []
    for column in ordered:
        w = column.width
        if column.key == "id":
            grow = min(spare, ID_MAX - w)
            w += grow
            spare -= grow
        elif column.key in ("model", "file") and spare:
            grow = min(spare, 10)
            w += grow
            spare -= grow
        out.append((column, w))
    return out


def header_strip(
    layout: list[tuple[Column, int]],
    sort: str | None,
    reverse: bool,
    base: Style,
    sorted_style: Style,
    width: int,
) -> Strip:
    """The table's header line for ``layout``: each title fitted to its column, the
    sorted column's marked (``sort``, ``reverse``) in ``sorted_style``."""
    segments: list[Segment] = []
    for i, (column, w) in enumerate(layout):
        title = fit(column.title, w, column.align)
        style = base
        if sort == column.key:
            title = sorted_title(column.title, reverse, w, column.align)
            style = sorted_style
        if i:
            segments.append(Segment(" ", base))
        segments.append(Segment(title, style))
    return Strip(segments).extend_cell_length(width, base).crop(0, width)
