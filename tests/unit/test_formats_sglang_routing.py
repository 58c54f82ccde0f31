"""SGLang ``routed_experts``: base64 of raw little-endian int32, shape [tokens, layers, top_k]
without a header; the shape needs the model (parser options) or clean inference."""

from __future__ import annotations

import base64
import struct

import pytest

from sparseety_tui.formats import sglang
from sparseety_tui.formats._responses import RoutingDecodeError, decode_routed_experts
from sparseety_tui.formats._routing import decode_sglang_routed_experts


def raw_blob(values: list[int], fmt: str = "<i") -> str:
    return base64.b64encode(b"".join(struct.pack(fmt, v) for v in values)).decode()


def grid(tokens: int, layers: int, top_k: int) -> list[list[list[int]]]:
    return [
        [[(t + 5 * li + 11 * k) % 60 for k in range(top_k)] for li in range(layers)]
        for t in range(tokens)
    ]


def flat(g: list[list[list[int]]]) -> list[int]:
    return [v for tok in g for layer in tok for v in layer]


def test_round_trip_with_model_shape() -> None:
    g = grid(6, 4, 2)
    result = decode_sglang_routed_experts(raw_blob(flat(g)), num_layers=4, top_k=2)
    assert result.routing == g
    assert result.num_tokens == 6 and result.moe_layers == [0, 1, 2, 3]


def test_top_k_inferred_from_layers_and_token_count() -> None:
    g = grid(5, 3, 4)
    result = decode_sglang_routed_experts(raw_blob(flat(g)), num_layers=3, num_tokens=5)
    assert result.top_k == 4 and result.routing == g


def test_layers_inferred_from_top_k_and_token_count() -> None:
    g = grid(5, 3, 4)
    result = decode_sglang_routed_experts(raw_blob(flat(g)), top_k=4, num_tokens=5)
    assert result.num_layers == 3 and result.routing == g


def test_without_shape_keeps_raw_count_and_says_so() -> None:
    result = decode_sglang_routed_experts(raw_blob(list(range(24))))
    assert result.routing is None and result.raw_count == 24
    assert "num_layers and top_k" in result.note


def test_non_dividing_length_keeps_raw_count() -> None:
    result = decode_sglang_routed_experts(raw_blob(list(range(25))), num_layers=4, top_k=2)
    assert result.routing is None and result.raw_count == 25
    assert "do not divide" in result.note


def test_minus_one_layers_excluded() -> None:
    g = grid(3, 3, 2)
    for tok in g:
        tok[1] = [-1, -1]  # sglang-jax fills non-MoE layers with -1
    result = decode_sglang_routed_experts(raw_blob(flat(g)), num_layers=3, top_k=2)
    assert result.moe_layers == [0, 2]
    assert result.routing == [[tok[0], tok[2]] for tok in g]
    assert "[1] excluded" in result.note


def test_uint16_dtype_option() -> None:
    g = grid(2, 2, 2)
    blob = raw_blob(flat(g), "<H")
    result = decode_routed_experts(blob, num_layers=2, top_k=2, dtype="uint16")
    assert result.routing == g


def test_bad_base64_or_size() -> None:
    with pytest.raises(RoutingDecodeError):
        decode_sglang_routed_experts(base64.b64encode(b"abc").decode(), num_layers=1, top_k=1)


def test_finish_line_meta_info_routing_uses_parser_options() -> None:
    g = grid(7, 2, 2)  # prompt 5 + completion 3 - 1
    blob = raw_blob(flat(g))
    line = (
        "[2025-12-01 10:00:00] Finish: obj=GenerateReqInput(rid='r9'), out={'text': 'abc', "
        "'meta_info': {'id': 'r9', 'finish_reason': {'type': 'length', 'length': 3}, "
        "'prompt_tokens': 5, 'completion_tokens': 3, 'cached_tokens': 0, "
        f"'routed_experts': '{blob}'}}}}"
    ).encode()
    parser = sglang.FAMILY.new_parser(num_layers=2, top_k=2)
    kind, event = parser.parse(line)
    assert kind == "sglang.request" and event is not None
    payload = event[1]
    assert payload["sparse"]["routing"] == g  # type: ignore[typeddict-item]
    # Without options the token count still lets L*K be known but not split: raw kept.
    parser2 = sglang.FAMILY.new_parser()
    _, event2 = parser2.parse(line)
    assert event2 is not None and "sparse" not in event2[1]
    assert any("kept raw" in n for n in parser2.routing.notes)


def test_openai_sgl_ext_routed_experts() -> None:
    g = grid(3, 2, 1)
    body = (
        '{"id": "chatcmpl-9", "choices": [{"index": 0, "finish_reason": "stop", '
        '"message": {"role": "assistant", "content": "hi"}, '
        f'"sgl_ext": {{"routed_experts": "{raw_blob(flat(g))}"}}}}], '
        '"usage": {"prompt_tokens": 2, "completion_tokens": 2, "total_tokens": 4}}'
    )
    parser = sglang.FAMILY.new_parser(num_layers=2, top_k=1)
    kind, event = parser.parse(body.encode())
    assert kind == "api.response" and event is not None
    assert event[1]["sparse"]["routing"] == g  # type: ignore[typeddict-item]
    assert event[1]["completion"] == "hi"
