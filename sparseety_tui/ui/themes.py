"""Themes as data: ``themes/*.json`` describe ``textual.theme.Theme`` fields.

They ship inside the package (``sparseety_tui/themes``, linked from ``<repo>/themes``),
and ``$SPARSEETY_THEMES`` can add a folder of one's own. Should none be found, the names
still work: they fall back to Textual's built-in themes of the same kind.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from textual.filter import LineFilter, Monochrome, NoColor
from textual.theme import BUILTIN_THEMES, Theme

_THEME_FIELDS = (
    "primary",
    "secondary",
    "accent",
    "warning",
    "error",
    "success",
    "foreground",
    "background",
    "surface",
    "panel",
    "boost",
)

#: --theme names when no theme files are found: the nearest built-in Textual theme.
_FALLBACK = {"dark": "textual-dark", "light": "textual-light", "ansi": "ansi-dark"}


class ThemeError(ValueError):
    """A theme file that cannot be read, or an unknown ``--theme`` name."""


@dataclass(frozen=True)
class ThemeSet:
    themes: dict[str, Theme]  # by Textual name
    aliases: dict[str, str]  # alias (and name) -> Textual name
    problems: tuple[str, ...]  # files that could not be loaded (shown, not fatal)

    def resolve(self, name: str) -> str:
        key = name.strip().lower()
        if key in self.aliases:
            return self.aliases[key]
        if key in BUILTIN_THEMES:
            return key
        known = ", ".join(sorted(set(self.aliases) | {"(any Textual theme)"}))
        raise ThemeError(f"unknown theme {name!r} (known: {known})")


def theme_dirs() -> list[Path]:
    dirs: list[Path] = []
    env = os.environ.get("SPARSEETY_THEMES")
    if env:
        dirs.append(Path(env))
    # Shipped inside the package (a wheel has them too); `themes/` at the repo root is a
    # link to the same folder.
    dirs.append(Path(__file__).resolve().parents[1] / "themes")
    return [d for d in dirs if d.is_dir()]


def theme_from_data(data: dict[str, Any]) -> Theme:
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise ThemeError("theme without a name")
    primary = data.get("primary")
    if not isinstance(primary, str):
        raise ThemeError(f"theme {name}: 'primary' colour missing")
    kwargs: dict[str, Any] = {k: data[k] for k in _THEME_FIELDS if isinstance(data.get(k), str)}
    variables = data.get("variables") or {}
    if not isinstance(variables, dict):
        raise ThemeError(f"theme {name}: 'variables' must be an object")
    return Theme(
        name=name,
        dark=bool(data.get("dark", True)),
        ansi=bool(data.get("ansi", False)),
        variables={str(k): str(v) for k, v in variables.items()},
        **kwargs,
    )


def load_themes(dirs: list[Path] | None = None) -> ThemeSet:
    themes: dict[str, Theme] = {}
    aliases: dict[str, str] = {}
    problems: list[str] = []
    for directory in theme_dirs() if dirs is None else dirs:
        for path in sorted(directory.glob("*.json")):
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                if not isinstance(data, dict):
                    raise ThemeError("not a JSON object")
                theme = theme_from_data(data)
            except (OSError, ValueError) as exc:
                problems.append(f"{path}: {exc}")
                continue
            if theme.name in themes:
                continue  # an earlier directory ($SPARSEETY_THEMES) wins
            themes[theme.name] = theme
            aliases[theme.name] = theme.name
            for alias in data.get("aliases") or []:
                aliases.setdefault(str(alias).lower(), theme.name)
    for alias, builtin in _FALLBACK.items():
        aliases.setdefault(alias, builtin)
    return ThemeSet(themes, aliases, tuple(problems))


def default_theme_name() -> str:
    """True colour terminals get the dark theme; anything else the 16-colour one."""
    if os.environ.get("COLORTERM", "").lower() in ("truecolor", "24bit"):
        return "dark"
    return "ansi"


def no_color_filters(filters: list[LineFilter]) -> list[LineFilter]:
    """The app's output filters for ``NO_COLOR`` (https://no-color.org): terminal default
    colours. Textual picks its Monochrome filter when the theme at start-up is not an
    ANSI one; it maps every colour to a grey, and the 16-colour theme's "default"
    colours to black, so on a 256-colour terminal every row was drawn black on black.
    NoColor drops colours instead; app.tcss (``:nocolor``) gives the emphasis that
    colour gave (cursor row reversed) by bold, underline and reverse."""
    return [NoColor() if isinstance(f, Monochrome) else f for f in filters]
