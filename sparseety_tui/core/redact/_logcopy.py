"""A redacted copy of a log, line by line, in the log's own format (``sparseety-tui
redact``): a vLLM log stays a vLLM log, a trace stays a trace, so anyone can run this tool
on the copy and get the same figures.

- A JSON line (a trace record, a log shipper's wrapper) is parsed, redacted as a document
  (``Redactor.document``) and written back as JSON. A trace request record's counts that
  came from its text or its token ids are written into it as explicit numbers first
  (``prompt_tokens``, ``completion_tokens``), so removing the text or the ids changes none.
- Any other line keeps its shape: the rules replace what they match inside it (the line's
  other bytes, colour codes included, stay), and token-id lists keep their length with
  every id set to 0 (``prompt_token_ids: [0, 0, 0]``): the count stays, the ids go.
- Unless ``keep_routing``, per-token routing loses its order: in a request record's
  ``sparse.routing`` the expert ids of each layer are sorted across its tokens (the ids
  ``>= 0`` among the slots that hold one; weights likewise), so every aggregate (routed
  slots, routing rows, the expert-load heat map, the observed k) is the same while which
  token went where, the part that reveals the text, is gone. Token lines' ``experts`` are
  sorted the same way over a request's token lines (``TokenRouting``, two passes). Token
  ids and the base64 blob of an API response's ``routed_experts`` are dropped.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import orjson

from sparseety_tui.core.redact._engine import Redactor
from sparseety_tui.core.text import json_bytes

#: A list of token ids in a text line (vLLM's ``prompt_token_ids: [1, 2, 3]``, SGLang's
#: ``input_ids=[1, 2, 3]`` and ``output_ids``): the prompt itself, to anyone with the tokenizer.
_TOKEN_IDS = re.compile(
    r"(?P<k>\b\w*(?:token_ids|input_ids|output_ids)\b[\"']?\s*[:=]\s*)\[(?P<ids>[\d\s,]*)\]"
)
#: The base64 routing of an API response logged in a line (formats/_routing.py).
_ROUTED_BLOB = re.compile(r"(?P<k>routed_experts[\"']?\s*[:=]\s*[\"'])[A-Za-z0-9+/=]{8,}")
_DIGITS = re.compile(r"\d+")

Counter = Callable[[str], int]

#: The count of token lines whose experts were dropped: the copy's routed-slot figures and
#: expert heat map differ from the original's (``cli.redact_log`` says so).
TOKEN_ROUTING = "token_line_routing"


def _zeroed(match: re.Match[str]) -> str:
    return match.group("k") + "[" + _DIGITS.sub("0", match.group("ids")) + "]"


#: Count of the lines ``--redact text`` could not drop the text of (not JSON: a server
#: log's line keeps its prompt, redacted by the rules; its count may come from it).
TEXT_KEPT = "text_kept_in_lines"


def text_line(line: str, redactor: Redactor) -> str:
    """A line that is not JSON, with its shape kept (see the module)."""
    if redactor.drop_text and ("prompt" in line or "text" in line):
        redactor.counts[TEXT_KEPT] += 1
    if "_ids" in line:
        line, n = _TOKEN_IDS.subn(_zeroed, line)
        redactor.counts["token_ids"] += n
    if not redactor.keep_routing and "routed_experts" in line:
        line, n = _ROUTED_BLOB.subn(r"\g<k>", line)
        redactor.counts["routing"] += n
    return redactor.text(line)


def _zero_ids(value: Any, redactor: Redactor) -> Any:
    """``value`` with the token-id lists inside its strings zeroed (a log shipper's JSON
    wrapping a vLLM line holds them as text)."""
    if isinstance(value, str):
        if "_ids" not in value:
            return value
        zeroed, n = _TOKEN_IDS.subn(_zeroed, value)
        redactor.counts["token_ids"] += n
        return zeroed
    if isinstance(value, dict):
        return {k: _zero_ids(v, redactor) for k, v in value.items()}
    if isinstance(value, list):
        return [_zero_ids(v, redactor) for v in value]
    return value


def _freeze_counts(record: dict[str, Any], redactor: Redactor, count: Counter) -> None:
    """Write a request record's text- or id-derived counts into it, before redaction
    changes the text or drops the ids."""
    for phase in ("prompt", "completion"):
        key = f"{phase}_tokens"
        if record.get(key) is not None:
            continue
        ids = record.get(f"{phase}_token_ids")
        text = record.get(phase)
        if isinstance(ids, list):  # counted from its ids: frozen when they are dropped
            if not redactor.keep_routing:
                record[key] = len(ids)
        elif isinstance(text, str) and (redactor.drop_text or _changes(redactor, text)):
            record[key] = count(text)


def _changes(redactor: Redactor, text: str) -> bool:
    """Whether redaction would change ``text``, asked of a copy with counts of its own:
    the record is redacted (and its secrets counted) once, after."""
    return redactor.fresh().text(text) != text


def desequence(routing: list[Any], weights: Any) -> None:
    """Sort each layer's expert ids across the tokens, in place, keeping which slots hold
    one (``-1`` placeholders stay): the same per-layer counts, no token order."""
    layers = max((len(row) for row in routing if isinstance(row, list)), default=0)
    for j in range(layers):
        slots = [
            (t, k)
            for t, row in enumerate(routing)
            if isinstance(row, list) and j < len(row) and isinstance(row[j], list)
            for k, e in enumerate(row[j])
            if type(e) is int and e >= 0
        ]
        for column in (routing, weights):
            if not isinstance(column, list):
                continue
            try:
                values = sorted(column[t][j][k] for t, k in slots)
            except (IndexError, TypeError):
                continue  # weights not parallel to the routing: left to the redactor
            for (t, k), value in zip(slots, values):
                column[t][j][k] = value


class TokenRouting:
    """The experts (and weights) of a file's token lines, each request's layer sorted across
    its tokens: ``collect`` every token line (a first pass), then ``apply`` hands the sorted
    values out to the slots in the order they come (the second), as ``desequence`` does
    within one record."""

    def __init__(self) -> None:
        self._values: dict[tuple[Any, int, str], Any] = {}

    @staticmethod
    def _slots(document: dict[str, Any]) -> Iterator[tuple[tuple[Any, int, str], list[Any], int]]:
        experts, weights = document.get("experts"), document.get("weights")
        rid = document.get("request_id")
        if not isinstance(experts, list):
            return
        for j, chosen in enumerate(experts):
            if not isinstance(chosen, list):
                continue
            row = weights[j] if isinstance(weights, list) and j < len(weights) else None
            for k, e in enumerate(chosen):
                if type(e) is int and e >= 0:
                    yield (rid, j, "e"), chosen, k
                    if isinstance(row, list) and k < len(row):
                        yield (rid, j, "w"), row, k

    def collect(self, document: dict[str, Any]) -> None:
        for key, values, k in self._slots(document):
            self._values.setdefault(key, []).append(values[k])

    def finish(self) -> None:
        for key, values in self._values.items():
            self._values[key] = iter(sorted(values))

    def apply(self, document: dict[str, Any]) -> bool:
        """Put the next sorted values in ``document``'s slots; False when it has none."""
        found = False
        for key, values, k in list(self._slots(document)):
            values[k] = next(self._values[key])
            found = True
        return found


