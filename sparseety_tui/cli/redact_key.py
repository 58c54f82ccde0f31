"""The per-install HMAC key of ``--redact``'s hashes: read, or created on first use.

One key per install makes a value's token the same across files and runs ("the same user
again") while nobody without the key can test guesses against it. The file holds 64 hex
characters, mode 0600, in $XDG_CONFIG_HOME/sparseety-tui/redact.key (else
~/.config/...); ``--redact-key-file`` (or ``redact.key_file``) names another.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping

from sparseety_tui.core.text import quote
from sparseety_tui.sources import os_reason

KEY_NAME = "redact.key"


class RedactKeyError(Exception):
    """The key file cannot be used: one line saying why."""


def config_dir(environ: Mapping[str, str] | None = None) -> str:
    """$XDG_CONFIG_HOME/sparseety-tui, else ~/.config/sparseety-tui."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "sparseety-tui")


def default_key_path(environ: Mapping[str, str] | None = None) -> str:
    return os.path.join(config_dir(environ), KEY_NAME)


def load_key(path: str | None = None) -> bytes:
    """The key in ``path`` (default: the per-install one, created 0600 if missing)."""
    named = path is not None
    path = path or default_key_path()
    if not os.path.exists(path):
        if named:
            raise RedactKeyError(f"--redact-key-file {quote(path)}: no such file")
        _create(path)
    try:
        mode = os.stat(path).st_mode
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise RedactKeyError(
                f"redaction key {quote(path)} is readable by others (chmod 600 it): "
                "whoever has it can test guesses against the hashes"
            )
        with open(path, "rb") as handle:
            key = handle.read().strip()
    except OSError as exc:
        raise RedactKeyError(f"redaction key {quote(path)}: {os_reason(exc)}") from None
    if len(key) < 16:
        raise RedactKeyError(f"redaction key {quote(path)}: shorter than 16 bytes")
    return key


def _create(path: str) -> None:
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return  # another run made it first: use theirs
    except OSError as exc:
        raise RedactKeyError(
            f"cannot create redaction key {quote(path)}: {os_reason(exc)}"
        ) from None
    import secrets  # (here: hmac and hashlib are for the one run that makes a key)

    with os.fdopen(fd, "w") as handle:
        handle.write(secrets.token_hex(32) + "\n")
