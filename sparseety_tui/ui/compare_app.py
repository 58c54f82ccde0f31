"""The app of ``compare --tui``: the compare screen over two sides read in batch.

No ingest worker: both sides were read (and frozen) before the app starts, so the screens
only show them. Themes as the main app's (``ui.themes``).
"""

from __future__ import annotations

from typing import ClassVar

from textual.app import App
from textual.binding import BindingType
from textual.screen import Screen

from sparseety_tui.ui import keys
from sparseety_tui.ui.safe_text import set_redactor
from sparseety_tui.ui.screens.compare import CompareData, CompareScreen
from sparseety_tui.ui.themes import ThemeSet, default_theme_name, load_themes


class CompareApp(App[int]):
    # Every global key but the diagnostics (``summary`` of each side has its lines by kind).
    BINDINGS: ClassVar[list[BindingType]] = list(
        keys.bindings(tuple(k for k in keys.GLOBAL if k.action != "diagnostics"))
    )
    TITLE = "sparseety-tui compare"

    def __init__(
        self, data: CompareData, *, theme: str | None = None, themes: ThemeSet | None = None
    ) -> None:
        super().__init__()
        self.data = data
        set_redactor(data.redactor)  # every shown text through safe_text.escape is redacted
        self.themes = themes if themes is not None else load_themes()
        self.theme_name = self.themes.resolve(theme or default_theme_name())

    def get_default_screen(self) -> Screen[None]:
        return CompareScreen(self.data)

    def on_mount(self) -> None:
        for theme in self.themes.themes.values():
            self.register_theme(theme)
        self.theme = self.theme_name

    def on_unmount(self) -> None:
        set_redactor(None)

    async def settle(self, timeout: float = 30.0) -> bool:
        """Nothing is read while the app runs: always settled (the main app's test hook)."""
        return True

    def action_help(self) -> None:
        from sparseety_tui.ui.screens.help import HelpScreen

        self.push_screen(HelpScreen())
