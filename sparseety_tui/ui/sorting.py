"""How a sort order is said: one wording for the table header, the status line, the
`s`/`S` keys and the command palette, so that what a label promises is what happens."""

from __future__ import annotations

from rich.cells import cell_len, set_cell_size

from sparseety_tui.ui.fmt import fit


def sort_arrow(reverse: bool) -> str:
    """↑ ascending (the query's default), ↓ descending (``ViewQuery.reverse``)."""
    return "↓" if reverse else "↑"


def sort_words(column: str | None, reverse: bool) -> str:
    """ "latency ↑ ascending", "arrival order", "arrival order, newest first"."""
    if column is None:
        return "arrival order, newest first" if reverse else "arrival order"
    return f"{column} {sort_arrow(reverse)} {'descending' if reverse else 'ascending'}"


def sorted_title(title: str, reverse: bool, width: int, align: str) -> str:
    """A column title with its sort arrow in exactly ``width`` cells. The arrow always
    shows: when title and arrow do not fit, the title is cut (no "…": the arrow ends it).
    A numeric column's title is as wide as its cells, so "prompt↑" would otherwise be cut
    to "promp…" and the arrow lost."""
    arrow = sort_arrow(reverse)
    if cell_len(title) + 1 <= width:
        return fit(title + arrow, width, align)
    return set_cell_size(title, max(width - 1, 0)) + arrow if width > 0 else ""
