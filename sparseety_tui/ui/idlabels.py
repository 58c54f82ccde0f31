"""Request ids shortened for a narrow column so that no two rows on screen read the same.

Cutting the end (``chatcmpl-3f9…``) makes every vLLM id look alike: their first nine
characters are the same and the random part follows. A shortened id keeps a little of its
head and most of its tail (``chat…5e4f01ab``: sub-requests ``…-0``/``…-1`` and counters
``req-0001`` differ there). The rows shown together are labelled together: when two
labels would still read the same, other cuts are tried (more head, then a window that
slides over the id) until every label on screen is distinct. Pure functions, no Textual.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

from rich.cells import cell_len

from sparseety_tui.ingest.snapshot import Snapshot
from sparseety_tui.ui.safe_text import escape

ELLIPSIS = "…"
#: Sliding windows tried up to this offset (bounds the work on hostile multi-kB ids).
MAX_WINDOW_START = 512


def cut(text: str, width: int, head: int) -> str:
    """``text`` in ``width`` characters: ``head`` of its first, an ellipsis, then its end."""
    if len(text) <= width:
        return text
    if width < 2:
        return text[:width]
    head = max(0, min(head, width - 1))
    tail = width - 1 - head
    return text[:head] + ELLIPSIS + (text[-tail:] if tail else "")


def window(text: str, width: int, start: int) -> str:
    """``width`` characters of ``text`` from ``start`` on, an ellipsis where it was cut."""
    if len(text) <= width:
        return text
    start = max(0, min(start, len(text) - width))
    if start == 0:
        return text[: width - 1] + ELLIPSIS
    if start + width >= len(text):
        return ELLIPSIS + text[len(text) - width + 1 :]
    return ELLIPSIS + text[start + 1 : start + width - 1] + ELLIPSIS


def default_head(width: int) -> int:
    return width // 3


def unique_labels(ids: Sequence[str], width: int) -> list[str]:
    """Labels of at most ``width`` characters for ``ids`` (one screen of rows), distinct
    wherever the ids are. Ids that fit are shown whole; ids with wide characters are cut at
    the end (their cells and characters differ), as before."""
    if all(len(i) <= width or not i.isascii() for i in ids):
        return [i if len(i) <= width or width < 1 else _end_cut(i, width) for i in ids]
    labels = [
        cut(i, width, default_head(width)) if i.isascii() else _end_cut(i, width) for i in ids
    ]
    clashing = _clashes(ids, labels)
    if not clashing:
        return labels
    # The rows whose labels clash get another cut, the same for all of them, so that
    # they line up and differ where the ids do.
    longest = min(max(len(ids[k]) for k in clashing), MAX_WINDOW_START)
    tries: list[Callable[[str], str]] = [
        partial(_cut_at, width=width, head=h) for h in range(width)
    ]
    tries += [partial(_window_at, width=width, start=start) for start in range(longest)]
    for relabel in tries:
        trial = list(labels)
        for k in clashing:
            trial[k] = relabel(ids[k])
        if not _clashes(ids, trial):
            return trial
    return labels  # no single cut separates them all (not seen in real ids)


def _cut_at(text: str, *, width: int, head: int) -> str:
    return cut(text, width, head)


def _window_at(text: str, *, width: int, start: int) -> str:
    return window(text, width, start)


def _end_cut(text: str, width: int) -> str:
    if cell_len(text) <= width:
        return text
    out = ""
    for char in text:
        if cell_len(out + char) > width - 1:
            break
        out += char
    return out + ELLIPSIS


def _clashes(ids: Sequence[str], labels: Sequence[str]) -> set[int]:
    """Positions whose label is shared with a row of another id."""
    first: dict[str, str] = {}
    shared: set[str] = set()
    for request_id, label in zip(ids, labels):
        seen = first.setdefault(label, request_id)
        if seen != request_id:
            shared.add(label)
    return {k for k, label in enumerate(labels) if label in shared}


def screen_labels(snap: Snapshot, positions: range, width: int) -> dict[int, str]:
    """The id label of each table position in ``positions`` of ``snap``'s view, made
    distinct together (``unique_labels``); a position past the store's rows is blank."""
    ids: list[str] = []
    if snap.state is not None:
        store_ids = snap.state.store.ids
        ids = [
            escape(store_ids[row]) if row < snap.rows else ""
            for row in (snap.row_at(p) for p in positions)
        ]
    return dict(zip(positions, unique_labels(ids, width)))
