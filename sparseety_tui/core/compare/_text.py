"""How a compare document's numbers are written (the Rich report and the TUI's screen)."""

from __future__ import annotations

from typing import Any, NamedTuple

from sparseety_tui.core.compare._figures import figure_better, figure_unit


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
    if float(value).is_integer():
        return f"{int(value):+,}"
    return f"{value:+,.2f}"


def fmt_rel(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:+.1f}%"


def fmt_ci(ci: list[float | None] | None, unit: str) -> str:
    if not ci:
        return "—"
    return f"[{fmt_delta(ci[0], unit)}, {fmt_delta(ci[1], unit)}]"


def change_kind(name: str, value: float | None) -> str:
    """ "better", "worse" or "" (no change, unknown, or a figure with no better side)."""
    better = figure_better(name)
    if value is None or not value or better is None:
        return ""
    return "better" if (value < 0) == (better == "lower") else "worse"


class FigureCells(NamedTuple):
    """A figure's row of the document's delta, written: both views style ``change``."""

    baseline: str
    candidate: str
    delta: str
    rel: str
    ci95: str
    change: str  # change_kind


def figure_cells(doc: dict[str, Any], name: str) -> FigureCells:
    unit = figure_unit(name)
    entry = doc["delta"][name]
    return FigureCells(
        fmt_value(doc["baseline"]["figures"].get(name), unit),
        fmt_value(doc["candidate"]["figures"].get(name), unit),
        fmt_delta(entry["abs"], unit),
        fmt_rel(entry["rel"]),
        fmt_ci(entry.get("ci95"), unit),
        change_kind(name, entry["abs"]),
    )


def before_after(change: dict[str, Any], unit: str) -> str:
    """A regression's per-request figure as ``baseline → candidate``."""
    return f"{fmt_value(change['baseline'], unit)} → {fmt_value(change['candidate'], unit)}"


MATCH_TEXT = {
    "request_id": "by request id",
    "prompt": "by prompt (hash of text or token ids)",
    "workload": "not matched: workloads compared as a whole",
}


def match_text(doc: dict[str, object]) -> str:
    return (
        f"matched {doc['matched']:,} {MATCH_TEXT[str(doc['match_by'])]}; only in baseline "
        f"{doc['only_baseline']:,}, only in candidate {doc['only_candidate']:,}"
    )
