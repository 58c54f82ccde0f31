"""``GET /requests/{id}``: a request's detail (``core.detail.build_detail``, what the TUI's
detail screen shows) as JSON, with what may reveal the text left out unless asked for.

- Token text and token ids (the text, as ids) only with ``--text``, as ``extract``.
- Per-token routing (experts, weights, skipped heads of each token) only with
  ``--keep-routing``: routing, token by token, reveals the text as much as the text does.
- The raw log lines only with both: a line holds the text and the routing as logged.
- With ``--redact``, the answer is redacted (``core.redact``), each part once: the
  request record, token texts as one text per phase (a secret spans tokens), raw lines and
  problems; ``--redact text`` leaves no text at all.

Per-request aggregates (tokens per expert, skips per head, per layer) and each token's
position, phase and skip kinds are always there: they are the figures, not the text.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from sparseety_tui.core.detail import RequestDetail, request_text
from sparseety_tui.core.redact import Redactor, redact_detail
from sparseety_tui.core.store import ExtractorView
from sparseety_tui.core.text import json_text


def _by_layer(counts: Mapping[int, Mapping[int, int]]) -> dict[str, dict[str, int]]:
    return {
        str(layer): {str(i): n for i, n in sorted(row.items())}
        for layer, row in sorted(counts.items())
    }


def detail_document(
    state: ExtractorView,
    row: int,
    record: dict[str, Any],
    detail: RequestDetail,
    with_text: bool,
    keep_routing: bool,
    redactor: Redactor | None = None,
) -> dict[str, Any]:
    if with_text:
        record = {**record, **request_text(state, row)}
    if redactor is not None:
        # Each part once: the record here, the detail (tokens over their joined text, raw
        # lines, problems) by redact_detail; the rest of the answer is numbers and names.
        # A second pass over the whole answer counted every token's text again.
        record = redactor.document(record)
        # (the detail's own copy of the record's fields is not in the answer: not redacted,
        # so not counted a second time)
        detail = redact_detail(replace(detail, fields={}), redactor)
    tokens = []
    for token in detail.tokens:
        item: dict[str, Any] = {
            "pos": token.pos,
            "phase": token.phase,
            "skips": sorted(token.skips),
        }
        if with_text:
            item["text"] = token.text
            item["token_id"] = token.token_id
        if keep_routing:
            item["experts"] = token.experts
            item["weights"] = token.weights
            item["heads_skipped"] = (
                {str(k): v for k, v in token.heads_skipped.items()}
                if token.heads_skipped is not None
                else None
            )
        if token.kv is not None:
            item["kv"] = token.kv
        tokens.append(item)
    document: dict[str, Any] = {
        "request": record,
        "token_source": detail.token_source if with_text else None,
        "tokens": tokens,
        "tokens_omitted": detail.tokens_omitted,
        "cut": list(detail.cut),
        "moe_layers": detail.moe_layers,
        "expert_counts": _by_layer(detail.expert_counts),
        "head_skips": _by_layer(detail.head_skips),
        "kv_points": detail.kv_points,
        "problems": [json_text(p) for p in detail.problems],
        "lines": len(state.store.lines_of(row)),
        "left_out": [
            name
            for name, kept in (
                ("text", with_text),
                ("routing", keep_routing),
                ("raw_lines", with_text and keep_routing),
            )
            if not kept
        ],
    }
    if with_text and keep_routing:
        document["raw_lines"] = [
            {
                "path": json_text(line.path),
                "offset": line.offset,
                "head": line.head,
                "tail": line.tail,
                "elided": line.elided,
            }
            for line in detail.raw_lines
        ]
        document["raw_omitted"] = detail.raw_omitted
    if redactor is not None:
        document["redaction"] = redactor.summary()
    return document
