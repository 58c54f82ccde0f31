"""The Textual UI (``tail`` and ``demo``). Imports Textual; nothing in core/ imports this."""
