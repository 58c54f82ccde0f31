"""A ``Redactor`` from settings: which rules, with which actions, on which keys.

The settings come from the command line and the config files (``cli.config``); this
module checks them (an unknown rule or action is a ``PolicyError`` naming it) and does no
I/O: the key is read by the caller.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from sparseety_tui.core.redact._engine import Redactor
from sparseety_tui.core.redact._rules import ACTIONS, BUILTIN, IP_RULES, USER_KEYS, Rule

#: ``--redact`` modes: off; on (the rules); text (the rules, and prompt/completion text
#: dropped wholesale).
MODES = ("off", "on", "text")


class PolicyError(ValueError):
    """A redaction setting that cannot be used; the message names it."""


@dataclass(frozen=True)
class RedactSettings:
    mode: str = "off"
    keep_routing: bool = False
    key_file: str | None = None
    #: rule name -> action, over the built-in defaults (``user_id`` included)
    actions: Mapping[str, str] = field(default_factory=dict)
    user_keys: Sequence[str] = USER_KEYS
    #: extra rules from config: (name, regex, action)
    patterns: Sequence[tuple[str, str, str]] = ()

    @property
    def enabled(self) -> bool:
        return self.mode != "off"


RULE_NAMES = (*(r.name for r in BUILTIN), "user_id")


def check(settings: RedactSettings) -> list[Rule]:
    """The rules ``settings`` give, checked; ``PolicyError`` for a bad one."""
    if settings.mode not in MODES:
        raise PolicyError(f"redact: unknown mode {settings.mode!r} (one of {', '.join(MODES)})")
    for name, action in settings.actions.items():
        if name not in RULE_NAMES:
            raise PolicyError(f"redact.actions.{name}: no such rule ({', '.join(RULE_NAMES)})")
        _check_action(f"redact.actions.{name}", name, action)
    rules = [replace(r, action=settings.actions.get(r.name, r.action)) for r in BUILTIN]
    for i, (name, pattern, action) in enumerate(settings.patterns):
        where = f"redact.rules[{i}]"
        _check_action(where, name, action)
        try:
            compiled = re.compile(pattern)
        except re.error as exc:
            raise PolicyError(f"{where}.pattern: {exc}") from None
        if compiled.search(""):
            raise PolicyError(f"{where}.pattern: matches the empty string")
        rules.append(Rule(name, compiled, action))
    return rules


def _check_action(where: str, rule: str, action: str) -> None:
    if action not in ACTIONS:
        raise PolicyError(f"{where}: unknown action {action!r} (one of {', '.join(ACTIONS)})")
    if action == "subnet" and rule not in IP_RULES:
        raise PolicyError(f"{where}: subnet is only for {' and '.join(IP_RULES)}")


def make_redactor(settings: RedactSettings, key: bytes) -> Redactor:
    """The ``Redactor`` of checked ``settings``, hashing with ``key``."""
    return Redactor(
        key,
        check(settings),
        user_keys=tuple(settings.user_keys),
        user_action=settings.actions.get("user_id", "hash"),
        drop_text=settings.mode == "text",
        keep_routing=settings.keep_routing,
    )
