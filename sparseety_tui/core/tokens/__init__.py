"""Token counts from text: the tokenizer each file's server logged (found offline, named in
every output) and ``TokenCounter``, which counts with it."""

from sparseety_tui.core.tokens._file_tokens import (
    STARTUP_KEYS,
    FileTokenizers,
    base_tokenizer,
    read_startup_meta,
)
from sparseety_tui.core.tokens._tokens import TokenCounter, TokenizerError

__all__ = [
    "STARTUP_KEYS",
    "FileTokenizers",
    "TokenCounter",
    "TokenizerError",
    "base_tokenizer",
    "read_startup_meta",
]
