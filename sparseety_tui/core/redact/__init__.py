"""Redaction: what must not leave the tool (emails, phone numbers, addresses, keys, card
numbers, user ids, optionally all text), replaced where output is made.

``Redactor`` (engine) is what outputs call; ``rules`` holds the patterns; ``policy``
builds a ``Redactor`` from the settings (command line and config).
"""

from sparseety_tui.core.redact.engine import Redactor
from sparseety_tui.core.redact.rules import ACTIONS, BUILTIN, USER_KEYS, Rule

__all__ = ["ACTIONS", "BUILTIN", "USER_KEYS", "Redactor", "Rule"]
