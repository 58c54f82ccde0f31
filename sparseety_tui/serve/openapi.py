"""The OpenAPI 3.1 description of ``serve``'s routes (``GET /openapi.json``), and the
example ``curl`` of each route that ``serve --help`` prints.

Written out by hand rather than generated from the handlers: the API is small, and a test
holds this description and the application's routes to the same list.
"""

from __future__ import annotations

from typing import Any

from sparseety_tui import __version__

_ERROR = {
    "description": "one-line JSON error",
    "content": {
        "application/json": {
            "schema": {
                "type": "object",
                "properties": {"error": {"type": "string"}},
                "required": ["error"],
            }
        }
    },
}
_NDJSON = {"application/x-ndjson": {"schema": {"type": "string"}}}


def _query(name: str, description: str, kind: str = "string") -> dict[str, Any]:
    return {
        "name": name,
        "in": "query",
        "required": False,
        "description": description,
        "schema": {"type": kind},
    }


_WINDOW = [
    _query("since", "only requests from this time on: 10m, 2h, 2026-11-30T10:00 (as --since)"),
    _query("until", "only requests before this time (as --until)"),
]
_FILTER = _query("filter", "the TUI's filter language, e.g. 'skip>0.5 latency>2 state=finished'")

#: (method, path, example curl) of every route; the OpenAPI paths are built on the same list.
EXAMPLES: tuple[tuple[str, str, str], ...] = (
    ("GET", "/health", "curl -s http://127.0.0.1:8765/health"),
    (
        "POST",
        "/extract",
        "curl -s -X POST http://127.0.0.1:8765/extract -H 'Content-Type: application/json' "
        '-d \'{"request_id": "req-001", "prompt_tokens": 100, "completion_tokens": 50, '
        '"model": "fake-moe-model", "sparse": {"topk_experts": 2, "total_experts": 8, '
        '"skipped_attention_heads": 4}}\'',
    ),
    ("GET", "/summary", "curl -s 'http://127.0.0.1:8765/summary?since=10m'"),
    ("GET", "/requests", "curl -s 'http://127.0.0.1:8765/requests?filter=skip>0.5&limit=10'"),
    ("GET", "/requests/{request_id}", "curl -s http://127.0.0.1:8765/requests/req-001"),
    ("GET", "/metrics", "curl -s http://127.0.0.1:8765/metrics"),
    ("GET", "/openapi.json", "curl -s http://127.0.0.1:8765/openapi.json"),
)


def curl_examples(with_token: bool = True) -> str:
    """One example per route, for ``serve --help``."""
    lines = [f"  {method} {path}\n    {curl}" for method, path, curl in EXAMPLES]
    if with_token:
        lines.append(
            '  with --token-file, add to each: -H "Authorization: Bearer $(cat TOKEN_FILE)"'
        )
    return "\n".join(lines)


def description(with_token: bool) -> dict[str, Any]:
    errors = {"400": _ERROR, "404": _ERROR, "413": _ERROR, "422": _ERROR}
    if with_token:
        errors["401"] = _ERROR
    paths: dict[str, Any] = {
        "/health": {
            "get": {
                "summary": "liveness and the package version; with --otlp or --otlp-grpc, "
                "the receivers' counters",
                "responses": {
                    "200": {
                        "description": '{"status": "ok", "version": "...", "otlp": {"requests", '
                        '"accepted_spans", "rejected_spans", "body_bytes", "refused": {reason: '
                        'count}, "lost_spans", "spool", "listening"}} (otlp only with a receiver)'
                    }
                },
            }
        },
        "/extract": {
            "post": {
                "summary": "what `extract --format trace` writes for the request records sent",
                "description": "Body: one trace-format request record, a JSON list of them, "
                "or (Content-Type: application/x-ndjson) one per line. Answer: one JSON line "
                "per request, byte for byte `extract`'s, source.file being 'request body'. "
                "Prompts and completions only when serve runs with --text.",
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {"schema": {"type": ["object", "array"]}},
                        **_NDJSON,
                    },
                },
                "responses": {"200": {"description": "JSON lines", "content": _NDJSON}, **errors},
            }
        },
        "/summary": {
            "get": {
                "summary": "`summary --json` over the followed logs",
                "parameters": [_FILTER, *_WINDOW],
                "responses": {"200": {"description": "the summary document"}, **errors},
            }
        },
        "/requests": {
            "get": {
                "summary": "`extract --filter F --limit N` over the followed logs",
                "parameters": [
                    _FILTER,
                    _query("limit", "at most this many records (default 1000)", "integer"),
                    *_WINDOW,
                ],
                "responses": {"200": {"description": "JSON lines", "content": _NDJSON}, **errors},
            }
        },
        "/requests/{request_id}": {
            "get": {
                "summary": "one request's detail: its record, token trace, routing, lines",
                "description": "Token text and ids only with --text; per-token routing only "
                "with --keep-routing; the raw log lines (which hold both) only with both.",
                "parameters": [
                    {
                        "name": "request_id",
                        "in": "path",
                        "required": True,
                        "schema": {"type": "string"},
                    },
                ],
                "responses": {"200": {"description": "the detail"}, **errors},
            }
        },
        "/metrics": {
            "get": {
                "summary": "Prometheus exposition (text or OpenMetrics, by the Accept header)",
                "responses": {"200": {"description": "metrics"}},
            }
        },
        "/openapi.json": {
            "get": {
                "summary": "this description",
                "responses": {"200": {"description": "OpenAPI 3.1"}},
            }
        },
    }
    doc: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {"title": "sparseety-tui serve", "version": __version__},
        "paths": paths,
    }
    if with_token:
        doc["components"] = {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}}
        doc["security"] = [{"bearer": []}]
    return doc
