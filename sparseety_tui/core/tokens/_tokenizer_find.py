"""Finding the model's own tokenizer on this host, offline.

Counts from text are only right with the tokenizer of the model that served the text. On
an inference host it is already on disk. The order (the first that gives one wins; the
outputs name which, ``tokenizer_source``):

1. ``flag``: ``--tokenizer`` (``core.tokens.TokenCounter``; nothing here is asked);
2. ``logged_model_path``: the tokenizer or model path the server logged at start-up
   (``formats._startup``), when it is an absolute path to a tokenizer here. A relative
   path is the server's, relative to a working directory we do not know: it is looked up
   as a hub name instead;
3. ``hf_cache``: that name (``Qwen/Qwen2.5-7B-Instruct``) in the Hugging Face cache
   (``$HF_HUB_CACHE``, ``$HF_HOME/hub``, ``$XDG_CACHE_HOME/huggingface/hub``,
   ``~/.cache/huggingface/hub``), the snapshot ``refs/main`` names, else the newest;
4. ``config``: ``$SPARSEETY_TUI_TOKENIZER`` (a tokenizer.json or model folder; the
   config file's ``tokenizer`` key is a default for ``--tokenizer``, step 1);
5. ``default``: the bundled DeepSeek tokenizer, named as the last resort.

Only ``stat``s and one small read (``refs/main``): nothing is loaded here, the hub is never
asked. A path a log names is only taken when it is a regular file or a folder holding a
tokenizer file, so a log cannot make the tool open a FIFO or a device.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from sparseety_tui.core.tokens._tokens import TokenizerError

#: The values of ``tokenizer_source``, in order of precedence.
SOURCES = ("flag", "logged_model_path", "hf_cache", "config", "default")
#: The environment variable of step 4.
CONFIG_ENV = "SPARSEETY_TUI_TOKENIZER"
#: Files that make a folder a tokenizer (``tokenizer.json`` is read without transformers).
_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json")
#: A hub repository id: ``name`` or ``org/name`` (what the cache folder name is made of).
_REPO_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}(?:/[A-Za-z0-9][A-Za-z0-9._-]{0,95})?")


@dataclass(frozen=True)
class Found:
    """A tokenizer on disk: a ``tokenizer.json`` file or a model folder."""

    path: Path
    name: str  # as the outputs show it
    source: str  # one of SOURCES


def tokenizer_at(path: Path) -> Path | None:
    """``path`` if it is a tokenizer: a regular ``.json`` file, or a folder with one of the
    tokenizer files; else None (never raises)."""
    try:
        if path.is_file():
            return path if path.suffix == ".json" else None
        if path.is_dir():
            return path if any((path / name).is_file() for name in _TOKENIZER_FILES) else None
    except OSError:  # a path too long, a loop of links, a folder we may not read
        return None
    return None


def hf_cache_dirs() -> list[Path]:
    """The Hugging Face hub caches to look in, most specific first (as huggingface_hub
    resolves them: ``HF_HUB_CACHE``, then ``HF_HOME``, then the XDG cache)."""
    dirs: list[Path] = []
    if os.environ.get("HF_HUB_CACHE"):
        dirs.append(Path(os.environ["HF_HUB_CACHE"]).expanduser())
    if os.environ.get("HF_HOME"):
        dirs.append(Path(os.environ["HF_HOME"]).expanduser() / "hub")
    if os.environ.get("XDG_CACHE_HOME"):
        dirs.append(Path(os.environ["XDG_CACHE_HOME"]).expanduser() / "huggingface" / "hub")
    dirs.append(Path("~/.cache/huggingface/hub").expanduser())
    unique: list[Path] = []
    for folder in dirs:
        if folder not in unique:
            unique.append(folder)
    return unique


def cached_snapshot(repo_id: str) -> Path | None:
    """The cached snapshot of hub repository ``repo_id`` that holds a tokenizer: the one
    ``refs/main`` names, else the newest; None when none is cached."""
    repo_id = repo_id.strip().rstrip("/")
    if _REPO_ID_RE.fullmatch(repo_id) is None or ".." in repo_id:
        return None
    folder = "models--" + repo_id.replace("/", "--")
    for cache in hf_cache_dirs():
        snapshots = cache / folder / "snapshots"
        try:
            ref = (cache / folder / "refs" / "main").read_text(encoding="ascii").strip()
        except (OSError, UnicodeDecodeError):
            ref = ""
        if ref and "/" not in ref and ref not in (".", ".."):
            found = tokenizer_at(snapshots / ref)
            if found is not None:
                return found
        try:
            candidates = sorted(
                (p for p in snapshots.iterdir() if p.is_dir()),
                key=lambda p: p.stat().st_mtime,
                reverse=True,
            )
        except OSError:
            continue
        for snapshot in candidates:
            found = tokenizer_at(snapshot)
            if found is not None:
                return found
    return None


def find_logged(model_path: str | None, tokenizer_path: str | None) -> Found | None:
    """Steps 2 and 3 for what a server logged (its tokenizer path first: it is the one
    the server used when it differs from the model)."""
    names = [n for n in (tokenizer_path, model_path) if n]
    for name in names:
        path = Path(name).expanduser()
        if path.is_absolute():
            found = tokenizer_at(path)
            if found is not None:
                return Found(found, f"{name} (logged model path)", "logged_model_path")
    for name in names:
        snapshot = cached_snapshot(name)
        if snapshot is not None:
            return Found(snapshot, f"{name} (from HF cache: {snapshot})", "hf_cache")
    return None


def find_configured() -> Found | None:
    """Step 4: ``$SPARSEETY_TUI_TOKENIZER`` when it is set; one that names no tokenizer is
    an error (as a bad ``--tokenizer`` is), not silently the default."""
    value = os.environ.get(CONFIG_ENV)
    if not value:
        return None
    found = tokenizer_at(Path(value).expanduser())
    if found is None:
        raise TokenizerError(f"${CONFIG_ENV}: not a tokenizer.json or model folder: {value}")
    return Found(found, f"{value} (from ${CONFIG_ENV})", "config")
