"""Inline sparklines as text (work in any terminal, 16 colours included)."""

from __future__ import annotations

from collections.abc import Sequence

BARS = "▁▂▃▄▅▆▇█"


def sparkline(values: Sequence[float | None], width: int) -> str:
    """The last ``width`` values as bar characters, scaled to their maximum (unknown: space)."""
    tail = list(values)[-width:] if width > 0 else []
    known = [v for v in tail if v is not None]
    top = max(known, default=0.0)
    out = []
    for value in tail:
        if value is None:
            out.append(" ")
        elif top <= 0:
            out.append(BARS[0])
        else:
            out.append(BARS[min(len(BARS) - 1, int(value / top * (len(BARS) - 1) + 0.5))])
    return "".join(out).rjust(width)


def bar(fraction: float, width: int) -> str:
    """A horizontal bar of ``width`` cells filled to ``fraction`` (1/8-cell resolution)."""
    fraction = min(1.0, max(0.0, fraction))
    eighths = round(fraction * width * 8)
    full, rest = divmod(eighths, 8)
    partial = " ▏▎▍▌▋▊▉"[rest] if rest else ""
    return ("█" * full + partial).ljust(width)[:width]
