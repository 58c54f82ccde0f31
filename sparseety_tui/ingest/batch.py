"""Batch ingestion: whole files through sources → formats → core, for `extract` and `summary`.

The TUI follows files live through ``sources._watcher``; the batch commands read each
file once, start to end, with the same Extractor.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sparseety_tui.core.extraction import Extractor
from sparseety_tui.core.figures import DEFAULT_SHAPE, ModelShape, shape_from_config
from sparseety_tui.core.store import EngineSeries
from sparseety_tui.core.text import quote
from sparseety_tui.core.tokens import TokenCounter, base_tokenizer
from sparseety_tui.sources import Chunk, InputPath, RawLine, expand, iter_chunks, os_reason


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
    """The paths ``paths`` stand for (``sources._inputs.expand``), checked for a batch.

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
    """The command's base tokenizer (``core.tokens.base_tokenizer``; a file whose
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
    ``engine`` for a series of another kind (a time window's, ``core.query``)."""
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
    with reading(path), columns_mapped(), without_cyclic_gc():
        extractor.feed_chunks(file, chunks_from_the_heap(iter_chunks(path)))
    extractor.finish_file(file)
    release_free_memory()
    return file


def release_free_memory() -> None:
    """Hand memory that parsing freed back to the OS (glibc keeps it in its heap).

    Reading a big log allocates and frees millions of short-lived objects; glibc keeps
    the freed pages, so the process looks ~40% bigger than what it holds. malloc_trim
    returns them. A no-op where glibc is not the allocator.
    """
    libc = _glibc()
    if libc is not None:
        libc.malloc_trim(0)


def _glibc() -> Any:
    """glibc, for ``malloc_trim`` and ``mallopt``; None where it is not the allocator."""
    global _libc
    if _libc is None:
        try:
            import ctypes

            _libc = ctypes.CDLL("libc.so.6")
            _libc.malloc_trim, _libc.mallopt  # noqa: B018  (both there, or neither used)
        except (OSError, AttributeError):
            _libc = False
    return _libc or None


_libc: Any = None

#: ``mallopt`` parameter numbers (malloc.h: ``M_TRIM_THRESHOLD``, ``M_MMAP_THRESHOLD``).
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
#: While a file is read, blocks this big or bigger get pages of their own (mmap).
MMAP_THRESHOLD_BYTES = 256 << 10
#: Afterwards: glibc's own ceiling for its threshold (temporaries are served from the heap).
HEAP_THRESHOLD_BYTES = 32 << 20


#: While a chunk is read: above a chunk's size (sources._lines.iter_chunks, 1 MiB).
CHUNK_THRESHOLD_BYTES = 4 << 20
#: While a file is read, the heap's top is handed back only above this (or by
#: ``release_free_memory``), so that the chunk just freed is there for the next one.
TRIM_THRESHOLD_BYTES = 64 << 20
#: glibc's default trim threshold (malloc.h: ``DEFAULT_TRIM_THRESHOLD``).
_DEFAULT_TRIM_BYTES = 128 << 10


def chunks_from_the_heap(chunks: Iterator[Chunk | RawLine]) -> Iterator[Chunk | RawLine]:
    """``chunks`` with each one read while the mmap threshold is above a chunk's size
    (inside ``columns_mapped``, which lowers it for the columns).

    A chunk is a 1 MiB ``read`` and its copy up to the last newline: two fresh mappings a
    chunk at the columns' threshold, each page faulted in, zeroed and unmapped again,
    which was a fifth of reading a 1 GB vLLM log (0.6 of the 0.9 s the chunks took, where
    the reads themselves take 0.3 s). From the heap, the blocks one chunk freed are the
    next one's.
    """
    while True:
        _set_malloc(_M_MMAP_THRESHOLD, CHUNK_THRESHOLD_BYTES)
        try:
            chunk = next(chunks, None)
        finally:
            _set_malloc(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)
        if chunk is None:
            return
        yield chunk


def _set_malloc(parameter: int, value: int) -> None:
    libc = _glibc()
    if libc is not None:
        libc.mallopt(parameter, value)


@contextmanager
def without_cyclic_gc() -> Iterator[None]:
    """No cyclic garbage collection while a file is read, and none over what it left
    afterwards: what reading makes (rows' line lists, ids, events) holds no cycles, and
    the collector's passes over the millions of objects a big log leaves (while reading,
    at the next collection after it, and at the interpreter's exit) were ~15 % of
    ``summary`` of a 1 GB vLLM log. ``gc.freeze`` moves them out of its reach."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if collecting:
            gc.enable()


@contextmanager
def columns_mapped() -> Iterator[None]:
    """While a file is read, give every block of ``MMAP_THRESHOLD_BYTES`` or more pages of
    its own (glibc); a no-op where glibc is not the allocator.

    The store's columns are arrays that grow by ``realloc`` as rows come. glibc serves a
    block from its heap unless it is bigger than the mmap threshold, and that threshold
    rises by itself (up to 32 MiB) each time a mapped block is freed. A column in the heap
    that cannot grow in place is copied, old and new both alive meanwhile, and the hole it
    leaves stays: a 200 MB request log peaked 13 MiB (20 bytes a request) above what it
    held while its columns grew. A mapped column is grown by ``mremap``: no copy, no hole.
    Afterwards the threshold is set high: a mapped block costs a page fault a page when it
    is touched, and the totals' numpy temporaries (512 KiB each, made and freed by the
    hundred) then took twice as long; the mapped columns stay mapped.
    """
    _set_malloc(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)
    _set_malloc(_M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES)
    try:
        yield
    finally:
        _set_malloc(_M_MMAP_THRESHOLD, HEAP_THRESHOLD_BYTES)
        _set_malloc(_M_TRIM_THRESHOLD, _DEFAULT_TRIM_BYTES)


def ingest_paths(options: Options, paths: list[str]) -> Extractor:
    """The regular files ``paths`` stand for through one Extractor (entries of a named
    directory that cannot be read are left out: ``summary`` reports them, see
    ``batch_inputs``)."""
    extractor = make_extractor(options)
    for path in batch_inputs(paths).files:
        ingest_file(extractor, path)
    return extractor
