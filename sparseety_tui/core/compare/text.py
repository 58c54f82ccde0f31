"""How a compare document's numbers are written (the Rich report and the TUI's screen)."""

from __future__ import annotations

from sparseety_tui.core.compare.figures import figure_better


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
