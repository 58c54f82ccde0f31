"""Batch ingestion: whole files through sources → formats → core, for `extract` and `summary`.

The TUI follows files live through ``sources.watcher``; the batch commands read each
file once, start to end, with the same Extractor.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sparseety_tui.core.costmodel import DEFAULT_SHAPE, ModelShape, shape_from_config
from sparseety_tui.core.extractor import Extractor
from sparseety_tui.core.tokens import TokenCounter
from sparseety_tui.sources.lines import iter_chunks


class InputError(Exception):
    """A path the user gave that cannot be read; the message is shown as is."""


@dataclass(frozen=True)
class Options:
    format: str | None = None
    tokenizer: str | None = None
    model_config: str | None = None


def check_readable(path: str) -> None:
    """Fail early, with one clear sentence, on a path we cannot read."""
    if not os.path.exists(path):
        raise InputError(f"cannot read {path!r}: no such file or directory")
    if os.path.isdir(path):
        if not os.access(path, os.R_OK | os.X_OK):
            raise InputError(f"cannot read directory {path!r}: permission denied")
        return
    if not os.path.isfile(path):
        raise InputError(f"cannot read {path!r}: not a regular file")
    try:
        with open(path, "rb") as handle:
            handle.read(1)
    except OSError as exc:
        raise InputError(f"cannot read {path!r}: {exc.strerror or exc}") from exc


def log_files_in(directory: str) -> list[str]:
    """Visible entries of a directory that are not directories (sorted; our markers and
    temporary files skipped). Special files stay in the list, so the caller reports them
    instead of silently passing them over."""
    names = sorted(
        name
        for name in os.listdir(directory)
        if not name.startswith(".")
        and not name.endswith((".done", ".tmp", ".md"))
        and not os.path.isdir(os.path.join(directory, name))
    )
    return [os.path.join(directory, name) for name in names]


def expand_inputs(paths: list[str]) -> list[str]:
    files: list[str] = []
    for path in paths:
        check_readable(path)
        files.extend(log_files_in(path) if os.path.isdir(path) else [path])
    return files


def make_extractor(options: Options) -> Extractor:
    return Extractor(tokens=TokenCounter(options.tokenizer), forced_format=options.format)


def make_shape(options: Options) -> ModelShape:
    return shape_from_config(options.model_config) if options.model_config else DEFAULT_SHAPE


def ingest_file(extractor: Extractor, path: str) -> int:
    """Read a whole file into the extractor; returns its file index."""
    file = extractor.add_file(str(Path(path)))
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
    extractor = make_extractor(options)
    for path in expand_inputs(paths):
        ingest_file(extractor, path)
    return extractor
