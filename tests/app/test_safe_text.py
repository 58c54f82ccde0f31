"""Hostile log text is shown literally: the safe_text helper, and the app end to end."""

from __future__ import annotations

from apphelpers import async_test, make_app, settle
from rich.cells import cell_len

from sparseety_tui.ui.safe_text import escape, safe_text
from sparseety_tui.ui.screens.detail import DetailScreen
from sparseety_tui.ui.textual_compat import screen_strips
from sparseety_tui.ui.widgets.request_table import RequestTable, fit

HOSTILE = (
    "[bold red]x[/] \x1b[2J\x1b]0;title\x07 \u202eabc\u202c a\u200bb \u2066i\u2069 \x7f\x9b 中文 😀"
)


def test_escape_makes_controls_visible() -> None:
    out = escape(HOSTILE)
    assert "\\x1b[2J" in out and "\\x07" in out and "\\x7f" in out and "\\x9b" in out
    assert "⟨U+202E⟩" in out and "⟨U+202C⟩" in out and "⟨U+200B⟩" in out
    assert "⟨U+2066⟩" in out and "⟨U+2069⟩" in out
    assert "[bold red]x[/]" in out and "中文" in out and "😀" in out
    assert not any(ord(ch) < 0x20 or 0x7F <= ord(ch) < 0xA0 for ch in out)


def test_escape_newlines() -> None:
    assert escape("a\nb\tc\r") == "a\\nb\\tc\\r"
    assert escape("a\nb", keep_newlines=True) == "a↵\nb"


def test_safe_text_is_never_markup() -> None:
    text = safe_text("[bold]not bold[/bold] [link=http://evil]x[/link]")
    assert text.plain == "[bold]not bold[/bold] [link=http://evil]x[/link]"
    assert not text.spans


def test_fit_respects_wide_characters() -> None:
    for width in (1, 2, 3, 5, 8):
        assert cell_len(fit("中文字符😀abc", width, "left")) == width
        assert cell_len(fit("ab", width, "right")) == width


@async_test
async def test_hostile_request_renders_literally() -> None:
    app = make_app(("hostile.jsonl",), request_id="evil-[bold red]x[/]-\u202eid")
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen)
        lines = ["".join(s.text for s in strip) for strip in screen_strips(app.screen)]
        screen_text = "\n".join(lines)
        assert "evil-[bold red]x[/]-⟨U+202E⟩id" in screen_text
        assert "\\x1b[2J" in screen_text and "\\x1b]0;pwned\\x07" in screen_text
        assert "\x1b" not in screen_text and "\u202e" not in screen_text
        # Every line is exactly the screen width: nothing broke the layout.
        assert all(cell_len(line) == 120 for line in lines)
        await pilot.press("escape")
        await pilot.pause()
        strip = app.main_screen.query_one(RequestTable).render_line(1)
        row = "".join(s.text for s in strip)
        assert "evil-[bold red" in row and "\u202e" not in row and cell_len(row) <= 120
