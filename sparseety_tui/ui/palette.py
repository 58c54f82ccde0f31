"""The command palette's entries (ctrl+p) beside Textual's own: themes, the screens, and
the main screen's actions with the keys that do the same."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from textual.app import SystemCommand

from sparseety_tui.core.query import SORT_COLUMNS
from sparseety_tui.ui.screens.main import MainScreen
from sparseety_tui.ui.sorting import sort_words
from sparseety_tui.ui.themes import ThemeSet


def palette_commands(
    themes: ThemeSet,
    set_theme: Callable[[str], object],
    main: MainScreen,
    *,
    diagnostics: Callable[[], object],
    trends: Callable[[], object],
    errors: Callable[[], object],
) -> Iterator[SystemCommand]:
    """The app's palette entries; ``set_theme`` switches to a theme by name, the three
    callables open their screens."""
    for alias, name in (("dark", None), ("light", None), ("ansi", None)):
        target = name or themes.resolve(alias)
        yield SystemCommand(
            f"Theme: {alias}",
            f"Switch to the {alias} theme ({target})",
            lambda t=target: set_theme(t),
        )
    yield SystemCommand("Follow the tail", "Follow new requests (f)", main.action_follow)
    yield SystemCommand("Pause / resume", "Freeze the view (space)", main.action_pause)
    yield SystemCommand("Diagnostics", "Lines not understood (d)", diagnostics)
    yield SystemCommand("Trends", "Per-minute plots: since when (T)", trends)
    yield SystemCommand("Errors", "Every error, with file and line (e)", errors)
    yield SystemCommand("Filter", "Filter the request table (/)", main.action_filter)
    yield SystemCommand("Clear filter", "Show every request", main.action_clear_filter)
    yield SystemCommand("Copy request id", "Copy the selected id (y)", main.action_copy_id)
    yield SystemCommand("Copy row", "Copy the selected row as text (Y)", main.action_copy_row)
    yield SystemCommand(
        "Copy as summary command",
        "The filter as a ready-to-run summary command (C)",
        main.action_copy_command,
    )
    yield SystemCommand(
        "Time window",
        "Only requests of a time window: 10m, 10:00..10:30 (t)",
        main.action_time_window,
    )
    # The same words the status line shows after `s` / `S` (ui.sorting), in the
    # order `s` steps through, each direction what it says.
    for column in (None, *SORT_COLUMNS):
        for reverse in (False, True):
            yield SystemCommand(
                f"Sort: {sort_words(column, reverse)}",
                "Order of the request table (s: next column, S: reverse)",
                lambda c=column, r=reverse: main.set_sort(c, reverse=r),
            )
