"""What ``serve`` runs with, its defaults in one place, and the checks made before it starts.

Import-light on purpose (no ASGI stack): the CLI checks the address, the token and the
limits with it, and exits 2 with one line, before anything heavy loads. The defaults live
here only, so that a config file can later supply them without touching the CLI.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from sparseety_tui.core.redact import Redactor
from sparseety_tui.core.text import quote
from sparseety_tui.receive import is_loopback

#: Loopback only unless asked (``--allow-remote`` with a token).
DEFAULT_HOST = "127.0.0.1"
#: The port of the SparSEEty tutorial's ``serve``.
DEFAULT_PORT = 8765
#: Request bodies above this are refused with 413 (``--max-body``).
DEFAULT_MAX_BODY = 1 << 20
#: Extractions of ``POST /extract`` run at once (``--workers``); more wait their turn.
DEFAULT_WORKERS = 2
#: ``GET /requests`` answers at most this many records unless ``limit`` says otherwise.
DEFAULT_REQUESTS_LIMIT = 1000
#: Per-(layer, expert) series at most (``--expert-series``): a DeepSeek-V3-size model has
#: 61 x 256 = 15,616 of them per host, more than a Prometheus should take from one target.
DEFAULT_EXPERT_SERIES_BUDGET = 2000
#: A token file shorter than this is refused: a guessable token is no token.
MIN_TOKEN_CHARS = 16
#: A token file is read whole; anything longer is not a token file.
MAX_TOKEN_FILE_BYTES = 4096


class SettingsError(Exception):
    """Settings ``serve`` refuses to start with; the message is one line, shown as is."""


@dataclass(frozen=True)
class ServeSettings:
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    allow_remote: bool = False
    token_file: str | None = None
    max_body: int = DEFAULT_MAX_BODY
    workers: int = DEFAULT_WORKERS
    #: Prompts and completions in answers (``extract --text``).
    text: bool = False
    #: Per-token routing (experts, weights, skipped heads per token) in request details.
    keep_routing: bool = False
    expert_series: bool = False
    expert_series_budget: int = DEFAULT_EXPERT_SERIES_BUDGET
    #: ``--redact``: applied to every answer (a fresh copy each, for its own counts).
    redactor: Redactor | None = None

    def redacting(self) -> Redactor | None:
        return None if self.redactor is None else self.redactor.fresh()


def check(settings: ServeSettings) -> None:
    """Refuse what ``serve`` must not start with (``SettingsError``, one line)."""
    if not 0 <= settings.port <= 65535:
        raise SettingsError(f"--port {settings.port}: not a port (0-65535)")
    if settings.max_body < 1:
        raise SettingsError("--max-body must be at least 1 byte")
    if settings.workers < 1:
        raise SettingsError("--workers must be at least 1")
    if settings.expert_series_budget < 0:
        raise SettingsError("--expert-series-budget must be >= 0")
    if not is_loopback(settings.host):
        if not settings.allow_remote:
            raise SettingsError(
                f"--host {quote(settings.host)} is not a loopback address: other machines "
                "could read the logs' figures; add --allow-remote and --token-file to serve it"
            )
        if settings.token_file is None:
            raise SettingsError(
                f"--host {quote(settings.host)} with --allow-remote needs --token-file "
                "(clients then send Authorization: Bearer TOKEN)"
            )
    if settings.token_file is not None:
        read_token(settings.token_file)


def read_token(path: str) -> bytes:
    """The bearer token in ``path`` (surrounding whitespace removed), checked."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_TOKEN_FILE_BYTES + 1)
    except OSError as exc:
        raise SettingsError(
            f"--token-file {quote(path)}: {exc.strerror or type(exc).__name__}"
        ) from None
    if len(data) > MAX_TOKEN_FILE_BYTES:
        raise SettingsError(
            f"--token-file {quote(path)}: longer than {MAX_TOKEN_FILE_BYTES} bytes, not a token"
        )
    token = data.strip()
    if len(token) < MIN_TOKEN_CHARS:
        raise SettingsError(
            f"--token-file {quote(path)}: the token must be at least {MIN_TOKEN_CHARS} "
            "characters (e.g. `openssl rand -hex 32 > FILE`)"
        )
    if any(b < 0x21 or b > 0x7E for b in token):
        raise SettingsError(
            f"--token-file {quote(path)}: the token must be printable ASCII without spaces"
        )
    if os.name == "posix" and os.stat(path).st_mode & 0o077:
        # Readable by others: they could read the token too. Refused, like ssh does.
        raise SettingsError(
            f"--token-file {quote(path)}: readable by group or others (chmod 600 it)"
        )
    return token
