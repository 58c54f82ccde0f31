"""A request's detail (``core.detail.RequestDetail``) with what it reveals redacted: what
the TUI's detail screen and ``serve``'s ``/requests/ID`` show.

A secret spans tokens (``ann``, ``.lee``, ``@``, ``example``, ``.com``): redacting each
token's text alone would leave it readable. So each phase's token texts are joined, the
rules run on the whole, and each replacement goes to the token where its secret starts;
the other tokens it covered keep their positions (and skip kinds) with no text. Token ids
and per-token routing are dropped unless ``keep_routing``; the aggregates stay.
"""

from __future__ import annotations

from dataclasses import replace

from sparseety_tui.core.detail import RequestDetail, SourceText, TokenView
from sparseety_tui.core.redact.engine import Redactor


def redact_tokens(texts: list[str], redactor: Redactor) -> list[str]:
    """Token texts with the secrets of their joined text replaced, token by token."""
    cleaned = [redactor.visible(t) for t in texts]
    joined = "".join(cleaned)
    spans = redactor.spans(joined)
    if not spans:
        return cleaned
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


def _line(line: SourceText, redactor: Redactor) -> SourceText:
    return replace(
        line,
        path=redactor.text(line.path),
        head=redactor.text(line.head),
        tail=redactor.text(line.tail),
    )


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
                kept.token_id = kept.experts = kept.weights = kept.heads_skipped = None
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
