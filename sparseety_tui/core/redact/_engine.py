"""The redaction engine: one ``Redactor`` per run, applied where text leaves the tool.

Pure and synchronous: it is given its HMAC key (``cli.redact_key`` reads or creates the
key file) and never does I/O. Two entry points cover every output:

- ``Redactor.text(s)`` for a string about to be shown or written (a prompt, a raw log
  line, a row copied to the clipboard);
- ``Redactor.document(value)`` for a JSON-able value (an ``extract`` record, the
  ``summary --json`` document, an HTTP answer): every string in it goes through ``text``,
  the values of user-id keys are hashed whole, prompt/completion text is dropped with
  ``drop_text`` and per-token routing is dropped unless ``keep_routing``.

Redaction runs on the text as logged (decoded), *before* ``core.text`` escapes it for a
terminal or JSON: the escapes make controls visible but do not change what a pattern must
see. Invisible characters (zero-width spaces, bidi controls, C0/C1 controls) are removed
first: ``ann\\u200b@example.com`` is still an email to whoever reads it.

``counts`` says how many values each rule replaced, never which: the redaction summary.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from sparseety_tui.core.redact._rules import BUILTIN, USER_KEYS, Rule, user_rule
from sparseety_tui.core.text import INVISIBLE

#: Hex digits of the HMAC-SHA256 kept in a hash token: 64 bits, so two values of one rule
#: share a token only by a 1-in-2^32 chance in 4 billion values, and the digest cannot be
#: searched for without the key.
HASH_HEX = 16

#: JSON keys whose string values are prompt or completion text (``--redact text`` drops
#: them wholesale); the trace format's, OpenAI's and the token lines'.
TEXT_KEYS = frozenset({"prompt", "completion", "text", "messages", "head", "tail"})
#: Mappings whose ``prompt``/``completion`` keys name a phase, not text
#: (``extract``'s ``token_counts_from: {prompt: "reported"}``).
PHASE_MAPS = frozenset({"token_counts_from", "with_lower_bound_tokens"})

#: JSON keys of per-token routing and token ids: they reveal the text (arXiv 2602.04105).
#: Dropped when they hold per-token lists or ids; a dict (``experts: {topk, total}``) is an
#: aggregate and stays. Skipped heads and dropped (capacity-overflow) assignments stay: they
#: are the skip figures themselves (``skipped_head_slots``, ``dropped_expert_slots``), a
#: few marks per token, not the router's choices.
ROUTING_KEYS = frozenset(
    {
        "routing",
        "routing_segments",
        "routing_weights",
        "experts",
        "weights",
        "token_id",
        "token_ids",
        "prompt_token_ids",
        "completion_token_ids",
        "output_token_ids",
        "input_ids",  # SGLang's request and response fields
        "origin_input_ids",
        "output_ids",
    }
)

#: What the rules look through: controls but tab, newline and carriage return, and the
#: invisible code points ``core.text`` would spell out (they can split a secret).
_HIDDEN_CHARS = frozenset(
    chr(c)
    for c in (
        *range(0x00, 0x09),
        0x0B,
        0x0C,
        *range(0x0E, 0x20),
        0x7F,
        *range(0x80, 0xA0),
        *INVISIBLE,
    )
)
_HIDDEN = re.compile("[" + "".join(map(re.escape, sorted(_HIDDEN_CHARS))) + "]")


_DIGIT = re.compile(r"\d")

#: Strings up to this long that hold no secret are remembered (a set of clean strings, at
#: most ``MEMO_ENTRIES``, then started again): an ``extract`` record's keys and most of its
#: values are the same in every record, and redaction was 12x the cost of extract without.
MEMO_MAX_CHARS = 256
MEMO_ENTRIES = 65_536


@dataclass
class Redactor:
    """Rules applied to text and documents, with the counts of what each replaced."""

    key: bytes = field(repr=False)  # the HMAC key: never in a repr, a log or a traceback
    rules: Sequence[Rule] = BUILTIN
    user_keys: Sequence[str] = USER_KEYS
    user_action: str = "hash"
    drop_text: bool = False
    keep_routing: bool = False
    counts: Counter[str] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        self._user_keys = frozenset(k.lower() for k in self.user_keys)
        #: Keys with a rule of their own (text, routing, user ids): all others are plain.
        self._special = TEXT_KEYS | ROUTING_KEYS | self._user_keys
        self._clean: set[str] = set()
        self._user = user_rule(self.user_keys, self.user_action)
        self._rules = (*self.rules, self._user)
        # The tokens ``text`` writes, by this redactor's rule names: text redacted once is
        # left as it is when redacted again (a raw line redacted, then pretty-printed and
        # redacted on its way to the screen).
        names = "|".join(sorted({re.escape(r.name) for r in self._rules}))
        self._token = re.compile(
            rf"\[(?:REDACTED:(?:{names})|(?:{names}):[0-9a-f]{{{HASH_HEX}}})\]"
        )

    def fresh(self) -> Redactor:
        """The same rules and key with counts of its own (one per ``serve`` answer)."""
        return replace(self, counts=Counter())

    # -- strings --------------------------------------------------------------------

    def token(self, rule: str, value: str) -> str:
        """The hash token of ``value``: keyed, so it cannot be reversed by trying every
        email or phone number; the same under one key across files and runs."""
        digest = hmac.new(self.key, f"{rule}\0{value}".encode(), hashlib.sha256).hexdigest()
        return f"[{rule}:{digest[:HASH_HEX]}]"

    def _replace(self, rule: Rule, value: str) -> str:
        self.counts[rule.name] += 1
        if rule.action == "hash":
            return self.token(rule.name, value)
        if rule.action == "drop":
            return ""
        if rule.action == "subnet":
            return _subnet(value)
        return f"[REDACTED:{rule.name}]"

    def text(self, text: str) -> str:
        """``text`` with every secret replaced (the rules' matches on the text as it is,
        earlier rules first where two overlap). Text without a match comes back as is."""
        if len(text) > MEMO_MAX_CHARS:
            return self._text(text)
        if text in self._clean:  # keys, model and file names: the same in every record
            return text
        before = self.counts.total()
        out = self._text(text)
        if out == text and self.counts.total() == before:
            if len(self._clean) >= MEMO_ENTRIES:
                self._clean.clear()
            self._clean.add(text)
        return out

    def _text(self, text: str) -> str:
        spans = self.replacements(text)
        if not spans:
            return text
        out: list[str] = []
        done = 0
        for start, end, replacement in spans:
            out.append(text[done:start])
            out.append(replacement)
            done = end
        out.append(text[done:])
        return "".join(out)

    def replacements(self, text: str) -> list[tuple[int, int, str]]:
        """``spans`` of ``text`` as the rules see it, without the characters that could
        hide a secret from them (``ann\u200b@example.com``), in ``text``'s own positions:
        a hidden character inside a secret goes with it, any other stays where it is (a
        colour code, a progress bar's ``\r``: a line keeps its format)."""
        if not _HIDDEN.search(text):
            return self.spans(text)
        kept = [i for i, c in enumerate(text) if c not in _HIDDEN_CHARS]
        found = self.spans("".join(text[i] for i in kept))
        return [(kept[start], kept[end - 1] + 1, rep) for start, end, rep in found]

    def spans(self, text: str) -> list[tuple[int, int, str]]:
        """``(start, end, replacement)`` of each secret in ``text``, in order, not
        overlapping (counted as replaced)."""
        found: list[tuple[int, int, int]] = []  # start, end, the rule's priority
        digit = _DIGIT.search(text) is not None
        for priority, rule in enumerate(self._rules):
            if rule.needs_digit and not digit:
                continue
            if rule.needles and not any(map(text.__contains__, rule.needles)):
                continue
            pos = 0
            while (match := rule.pattern.search(text, pos)) is not None:
                start, end = _secret_span(match)
                if rule.fit is not None and end > start:
                    end = start + rule.fit(text[start:end])
                if end > start:
                    found.append((start, end, priority))
                    pos = end
                else:  # not a secret: one that starts inside it may still be one
                    pos = match.start() + 1
        if not found:
            return []
        if "[" in text:  # tokens written by an earlier pass are not secrets
            tokens = [(m.start(), m.end()) for m in self._token.finditer(text)]
            found = [f for f in found if not any(f[0] < e and s < f[1] for s, e in tokens)]
        out: list[tuple[int, int, str]] = []
        done = 0
        for start, end, priority in sorted(found):
            if start < done:
                continue  # inside a span an earlier match took
            out.append((start, end, self._replace(self._rules[priority], text[start:end])))
            done = end
        return out

    # -- documents ------------------------------------------------------------------

    def document(self, value: Any, parent: Any = None) -> Any:
        """A copy of a JSON-able ``value`` with every string redacted (see the module)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return self._mapping(value, parent not in PHASE_MAPS)
        if isinstance(value, list | tuple):
            return [self.document(v) for v in value]
        return value

    def _mapping(self, mapping: dict[Any, Any], holds_text: bool) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        special = self._special
        for key, value in mapping.items():
            name = key.lower() if isinstance(key, str) else key
            shown = self.text(key) if isinstance(key, str) else key
            if name not in special:
                plain = value is None or type(value) in (int, float, bool)
                out[shown] = value if plain else self.document(value, name)
            elif name in TEXT_KEYS and self.drop_text and holds_text and _is_text(value):
                self.counts["text"] += 1
                out[shown] = None
            elif name in ROUTING_KEYS and not self.keep_routing and _per_token(value):
                self.counts["routing"] += 1
            elif name in self._user_keys and isinstance(value, str | int) and value != "":
                out[shown] = self._replace(self._user, str(value))
            else:
                out[shown] = self.document(value, name)
        return out

    def summary(self) -> dict[str, Any]:
        """What was redacted, for the output's redaction summary: counts per rule, never
        values, and what was done to text and routing."""
        return {
            "rules": dict(sorted(self.counts.items())),
            "text": "dropped" if self.drop_text else "redacted",
            "routing": "kept" if self.keep_routing else "dropped",
        }


def _secret_span(match: re.Match[str]) -> tuple[int, int]:
    """The part of a match that is the secret: its first named ``v…`` group that took
    part, else all of it (``api_key=`` before the value stays)."""
    for name in match.re.groupindex:
        if name.startswith("v") and match.start(name) >= 0:
            return match.start(name), match.end(name)
    return match.start(), match.end()


def _is_text(value: Any) -> bool:
    return isinstance(value, str | list)


def _per_token(value: Any) -> bool:
    return isinstance(value, list) or (isinstance(value, int) and not isinstance(value, bool))


def _subnet(value: str) -> str:
    """The network of an address: /24 of an IPv4, /48 of an IPv6."""
    address = ipaddress.ip_address(value.split("%", 1)[0])
    prefix = 24 if address.version == 4 else 48
    return str(ipaddress.ip_network(f"{address}/{prefix}", strict=False))