def json_line(
    document: dict[str, Any],
    redactor: Redactor,
    count: Counter,
    tokens: TokenRouting | None = None,
) -> str:
    kept: dict[str, Any] = {}
    if "request_id" in document and document.get("type") in (None, "request"):
        _freeze_counts(document, redactor, count)
        sparse = document.get("sparse")
        if not redactor.keep_routing and isinstance(sparse, dict):
            routing = sparse.get("routing")
            if isinstance(routing, list):
                desequence(routing, sparse.get("routing_weights"))
                redactor.counts["routing"] += 1
                kept = {k: sparse.pop(k) for k in ("routing", "routing_weights") if k in sparse}
    elif document.get("type") == "token" and not redactor.keep_routing:
        if tokens is None:  # no first pass: the experts go, and the figures with them
            if isinstance(document.get("experts"), list):
                redactor.counts[TOKEN_ROUTING] += 1
        elif tokens.apply(document):
            redactor.counts["routing"] += 1
            kept = {k: document.pop(k) for k in ("experts", "weights") if k in document}
    redacted = redactor.document(_zero_ids(document, redactor))
    if kept:  # numbers only, in no token's order: past the redactor's routing rule
        (redacted if document.get("type") == "token" else redacted["sparse"]).update(kept)
    return json_bytes(redacted).decode()


def redact_line(
    line: str, redactor: Redactor, count: Counter, tokens: TokenRouting | None = None
) -> str:
    """One line (without its ending) as the redacted copy holds it; ``tokens``: the file's
    token-line routing, collected in a first pass (None: token lines lose their experts)."""
    if line.lstrip().startswith("{"):
        try:
            document = orjson.loads(line)
        except orjson.JSONDecodeError:  # not JSON after all (or an integer beyond 64 bits)
            document = None
        if isinstance(document, dict):
            return json_line(document, redactor, count, tokens)
    return text_line(line, redactor)
