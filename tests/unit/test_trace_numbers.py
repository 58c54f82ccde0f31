"""Numbers a trace line can hold that nothing can store (issue #9, item 10).

The spec (docs/trace-format.md §1): a field out of range is not said, "the line is still a
request record; only the bad field is ignored". A number no double holds (``1e400``, an
integer of thousands of digits, ``NaN`` as Python's ``json.dumps`` writes it) made orjson
refuse the whole line; a number a double holds but the store's column does not (a latency
beyond float32) was stored as infinity.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from totals_helpers import totals_and_peak

from sparseety_tui.core.extraction._extractor import Extractor
from sparseety_tui.formats._trace import TraceParser
from sparseety_tui.ingest.batch import ingest_file

BASE = b'"request_id": "r", "prompt_tokens": 5, "completion_tokens": 3'


def parse(line: bytes) -> tuple[str, Any, TraceParser]:
    parser = TraceParser()
    kind, event = parser.parse(line)
    return kind, event, parser


@pytest.mark.parametrize(
    ("field", "value"),
    [
        (b"latency_s", b"1e400"),
        (b"latency_s", b"-1e400"),
        (b"ttft_s", b"NaN"),
        (b"ttft_s", b"Infinity"),
        (b"ts", b"-Infinity"),
        (b"cached_tokens", b"1" + b"0" * 5000),
        (b"cached_tokens", b"-" + b"9" * 400),
        (b"model", b"[1, 2, 1e999]"),
    ],
)
def test_a_number_no_float_holds_costs_its_field_not_the_line(field: bytes, value: bytes) -> None:
    kind, event, parser = parse(b'{%s, "%s": %s}' % (BASE, field, value))
    assert kind == "trace.request" and event is not None
    payload = event[1]
    assert payload["request_id"] == "r"
    assert (payload["prompt_tokens"], payload["completion_tokens"]) == (5, 3)
    assert payload.get(field.decode()) is None  # read as null: not said
    assert parser.ignored == {f"{field.decode()}: number not representable": 1}


def test_inside_sparse_only_that_sparse_field_is_ignored() -> None:
    kind, event, parser = parse(
        b'{"request_id": "r", "sparse": {"topk_experts": 2, "total_experts": 1e400,'
        b' "routing": [[[1, 2e308]]]}}'
    )
    assert kind == "trace.request" and event is not None
    assert event[1]["sparse"] == {"topk_experts": 2, "total_experts": None, "routing": None}
    assert parser.ignored == {
        "sparse.total_experts: number not representable": 1,
        "sparse.routing: number not representable": 1,
    }


def test_token_and_meta_records_keep_their_other_fields() -> None:
    parser = TraceParser()
    kind, event = parser.parse(b'{"type": "token", "request_id": "r", "pos": 1e400, "token_id": 7}')
    assert kind == "trace.token" and event is not None
    assert event[1]["token_id"] == 7 and event[1]["pos"] is None
    kind, event = parser.parse(b'{"type": "meta", "model": "m", "total_experts": -1e400}')
    assert kind == "trace.meta" and event is not None and event[1]["model"] == "m"
    assert parser.ignored == {
        "pos: number not representable": 1,
        "total_experts: number not representable": 1,
    }


def test_fields_the_format_does_not_know_are_not_named_in_the_counts() -> None:
    # Their names come from the log: counting each would grow without bound.
    kind, event, parser = parse(b'{"request_id": "r", "x_%d": 1e400}' % 7)
    assert kind == "trace.request" and event is not None
    assert parser.ignored == {}


def test_a_line_the_tolerant_read_cannot_make_a_record_of_stays_unparsed() -> None:
    cases = [
        # what identifies the record is the unrepresentable number
        (b'{"request_id": 1e400}', "JSON object without a string request_id"),
        (b'{"request_id": "r", "type": NaN}', "unknown record type"),
        # not JSON for another reason as well: orjson's error stands
        (b'{"request_id": "r", "latency_s": 1e400', "invalid JSON"),
        (b'{"request_id": "r", "latency_s": 1e400, "id": "\\ud800"}', "invalid JSON"),
        (b'{"request_id": "r", "latency_s": nan}', "invalid JSON"),
        (b'{"request_id": "r", "latency_s": 1e400}\xff', "invalid JSON"),
        (b"[" * 100_000 + b"1e400" + b"]" * 100_000, "invalid JSON"),
    ]
    for line, reason in cases:
        kind, event, parser = parse(line)
        assert (kind, event) == ("unparsed", None), line[:60]
        assert parser.last_reason.startswith(reason), (line[:60], parser.last_reason)


def test_values_beyond_their_column_are_unknown_on_every_path(tmp_path: Path) -> None:
    # Enough lines for the block paths (native scanner, Python blocks); each odd value
    # takes the per-line path or is masked there: never wrapped, infinite or raising.
    lines = [b'{"request_id": "r%d", "prompt_tokens": 5, "latency_s": 0.5}' % i for i in range(80)]
    lines[10] = b'{"request_id": "big-latency", "prompt_tokens": 5, "latency_s": 1e39}'
    lines[11] = b'{"request_id": "big-ttft", "prompt_tokens": 5, "ttft_s": 1e300}'
    lines[12] = b'{"request_id": "big-count", "prompt_tokens": 2147483648}'
    lines[13] = b'{"request_id": "huge", "prompt_tokens": 5, "latency_s": 1e400}'
    lines[14] = b'{"request_id": "nan", "prompt_tokens": 5, "latency_s": NaN}'
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    extractor = Extractor()
    ingest_file(extractor, str(path))
    store = extractor.store
    assert len(store) == 80 and extractor.files[0].by_kind == {"trace.request": 80}
    latency, ttft = store.columns["latency_s"], store.columns["ttft_s"]
    for row in (10, 13, 14):
        assert math.isnan(latency[row]), store.ids[row]
    assert math.isnan(ttft[11])
    assert store.columns["prompt_tokens"][12] == -1
    assert latency[0] == 0.5 and store.columns["prompt_tokens"][13] == 5
    assert extractor.files[0].ignored == {"latency_s: number not representable": 2}
    assert not any(math.isinf(v) for v in (*latency, *ttft))


def test_ids_beyond_any_model_stay_out_of_the_heat_maps(tmp_path: Path) -> None:
    # Heat maps are dense (layer x index): expert 10**8 took 52 s and 3 GB in `summary`,
    # a list as a layer id or a mix of str and int layer ids raised TypeError.
    lines = [
        b'{"request_id": "a", "prompt_tokens": 2, "completion_tokens": 1, "sparse": {'
        b'"moe_layers": [1, 2], "routing": [[[3, 1000000], [4, 5]]], "dropped": [[0, 1, 1e300]]}}',
        b'{"request_id": "b", "prompt_tokens": 2, "completion_tokens": 1, "sparse": {'
        b'"moe_layers": [[1], "a"], "routing": [[[3], [4]]]}}',
        b'{"request_id": "c", "prompt_tokens": 2, "completion_tokens": 1, "sparse": {'
        b'"moe_layers": ["7", 99999], "routing": [[[6], [6]]], "dropped": [[0, 7, 6]]}}',
        b'{"type": "token", "request_id": "c", "pos": 0, "num_heads": 4,'
        b' "heads_skipped": {"0": [1, 123456789], "x": [2]}, "dropped": [[-1, 2]]}',
    ]
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    totals, peak, extractor = totals_and_peak(path)
    assert totals["experts"]["layers"] == [1, 2, 7]
    assert totals["experts"]["width"] == 7
    assert totals["experts"]["total"] == 4  # 3 and 4, 5 of "a"; 6 of "c" in layer "7"
    assert totals["dropped_experts"]["layers"] == [7] and totals["dropped_experts"]["total"] == 1
    assert totals["head_skips"] == {
        "layers": [0],
        "width": 2,
        "counts": [[0, 1]],
        "total": 1,
        "imbalance_max_over_mean": [2.0],
        "out_of_range": 2,  # head 123456789, and layer "x"
    }
    assert totals["experts"]["out_of_range"] == 4  # 1000000; layers [1] and 99999 (x2)
    # every routed slot still counts, whatever its id
    assert [extractor.store.extras[row].routed_slots for row in range(3)] == [4, 2, 2]
    assert peak < 1 << 20  # a table 10**6 experts wide took 8 MB per layer


# -- the per-field rule, for any number ----------------------------------------------------

_NUMBER_TEXT = st.one_of(
    st.integers().map(str),
    st.integers(-(2**70), 2**70).map(str),
    # the edges of orjson's integers (int64 and uint64; beyond them it gives a float)
    st.sampled_from([-(2**63), 2**63, 2**64]).flatmap(lambda e: st.integers(e - 2, e + 1)).map(str),
    st.integers(10**19, 10**20 + 1).map(str),
    st.integers(15, 420).map(lambda n: "9" * n),  # around where a double overflows
    st.integers(4290, 4310).map(lambda n: "1" * n),  # around int()'s digit limit
    st.builds(lambda m, e: f"{m}e{e}", st.integers(-99, 99), st.integers(-999, 999)),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(["NaN", "Infinity", "-Infinity", "-0", "0.0", "1E400", "-1e400"]),
)
#: (where the field goes, its name in ``ignored``) for fields of every kind, and one of
#: the log's own (never named in ``ignored``).
_FIELDS = [
    ("prompt_tokens", "prompt_tokens"),
    ("latency_s", "latency_s"),
    ("model", "model"),
    ("sparse.total_experts", "sparse.total_experts"),
    ("x_custom", None),
]


#: What orjson makes of a number it refuses.
_REFUSED = object()


def _orjson_number(text: str) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return _REFUSED


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_FIELDS), _NUMBER_TEXT), min_size=1, max_size=5))
def test_every_number_is_kept_as_orjson_reads_it_or_its_field_alone_is_null(
    fields: list[tuple[tuple[str, str | None], str]],
) -> None:
    chosen = dict(fields)  # the last number of a repeated field wins, as in JSON
    top = [f'"{key}": {text}' for (key, _), text in chosen.items() if "." not in key]
    inner = [f'"{key[7:]}": {text}' for (key, _), text in chosen.items() if "." in key]
    if inner:
        top.append('"sparse": {' + ", ".join(inner) + "}")
    # One number orjson refuses in a field of the log's own: every line takes the
    # tolerant read, whose every other number must be what orjson gives.
    line = ('{"request_id": "r", "x_refused": 1e400, ' + ", ".join(top) + "}").encode()
    kind, event, parser = parse(line)
    assert kind == "trace.request" and event is not None
    payload: dict[str, Any] = dict(event[1])
    assert payload["request_id"] == "r"
    expected_ignored: dict[str, int] = {}
    for (key, name), text in chosen.items():
        value = payload["sparse"][key[7:]] if "." in key else payload[key]
        wanted = _orjson_number(text)
        if wanted is _REFUSED:
            assert value is None, (key, text)
            if name is not None:
                expected_ignored[f"{name}: number not representable"] = 1
        else:
            assert value == wanted and type(value) is type(wanted), (key, text)
    assert parser.ignored == expected_ignored
