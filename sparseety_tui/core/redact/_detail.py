"""A request's detail (``core.detail.RequestDetail``) with what it reveals redacted: what
the TUI's detail screen and ``serve``'s ``/requests/ID`` show.

A secret spans tokens (``ann``, ``.lee``, ``@``, ``example``, ``.com``): redacting each
token's text alone would leave it readable. So each phase's token texts are joined, the
rules run on the whole, and each replacement goes to the token where its secret starts;
the other tokens it covered keep their positions (and skip kinds) with no text. Token ids
and per-token routing are dropped unless ``keep_routing``; the aggregates stay.
"""

from __future__ import annotations

import re
from dataclasses import replace

import orjson

from sparseety_tui.core.detail import RequestDetail, SourceText, TokenView
from sparseety_tui.core.redact._engine import Redactor
from sparseety_tui.core.text import json_bytes


def redact_tokens(texts: list[str], redactor: Redactor) -> list[str]:
    """Token texts with the secrets of their joined text replaced, token by token."""
    cleaned = texts
    joined = "".join(cleaned)
    spans = redactor.replacements(joined)
    if not spans:
        return list(cleaned)
    out: list[str] = []
    at = 0  # the token's first character in ``joined``
    s = 0  # the first span that may still touch this token
    for text in cleaned:
        end = at + len(text)
        pieces: list[str] = []
        pos = at
        while s < len(spans) and spans[s][0] < end:
            start, stop, replacement = spans[s]
            if start >= pos:
                pieces.append(joined[pos:start])
                if start >= at:
                    pieces.append(replacement)
            elif start >= at:
                pieces.append(replacement)
            pos = max(pos, min(stop, end))
            if stop > end:
                break  # the span goes on into the next token
            s += 1
        pieces.append(joined[pos:end] if pos < end else "")
        out.append("".join(pieces))
        at = end
    return out


#: Lists of token ids or routing in a text log line (``prompt_token_ids: [1, 2, ...]``,
#: ``routed_experts=[[...]]``): replaced by ``[dropped]`` unless ``keep_routing``.
_ID_LISTS = re.compile(
    r"(?P<k>\b(?:\w*(?:token_ids|input_ids|output_ids)|routed_experts|routing(?:_weights)?"
    r"|experts|weights)\b"
    r"[\"']?\s*[:=]\s*)\[[\d\s,.\[\]eE+-]*\]"
)


def raw_text(text: str, redactor: Redactor) -> str:
    """A raw log line as it may be shown: a JSON line as its redacted document (routing
    and ids dropped), any other line with its id lists dropped and the rules applied."""
    if text.lstrip().startswith("{"):
        try:
            document = orjson.loads(text)
        except orjson.JSONDecodeError:
            document = None
        if isinstance(document, dict):
            return json_bytes(redactor.document(document)).decode()
    if not redactor.keep_routing and "[" in text:
        text, n = _ID_LISTS.subn(r"\g<k>[dropped]", text)
        if n:
            redactor.counts["routing"] += n
    return redactor.text(text)


def _line(line: SourceText, redactor: Redactor) -> SourceText:
    """A whole line as ``raw_text``; an elided line's head and tail (not JSON on their
    own) with their id lists dropped and the rules applied."""
    path = redactor.text(line.path)
    if line.whole:
        return replace(line, path=path, head=raw_text(line.head, redactor))
    return replace(
        line, path=path, head=_piece(line.head, redactor), tail=_piece(line.tail, redactor)
    )


def _piece(text: str, redactor: Redactor) -> str:
    if not redactor.keep_routing:
        text = _ID_LISTS.sub(r"\g<k>[dropped]", text)
    return redactor.text(text)


def redact_detail(detail: RequestDetail, redactor: Redactor) -> RequestDetail:
    """A copy of ``detail`` as ``redactor`` allows it to be shown."""
    tokens: list[TokenView] = []
    for phase in ("prompt", "completion"):
        mine = [t for t in detail.tokens if t.phase == phase]
        if redactor.drop_text:
            texts = ["" for _ in mine]
        else:
            texts = redact_tokens([t.text for t in mine], redactor)
        for token, text in zip(mine, texts):
            kept = replace(token, text=text, skips=set(token.skips))
            if not redactor.keep_routing:
                kept.token_id = kept.experts = kept.weights = None
            tokens.append(kept)
    tokens.sort(key=lambda t: t.pos)
    raw = [] if redactor.drop_text else [_line(line, redactor) for line in detail.raw_lines]
    return replace(
        detail,
        request_id=redactor.text(detail.request_id),
        fields=redactor.document(detail.fields),
        tokens=tokens,
        raw_lines=raw,
        raw_omitted=detail.raw_omitted + (len(detail.raw_lines) if redactor.drop_text else 0),
        problems=[redactor.text(p) for p in detail.problems],
    )
