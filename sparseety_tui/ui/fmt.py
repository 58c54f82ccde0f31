"""Display formatting shared by the screens and widgets: counts, durations, clock times,
fitting text to a cell width. Unknown (-1, NaN, None) is always shown as "—", and so is a
time that is no date (formats._timestamps.utc_text never raises)."""

from __future__ import annotations

import math
from typing import Any

from rich.cells import cell_len, set_cell_size

from sparseety_tui.formats import known_time, utc_text


def fmt_count(value: int) -> str:
    if value < 0:
        return "—"
    if value < 100_000:
        return f"{value:,}" if value >= 10_000 else str(value)
    if value < 10_000_000:
        return f"{value / 1000:.0f}k"
    return f"{value / 1_000_000:.0f}M"


def fmt_seconds(value: float) -> str:
    if math.isnan(value):
        return "—"
    if value < 1:
        return f"{value * 1000:.0f}ms"
    if value < 100:
        return f"{value:.2f}s"
    return f"{value:.0f}s"


def fmt_time(ts: float) -> str:
    return utc_text(ts, "%H:%M:%S") or "—"


def fit(text: str, width: int, align: str) -> str:
    """``text`` padded or cut (with …) to exactly ``width`` cells."""
    if cell_len(text) > width:
        return set_cell_size(text, width - 1) + "…" if width > 1 else set_cell_size(text, width)
    if align == "right":
        return " " * (width - cell_len(text)) + text
    return set_cell_size(text, width)


def known_ts(ts: Any) -> bool:
    """A number that is a date the tool can show (formats._timestamps.known_time)."""
    return isinstance(ts, (int, float)) and not isinstance(ts, bool) and known_time(ts)


def fmt_clock(ts: Any) -> str:
    """Time of day in UTC with milliseconds, or — when unknown or out of range."""
    text = utc_text(ts, "%H:%M:%S")
    if text is None:
        return "—"
    return text + f".{int(ts * 1000) % 1000:03d}"


def fmt_day(ts: Any) -> str:
    return utc_text(ts, "%Y-%m-%d") or ""
