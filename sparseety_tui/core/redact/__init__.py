"""Redaction: what must not leave the tool (emails, phone numbers, addresses, keys, card
numbers, user ids, optionally all text), replaced where output is made.

``Redactor`` (engine) is what outputs call; ``rules`` holds the patterns; ``policy``
builds a ``Redactor`` from the settings (command line and config)."""

from sparseety_tui.core.redact._detail import redact_detail
from sparseety_tui.core.redact._engine import Redactor
from sparseety_tui.core.redact._logcopy import (
    TEXT_KEPT,
    TOKEN_ROUTING,
    Counter,
    TokenRouting,
    redact_line,
)
from sparseety_tui.core.redact._policy import PolicyError, RedactSettings, make_redactor
from sparseety_tui.core.redact._rules import ACTIONS, BUILTIN, USER_KEYS, Rule

__all__ = [
    "ACTIONS",
    "BUILTIN",
    "TEXT_KEPT",
    "TOKEN_ROUTING",
    "USER_KEYS",
    "Counter",
    "PolicyError",
    "RedactSettings",
    "Redactor",
    "Rule",
    "TokenRouting",
    "make_redactor",
    "redact_detail",
    "redact_line",
]
