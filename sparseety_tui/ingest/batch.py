"""Batch ingestion: whole files through sources → formats → core, for `extract` and `summary`.

The TUI follows files live through ``sources.watcher``; the batch commands read each
file once, start to end, with the same Extractor.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sparseety_tui.core.costmodel import DEFAULT_SHAPE, ModelShape, shape_from_config
from sparseety_tui.core.extractor import Extractor
from sparseety_tui.core.file_tokens import base_tokenizer
from sparseety_tui.core.literal import quote
from sparseety_tui.core.series import EngineSeries
from sparseety_tui.core.tokens import TokenCounter
from sparseety_tui.sources.inputs import InputPath, expand, os_reason
from sparseety_tui.sources.lines import iter_chunks


class InputError(Exception):
    """A path the user gave that cannot be read; the message is shown as is."""


@dataclass(frozen=True)
class Options:
    format: str | None = None
    tokenizer: str | None = None
    model_config: str | None = None


def cannot_read(item: InputPath) -> str:
    """Why ``item`` cannot be read, as one line naming it."""
    return f"cannot read {quote(item.path)}: {item.reason}"


@dataclass(frozen=True)
class BatchInputs:
    """What a batch command reads: every path in order, named or found in a named
    directory. ``files`` are the regular files; ``skipped`` the directory entries it
    passes over, each with its reason, for the caller to report (the batch is partial)."""

    items: list[InputPath]

    @property
    def files(self) -> list[str]:
        return [item.path for item in self.items if item.kind == "file"]

    @property
    def skipped(self) -> list[InputPath]:
        return [item for item in self.items if item.kind != "file"]


def batch_inputs(paths: list[str]) -> BatchInputs:
    """The paths ``paths`` stand for (``sources.inputs.expand``), checked for a batch.

    A path the user named that cannot be read (missing, unreadable, a FIFO or a device)
    is an ``InputError``, raised before anything is read; an entry of a named directory
    that cannot be read is kept as skipped, so one bad file does not stop the batch.
    """
    items = expand(paths)
    for item in items:
        if item.named and item.kind != "file":
            raise InputError(cannot_read(item))
    return BatchInputs(items)


@contextmanager
def reading(path: str) -> Iterator[None]:
    """Turn an OSError while ``path`` is read into an ``InputError`` that names it."""
    try:
        yield
    except OSError as exc:
        raise InputError(f"cannot read {quote(path)}: {os_reason(exc)}") from exc


def load_tokens(options: Options) -> TokenCounter:
    """The command's base tokenizer (``core.file_tokens.base_tokenizer``; a file whose
    server logged its model counts with that model's, found at ``add_file``). One the user
    named (``--tokenizer``, ``$SPARSEETY_TUI_TOKENIZER``) is loaded now, so that a bad one
    is a one-line error at start (not a failure on the first text, in the middle of a batch
    or inside the UI); the default one still loads only when text needs counting."""
    tokens = base_tokenizer(options.tokenizer)
    if tokens.source in ("flag", "config"):
        tokens.load()
    return tokens


def make_extractor(
    options: Options, tokens: TokenCounter | None = None, engine: EngineSeries | None = None
) -> Extractor:
    """An Extractor for ``options``; pass ``tokens`` to share one loaded tokenizer, and
    ``engine`` for a series of another kind (a time window's, ``core.timewindow``)."""
    return Extractor(
        tokens=tokens if tokens is not None else load_tokens(options),
        forced_format=options.format,
        engine=engine,
    )


def make_shape(options: Options) -> ModelShape:
    return shape_from_config(options.model_config) if options.model_config else DEFAULT_SHAPE


def ingest_file(extractor: Extractor, path: str) -> int:
    """Read a whole file into the extractor; returns its file index."""
    file = extractor.add_file(str(Path(path)))
    with reading(path):
        extractor.feed_chunks(file, iter_chunks(path))
    extractor.finish_file(file)
    release_free_memory()
    return file


def release_free_memory() -> None:
    """Hand memory that parsing freed back to the OS (glibc keeps it in its heap).

    Reading a big log allocates and frees millions of short-lived objects; glibc keeps
    the freed pages, so the process looks ~40% bigger than what it holds. malloc_trim
    returns them. A no-op where glibc is not the allocator.
    """
    global _malloc_trim
    if _malloc_trim is None:
        try:
            import ctypes

            _malloc_trim = ctypes.CDLL("libc.so.6").malloc_trim
        except (OSError, AttributeError):
            _malloc_trim = False
    if _malloc_trim:
        _malloc_trim(0)


_malloc_trim: Any = None


def ingest_paths(options: Options, paths: list[str]) -> Extractor:
    """The regular files ``paths`` stand for through one Extractor (entries of a named
    directory that cannot be read are left out: ``summary`` reports them, see
    ``batch_inputs``)."""
    extractor = make_extractor(options)
    for path in batch_inputs(paths).files:
        ingest_file(extractor, path)
    return extractor
