"""The run's ``Redactor`` (None: redaction off), from the command line and the config, and
the one line of what it redacted (counts per rule, never values) printed at the end."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from sparseety_tui.cli.errors import CliError
from sparseety_tui.cli.redact_key import RedactKeyError, load_key
from sparseety_tui.core.redact import (
    USER_KEYS,
    PolicyError,
    Redactor,
    RedactSettings,
    make_redactor,
)
from sparseety_tui.core.text import escape


def redact_settings(args: argparse.Namespace) -> RedactSettings:
    config: dict[str, Any] = getattr(args, "config_settings", {})

    def value(path: str, default: Any) -> Any:
        setting = config.get(path)
        return default if setting is None or setting.value is None else setting.value

    return RedactSettings(
        mode=getattr(args, "redact", "off") or "off",
        keep_routing=bool(getattr(args, "keep_routing", False)),
        key_file=getattr(args, "redact_key_file", None),
        actions=value("redact.actions", {}),
        user_keys=tuple(value("redact.user_keys", USER_KEYS)),
        patterns=tuple(value("redact.rules", ())),
    )


def redactor_of(args: argparse.Namespace) -> Redactor | None:
    """The ``Redactor`` of ``--redact`` (or ``redact:`` in a config), None when off; a bad
    rule or an unusable key file is a ``CliError`` before anything is read."""
    settings = redact_settings(args)
    if not settings.enabled:
        return None
    try:
        return make_redactor(settings, load_key(settings.key_file))
    except (PolicyError, RedactKeyError) as exc:
        raise CliError(str(exc)) from None


def report(redactor: Redactor | None) -> None:
    """``redacted: email 2, phone 1 ...`` on stderr (what, never which)."""
    if redactor is None:
        return
    counts = redactor.summary()["rules"]
    shown = ", ".join(f"{name} {n}" for name, n in counts.items()) or "nothing matched"
    print(escape(f"redacted: {shown}"), file=sys.stderr)
