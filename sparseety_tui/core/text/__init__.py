"""Text shown literally (``escape``, ``json_text``, ``escape_json``: the one rule for the
TUI and the CLI) and short display names for the files read together."""

from sparseety_tui.core.text._filenames import short_names
from sparseety_tui.core.text._literal import (
    INVISIBLE,
    escape,
    escape_json,
    json_bytes,
    json_text,
    quote,
)

__all__ = [
    "INVISIBLE",
    "escape",
    "escape_json",
    "json_bytes",
    "json_text",
    "quote",
    "short_names",
]
