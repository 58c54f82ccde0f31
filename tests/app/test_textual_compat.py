"""The Textual privates the app and its tests use (ui/textual_compat.py) against the
installed Textual: its version is one they were checked on, and each still exists."""

from __future__ import annotations

import re
from importlib.metadata import version

import pytest
from textual.app import App
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Input

from sparseety_tui.ui.textual_compat import CHECKED_VERSIONS, PRIVATES, KeyFirstInput


def _version_tuple(text: str) -> tuple[int, ...]:
    """The release numbers of a version (``8.3.0rc1``: (8, 3, 0))."""
    match = re.match(r"\d+(?:\.\d+)*", text)
    assert match is not None, f"not a version: {text!r}"
    return tuple(int(part) for part in match.group().split("."))


def test_the_installed_textual_is_one_the_privates_were_checked_on() -> None:
    installed = version("textual")
    low, high = CHECKED_VERSIONS
    assert low <= _version_tuple(installed) < high, (
        f"Textual {installed} is outside the versions sparseety_tui/ui/textual_compat.py "
        f"was checked against (>= {'.'.join(map(str, low))}, < {'.'.join(map(str, high))}): "
        "check each private it lists against this version (what it is for, that it still "
        "does that), then widen CHECKED_VERSIONS"
    )


def _instances() -> dict[type[object], object]:
    app: App[None] = App()
    return {App: app, Widget: Widget(), Screen: Screen(), Input: Input()}


@pytest.mark.parametrize(("cls", "name"), PRIVATES, ids=[f"{c.__name__}.{n}" for c, n in PRIVATES])
def test_each_private_still_exists(cls: type[object], name: str) -> None:
    instances = _instances()
    holder = next((obj for kind, obj in instances.items() if issubclass(kind, cls)), None)
    found = hasattr(cls, name) or (holder is not None and hasattr(holder, name))
    assert found, f"Textual {version('textual')} has no {cls.__name__}.{name} any more"


def test_the_input_handlers_keyfirstinput_takes_first_are_textuals() -> None:
    # KeyFirstInput works because Textual calls a class's own ``_on_key``/``_on_paste``:
    # they must be Input's handlers by those names.
    assert "_on_key" in vars(Input) and "_on_paste" in vars(Input)
    assert vars(KeyFirstInput)["_on_key"] is not vars(Input)["_on_key"]


def test_version_numbers_are_read_as_release_tuples() -> None:
    assert _version_tuple("8.2.8") == (8, 2, 8)
    assert _version_tuple("8.3.0rc1") == (8, 3, 0)
    assert CHECKED_VERSIONS[1] <= (8, 3, 0)
