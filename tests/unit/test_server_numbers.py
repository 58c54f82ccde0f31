"""Numbers in server logs that nothing can store (issue #9, items 3 and 10): the field is
unknown, the line is still the request it says."""

from __future__ import annotations

from typing import Any

from sparseety_tui.formats import sglang


def request(line: bytes) -> tuple[dict[str, Any], dict[str, int]]:
    parser = sglang.FAMILY.new_parser()
    kind, event = parser.parse(line)
    parser.finish()
    assert kind == "sglang.request" and event is not None and event[0] == "request"
    return dict(event[1]), parser.ignored


def test_a_repr_integer_too_long_for_python_costs_its_field_only() -> None:
    # int() refuses more than 4,300 digits: the whole line was "parser error: ValueError".
    payload, _ = request(
        b"Finish: obj=GenerateReqInput(text='Hi', rid='r1'), out={'text': ' yo', 'meta_info': "
        b"{'id': 'r1', 'finish_reason': {'type': 'stop'}, 'prompt_tokens': 1"
        + b"0" * 5000
        + b", 'completion_tokens': 2, 'e2e_latency': 0.5}}"
    )
    assert payload["request_id"] == "r1" and payload["state"] == "finished"
    assert payload["completion_tokens"] == 2 and payload["latency_s"] == 0.5
    assert "prompt_tokens" not in payload


def test_json_request_log_timestamps_in_any_unit() -> None:
    line = (
        b'{"timestamp": %s, "event": "request.finished", "rid": "j1", "obj": {}, "out": '
        b'{"meta_info": {"id": "j1", "completion_tokens": 4}}}'
    )
    for stamp in (b"1700000001.5", b"1700000001500", b"1700000001500000"):
        payload, ignored = request(line % stamp)
        assert payload["finished_ts"] == 1700000001.5 and ignored == {}
    payload, ignored = request(line % b"-1700000001500")
    assert "ts" not in payload and "finished_ts" not in payload
    assert payload["completion_tokens"] == 4
    assert ignored == {"timestamp: timestamp out of range": 1}
