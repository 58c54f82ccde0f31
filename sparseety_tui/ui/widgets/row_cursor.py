"""What the list widgets (request table, error list) share: their component classes and
the CSS of their row cursor."""

from __future__ import annotations

from collections.abc import Iterable


def component_classes(widget: str, names: Iterable[str]) -> set[str]:
    """``widget``'s component classes (``request-table--header`` ...) for ``names``."""
    return {f"{widget}--{name}" for name in names}


def cursor_css(widget: str, component: str) -> str:
    """The CSS of ``widget``'s row cursor (its ``component`` class): the block cursor's
    colours, bold while the widget has focus."""
    return f"""
    {widget} > .{component} {{
        background: $block-cursor-blurred-background;
        color: $block-cursor-blurred-foreground;
    }}
    {widget}:focus > .{component} {{
        background: $block-cursor-background;
        color: $block-cursor-foreground;
        text-style: bold;
    }}
    """
