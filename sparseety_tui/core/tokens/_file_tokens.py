"""Which tokenizer counts the text of each file: per file, from the model its server logged.

One command may read logs of several servers, each with its own model, so the choice is
per file (and shared by every incarnation of a rotated path): the first start-up line of
a file that names a model (``formats._startup``) picks the tokenizer for all of that file's
requests. ``Extractor.add_file`` reads the file's head for that line before any request is
parsed (``HEAD_BYTES``), so requests logged before it, and every byte range a worker reads
(ingest.parallel), are counted alike; a file that has no such line yet (a live log that
is still empty) chooses when the line arrives. Tokenizers found for the same path are
shared, so each is loaded once.

``--tokenizer`` overrides all of this (``automatic`` is False); without a logged model a
file uses the base tokenizer (``$SPARSEETY_TUI_TOKENIZER`` or the default).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sparseety_tui.core.tokens._tokenizer_find import find_configured, find_logged
from sparseety_tui.core.tokens._tokens import TokenCounter
from sparseety_tui.events import MetaPayload
from sparseety_tui.formats import head_startup_meta
from sparseety_tui.sources import open_regular

#: How much of a file's head is read for its start-up line (the banner and the arguments
#: come first; a ServerArgs line is ~5 KB).
HEAD_BYTES = 1 << 20


def read_startup_meta(path: str) -> MetaPayload | None:
    """The start-up line's fields in the head of ``path``; None when it has none or cannot
    be read (that is reported when the file itself is read)."""
    try:
        f, _st = open_regular(path)
        with f:
            head = f.read(HEAD_BYTES)
    except (OSError, ValueError):
        return None
    return head_startup_meta(head)


#: The start-up fields a file's tokenizer and counts depend on.
STARTUP_KEYS = ("model_path", "tokenizer_path", "max_log_len")


def base_tokenizer(spec: str | None) -> TokenCounter:
    """The tokenizer of files that name no model: ``--tokenizer`` (``spec``; then it
    counts every file), else ``$SPARSEETY_TUI_TOKENIZER``, else the bundled default.
    Nothing is loaded yet."""
    if spec is not None:
        return TokenCounter(spec)
    configured = find_configured()
    if configured is not None:
        return TokenCounter(path=configured.path, name=configured.name, source=configured.source)
    return TokenCounter()


class FileTokenizers:
    """The tokenizer of each file index; ``base`` for a file without its own."""

    def __init__(self, base: TokenCounter) -> None:
        self.base = base
        self._by_file: dict[int, TokenCounter] = {}
        self._by_path: dict[str, TokenCounter] = {}

    @property
    def automatic(self) -> bool:
        """False when ``--tokenizer`` named one: it counts every file."""
        return self.base.source != "flag"

    def for_file(self, file: int) -> TokenCounter:
        return self._by_file.get(file, self.base)

    def snapshot(self) -> dict[int, TokenCounter]:
        """The choices so far (for a frozen copy)."""
        return dict(self._by_file)

    def inherit(self, new: int, old: int) -> None:
        """A new incarnation of a path keeps the tokenizer of the one before, unless its
        own head named another."""
        if new not in self._by_file and old in self._by_file:
            self._by_file[new] = self._by_file[old]

    def choose(self, file: int, meta: Mapping[str, Any]) -> None:
        """Choose ``file``'s tokenizer from a start-up line's fields, unless one was chosen
        already (the first such line of a file wins) or ``--tokenizer`` was given."""
        if not self.automatic or file in self._by_file:
            return
        model, tokenizer = meta.get("model_path"), meta.get("tokenizer_path")
        model = model if type(model) is str else None
        tokenizer = tokenizer if type(tokenizer) is str else None
        if model is None and tokenizer is None:
            return
        found = find_logged(model, tokenizer)
        logged = tokenizer or model
        if found is None:
            # The default still counts, and its name says the logged model was not found.
            key = f"missing:{logged}"
            counter = self._by_path.get(key)
            if counter is None:
                counter = TokenCounter(
                    name=f"{self.base.name}; no tokenizer for the logged model {logged} "
                    "on this host",
                    fallback=self.base,
                )
                self._by_path[key] = counter
        else:
            key = f"{found.source}:{found.path}"
            counter = self._by_path.get(key)
            if counter is None:
                counter = TokenCounter(
                    path=found.path, name=found.name, source=found.source, fallback=self.base
                )
                self._by_path[key] = counter
        self._by_file[file] = counter
