"""The redaction rules: what counts as a secret in log text, each with a default action.

Each rule is a compiled regex (ASCII digits where a format is ASCII, Unicode ``\\d`` where
people type full-width digits, e.g. Chinese phone numbers) plus an optional validator that
rejects look-alikes (a card number must pass Luhn, an IPv6 candidate must parse). A
pattern's named group ``v``, when it has one, is the secret; the rest of the match (a
header name, ``api_key=``) is kept so the reader still sees what was there.

Sample values, one per rule: ``ann@example.com``; ``+1 (415) 555-0132``,
``+86 138 0013 8000``, ``13800138000``; ``192.168.10.7``, ``2001:db8::7``;
``sk-proj-abc...``, ``hf_...``, ``AKIA...``, ``Authorization: Bearer ...``,
``api_key=...``; ``4111 1111 1111 1111``; ``"user_id": "u-829"``.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

#: What a rule does with a match: replace it by ``[REDACTED:rule]`` (mask), by a keyed
#: hash ``[rule:1a2b3c4d5e6f]`` (hash: the same value gives the same token), by nothing
#: (drop), or keep the network of an IP address (subnet: /24 for IPv4, /48 for IPv6).
ACTIONS = ("mask", "hash", "drop", "subnet")

#: Rules whose matches are addresses: the only ones ``subnet`` applies to.
IP_RULES = ("ipv4", "ipv6")


@dataclass(frozen=True, slots=True)
class Rule:
    name: str
    pattern: re.Pattern[str]
    action: str
    #: Characters one of which a match must contain: a text without any is skipped
    #: without running the regex (most log text has no ``@``, no ``sk-``).
    needles: tuple[str, ...] = ()
    #: How much of a match is the secret: its length (the whole match: ``len``), 0 when
    #: none of it is (a card number that fails Luhn, a parse that fails).
    fit: Callable[[str], int] | None = None
    #: A match holds a digit: a text without any is skipped (one search for all rules).
    needs_digit: bool = False


def _whole(check: Callable[[str], bool]) -> Callable[[str], int]:
    return lambda text: len(text) if check(text) else 0


def card_prefix(text: str) -> int:
    """The longest run of whole digit groups at the start of ``text`` that is a card
    number (Luhn): ``4111 1111 1111 1111 0`` holds one before its last group."""
    ends = [
        i + 1
        for i, c in enumerate(text)
        if c.isdigit() and (i + 1 == len(text) or not text[i + 1].isdigit())
    ]
    for end in reversed(ends):
        if luhn(text[:end]):
            return end
    return 0


def luhn(text: str) -> bool:
    """The Luhn check of the digits in ``text`` (13 to 19 of them, as card numbers have)."""
    digits = [int(c) for c in text if c.isdigit()]
    if not 13 <= len(digits) <= 19:
        return False
    total = 0
    for i, d in enumerate(reversed(digits)):
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _ipv6(text: str) -> bool:
    """A real IPv6 address with at least two groups written (``a::b``, not ``::``)."""
    try:
        ipaddress.IPv6Address(text.split("%", 1)[0])
    except ValueError:
        return False
    # ``a::b`` and ``dead::beef`` parse too, but in text they are code, not addresses.
    return sum(1 for part in text.split(":") if part) >= 2 and any(c.isdigit() for c in text)


def _phone(text: str) -> bool:
    """8 to 15 digits, as E.164 numbers have: not a date, a version or a short code."""
    return 8 <= sum(c.isdigit() for c in text) <= 15


_WORD = r"A-Za-z0-9_"
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"

BUILTIN: tuple[Rule, ...] = (
    # Secrets first: an API key holds digits a phone rule would otherwise take apart.
    Rule(
        "api_key",
        re.compile(
            r"(?i:(?:authorization|proxy-authorization)\s*[:=]\s*[\"']?"
            r"(?:(?:bearer|basic|token)\s+)?)(?!(?i:bearer|basic|token)\b)(?P<v>[A-Za-z0-9._~+/=:-]{6,})"
            r"|(?i:\b(?:bearer)\s+)(?P<v2>[A-Za-z0-9._~+/=-]{12,})"
            r"|(?i:\b(?:x-)?(?:api[_-]?key|apikey|access[_-]?token|auth[_-]?token|"
            r"secret[_-]?key|client[_-]?secret|password|passwd)[\"']?\s*[:=]\s*[\"']?)"
            r"(?!(?:None|null|none|NULL|false|true)\b)(?P<v3>[^\s\"'&,;})]{4,})"
            rf"|(?<![{_WORD}-])(?P<v4>sk-[A-Za-z0-9_-]{{16,}}|hf_[A-Za-z0-9]{{20,}}"
            rf"|(?:AKIA|ASIA)[0-9A-Z]{{16}})(?![{_WORD}])"
        ),
        "mask",
        ("uthoriz", "UTHORIZ", "earer", "EARER", "sk-", "hf_", "AKIA", "ASIA", "=", ":"),
    ),
    Rule(
        "email",
        re.compile(
            # The domain ends where no letter, digit or dot-label follows: an id that goes on
            # after it with a hyphen (``ann@example.com-0013``) still hides the address.
            r"(?<![\w.+-])[\w.+-]{1,64}@(?:[\w-]{1,63}\.)+[A-Za-z]{2,24}(?!\w|-?[\w-]*\.[A-Za-z])",
        ),
        "hash",
        ("@",),
    ),
    Rule(
        "card",
        # 13-19 digits, optionally in groups split by one space or dash; Luhn-checked.
        # Issuers' numbers start with 2-6: a 13-digit epoch in milliseconds (1...) is no card.
        # Not the digits after a decimal point: 19.428522417494694 is a float in a log.
        re.compile(r"(?<![\w.-])[2-6](?:[ -]?\d){12,18}(?!\w|\.\d)"),
        "mask",
        fit=card_prefix,
        needs_digit=True,
    ),
    Rule(
        "phone",
        re.compile(
            # International: +CC then groups (E.164 allows 15 digits in all).
            r"(?<![\w+])\+\d{1,3}(?:[ .-]?\(?\d{1,4}\)?){2,5}(?![\w])"
            # Mainland China mobile: 1[3-9] and 9 more digits, optionally +86 / 86.
            # (Full-width digits too: an IME types them.)
            r"|(?<![\w+])(?:86[ -]?)?[1１][3-9３-９]\d(?:[ -]?\d{4}){2}(?![\w])"
            # North American without the country code: (415) 555-0132, 415-555-0132.
            r"|(?<![\w(.-])(?:\(\d{3}\)\s?|\d{3}[ .-])\d{3}[ .-]\d{4}(?![\w.-])"
        ),
        "mask",
        fit=_whole(_phone),
        needs_digit=True,
    ),
    Rule(
        "ipv4",
        re.compile(rf"(?<![\w.]){_OCTET}(?:\.{_OCTET}){{3}}(?![\w]|\.[0-9])"),
        "hash",
        (".",),
        needs_digit=True,
    ),
    Rule(
        "ipv6",
        re.compile(r"(?<![\w:.])[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}(?:%[\w]+)?(?![\w:])"),
        "hash",
        (":",),
        fit=_whole(_ipv6),
        needs_digit=True,
    ),
)

#: JSON keys whose values are user ids, hashed wherever they appear (``user``, OpenAI's
#: request field; ``user_id``); ``redact.user_keys`` in a config replaces the list.
USER_KEYS = ("user", "user_id")


def user_rule(keys: Sequence[str], action: str) -> Rule:
    """``user_id``: the value after one of ``keys`` in text (``"user": "u-1"``,
    ``user_id=u-1``), for user ids inside logged text and raw log lines."""
    names = "|".join(re.escape(k) for k in sorted(keys, key=len, reverse=True))
    return Rule(
        "user_id",
        # The value is an id's characters (letters of any script, digits, ``. @ + - / : # | ~``):
        # it ends at punctuation, so it cannot take in the start of a secret written after
        # it (``user_id=u-1「+1 (415) 555-0132`` kept ``(415) 555-0132`` for a second pass).
        re.compile(rf"(?<![{_WORD}])(?:{names})[\"']?\s*[:=]\s*[\"']?(?P<v>[\w.@+\-/:#|~]+)"),
        action,
        ("=", ":"),
    )
