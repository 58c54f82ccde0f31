"""A request's detail, re-read on demand: ``build_detail`` re-parses the lines a request's
row points at (file, offset, length) into its fields, token trace and raw lines, for the
detail screen, ``extract`` and ``serve``; ``DetailCache`` keeps the recent ones.
``derive_times`` splits a request's time into its parts from its line times."""

from sparseety_tui.core.detail._detail import (
    DETAIL_MAX_TEXT_CHARS,
    DetailCache,
    RequestDetail,
    TokenView,
    build_detail,
    request_prompt,
    request_text,
)
from sparseety_tui.core.detail._reread import SourceText
from sparseety_tui.core.detail._timing import derive_times

__all__ = [
    "DETAIL_MAX_TEXT_CHARS",
    "DetailCache",
    "RequestDetail",
    "SourceText",
    "TokenView",
    "build_detail",
    "derive_times",
    "request_prompt",
    "request_text",
]
