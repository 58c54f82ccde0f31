"""docs/trace-format.schema.json: valid for every sample line and doc example, strict on
bad lines, and naming exactly the fields the code knows (events.py), so the spec,
the schema and the code cannot drift apart.

jsonschema is a hard test dependency (the `test` extra), on purpose: a missing schema
check must fail, not skip.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from sparseety_tui.events import MetaPayload, RequestPayload, SparseInfo, TokenPayload

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_PATH = ROOT / "docs" / "trace-format.schema.json"
SPEC_PATH = ROOT / "docs" / "trace-format.md"
TRACE_PARSER = ROOT / "sparseety_tui" / "formats" / "_trace.py"
SAMPLE_JSONL = sorted((ROOT / "sample_logs").glob("*.jsonl"))

EXAMPLE_TEXT = (
    '{"request_id": "req-001", "prompt": "Hello, how are you today?", "completion": '
    '"I am fine, thank you!", "model": "fake-moe-model", "sparse": {"topk_experts": 2, '
    '"total_experts": 8, "skipped_attention_heads": 4}}'
)
EXAMPLE_COUNTS = (
    '{"request_id": "req-0007", "prompt_tokens": 131, "completion_tokens": 42, "sparse": '
    '{"topk_experts": 4, "total_experts": 8, "skipped_attention_heads": 2}}'
)

#: Request-record names the parser maps onto canonical ones (docs/trace-format.md §9),
#: plus the record-type discriminator. Everything else must be a RequestPayload field.
PARSER_NAMES = {"type", "id", "token_ids", "experts", "expert_layers"}


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return loaded


@pytest.fixture(scope="module")
def validator(schema: dict[str, Any]) -> jsonschema.Draft202012Validator:
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _errors(validator: jsonschema.Draft202012Validator, obj: Any) -> list[str]:
    return [error.message for error in validator.iter_errors(obj)]


def doc_example_lines() -> list[str]:
    text = SPEC_PATH.read_text(encoding="utf-8")
    blocks = re.findall(r"```jsonl\n(.*?)```", text, flags=re.S)
    return [line for block in blocks for line in block.splitlines() if line.strip()]


# -- valid lines -----------------------------------------------------------------------


def test_schema_is_draft_2020_12(schema: dict[str, Any]) -> None:
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert [alt["$ref"] for alt in schema["oneOf"]] == [
        "#/$defs/request",
        "#/$defs/token",
        "#/$defs/meta",
    ]


@pytest.mark.parametrize("line", [EXAMPLE_TEXT, EXAMPLE_COUNTS], ids=["text", "counts"])
def test_the_two_user_records_are_valid_unchanged(
    validator: jsonschema.Draft202012Validator, line: str
) -> None:
    assert _errors(validator, json.loads(line)) == []


def test_sample_logs_exist() -> None:
    names = {path.name for path in SAMPLE_JSONL}
    assert {
        "two_records.jsonl",
        "count_only_500.jsonl",
        "moe_trace.jsonl",
        "token_stream.jsonl",
    } <= names


@pytest.mark.parametrize("path", SAMPLE_JSONL, ids=lambda p: p.name)
def test_every_sample_line_is_valid(validator: jsonschema.Draft202012Validator, path: Path) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines
    for number, line in enumerate(lines, 1):
        errors = _errors(validator, json.loads(line))
        assert errors == [], f"{path.name}:{number}: {errors[:3]}"


def test_every_doc_example_is_valid(validator: jsonschema.Draft202012Validator) -> None:
    lines = doc_example_lines()
    assert len(lines) >= 25  # one worked example per feature
    assert EXAMPLE_TEXT in lines and EXAMPLE_COUNTS in lines
    for line in lines:
        assert _errors(validator, json.loads(line)) == [], line[:120]


def test_the_one_alternative_a_line_matches(validator: jsonschema.Draft202012Validator) -> None:
    """oneOf: a line is exactly one of request, token, meta."""
    cases = {
        '{"type": "token", "request_id": "r", "pos": 3}': "token",
        '{"type": "meta", "moe_layers": [1, 2]}': "meta",
        '{"type": "request", "request_id": "r"}': "request",
        '{"request_id": "r", "x_note": "own field"}': "request",
    }
    for line in cases:
        assert _errors(validator, json.loads(line)) == [], line


# -- invalid lines ---------------------------------------------------------------------

INVALID = {
    "no request id": '{"prompt_tokens": 3}',
    "empty request id": '{"request_id": ""}',
    "boolean request id": '{"request_id": true}',
    "misspelt field": '{"request_id": "r", "promt_tokens": 3}',
    "negative count": '{"request_id": "r", "prompt_tokens": -1}',
    "count as a string": '{"request_id": "r", "completion_tokens": "42"}',
    "float count": '{"request_id": "r", "cached_tokens": 1.5}',
    "unknown state": '{"request_id": "r", "state": "done"}',
    "not a timestamp": '{"request_id": "r", "ts": "yesterday"}',
    "timestamp before 1970": '{"request_id": "r", "ts": -1}',
    "timestamp in the year 10000": '{"request_id": "r", "ts": 253402300800000000000}',
    "duration beyond float32": '{"request_id": "r", "latency_s": 1e39}',
    "unknown kv skip": '{"request_id": "r", "sparse": {"kv_skip": "dropped"}}',
    "unknown sparse field": '{"request_id": "r", "sparse": {"top_k": 2}}',
    "routing not 3-d": '{"request_id": "r", "sparse": {"routing": [[1, 2]]}}',
    "expert id below -1": '{"request_id": "r", "sparse": {"routing": [[[-2, 1]]]}}',
    "dropped as a pair": '{"request_id": "r", "sparse": {"dropped": [[3, 1]]}}',
    "range of three": '{"request_id": "r", "sparse": {"evicted_ranges": [[4, 8, 9]]}}',
    "kv summary without kept": '{"request_id": "r", "sparse": {"kv": [{"visible": 9}]}}',
    "head mask without num_heads": '{"request_id": "r", "sparse": {"head_masks": '
    '{"skipped": [[1]]}}}',
    "token without request id": '{"type": "token", "pos": 1}',
    "token with a request field": '{"type": "token", "request_id": "r", "prompt_tokens": 3}',
    "token dropped as a triple": '{"type": "token", "request_id": "r", "dropped": [[0, 1, 2]]}',
    "heads_skipped key not a layer": '{"type": "token", "request_id": "r", '
    '"heads_skipped": {"L0": [1]}}',
    "unknown phase": '{"type": "token", "request_id": "r", "phase": "decode"}',
    "meta with a request field": '{"type": "meta", "prompt": "hi"}',
    "unknown record type": '{"type": "stats", "request_id": "r"}',
    "not an object": '["request_id", "r"]',
}


@pytest.mark.parametrize("line", INVALID.values(), ids=INVALID.keys())
def test_invalid_lines_are_rejected(validator: jsonschema.Draft202012Validator, line: str) -> None:
    assert _errors(validator, json.loads(line)) != []


# -- spec, schema and code name the same fields -----------------------------------------


def _props(schema: dict[str, Any], name: str) -> set[str]:
    return set(schema["$defs"][name]["properties"])


def test_request_fields_are_the_codes(schema: dict[str, Any]) -> None:
    code = set(RequestPayload.__annotations__)
    defined = _props(schema, "request")
    assert defined - PARSER_NAMES == code, (
        f"in schema only: {sorted(defined - PARSER_NAMES - code)}; "
        f"in code only: {sorted(code - defined)}"
    )


def test_parser_aliases_are_in_the_parser() -> None:
    source = TRACE_PARSER.read_text(encoding="utf-8")
    for name in PARSER_NAMES:
        assert f'"{name}"' in source, f"{name} is in the schema but _trace.py never reads it"


def test_sparse_fields_are_the_codes(schema: dict[str, Any]) -> None:
    assert _props(schema, "sparse") == set(SparseInfo.__annotations__)


def test_token_fields_are_the_codes(schema: dict[str, Any]) -> None:
    assert _props(schema, "token") - {"type"} == set(TokenPayload.__annotations__)


def test_meta_fields_are_the_codes(schema: dict[str, Any]) -> None:
    assert _props(schema, "meta") - {"type"} == set(MetaPayload.__annotations__)


def test_kv_skip_values_are_the_codes(schema: dict[str, Any]) -> None:
    from sparseety_tui.core.store import KV_SKIP_NAMES
    from sparseety_tui.events import SkipKind

    allowed = set(schema["$defs"]["kvSkip"]["enum"])
    assert allowed == set(KV_SKIP_NAMES)
    assert allowed <= {kind.value for kind in SkipKind}


def test_states_are_the_codes(schema: dict[str, Any]) -> None:
    from sparseety_tui.events import RequestState

    states = set(schema["$defs"]["request"]["properties"]["state"]["enum"])
    assert states == {state.value for state in RequestState}


def test_spec_documents_every_field(schema: dict[str, Any]) -> None:
    """Every name the schema defines appears as `name` in docs/trace-format.md."""
    text = SPEC_PATH.read_text(encoding="utf-8")
    names: set[str] = set()
    for definition in ("request", "sparse", "token", "meta", "kvSummary", "headMasks"):
        names |= _props(schema, definition)
    missing = sorted(name for name in names if f"`{name}`" not in text)
    assert missing == []


def test_spec_names_every_line_kind_of_the_trace_family() -> None:
    from sparseety_tui.events import LineKind

    text = SPEC_PATH.read_text(encoding="utf-8")
    for kind in (
        LineKind.TRACE_REQUEST,
        LineKind.TRACE_TOKEN,
        LineKind.TRACE_META,
        LineKind.BLANK,
        LineKind.UNPARSED,
    ):
        assert f"`{kind}`" in text


def test_timing_sources_are_the_codes(schema: dict[str, Any]) -> None:
    from sparseety_tui.core.store import TIMING_SOURCES
    from sparseety_tui.events import TimingSource

    allowed = schema["$defs"]["request"]["properties"]["timing_from"]["enum"]
    assert set(allowed) == {source.value for source in TimingSource} == set(TIMING_SOURCES[1:])
