"""vLLM ``routed_experts``: base64 of a ``.npy`` file; dtype and shape come from its header.

Blobs are built by hand here (the .npy v1 layout: magic, version, header length, a Python
dict literal padded to 64 bytes, raw data), so the decoder is checked without numpy.
"""

from __future__ import annotations

import base64
import json
import struct

import pytest

from sparseety_tui.formats import vllm
from sparseety_tui.formats._responses import RoutingDecodeError, decode_routed_experts
from sparseety_tui.formats._routing import decode_npy_routed_experts, parse_npy_header


def npy_bytes(
    values: list[int], shape: tuple[int, ...], descr: str, fortran: bool = False
) -> bytes:
    header = f"{{'descr': '{descr}', 'fortran_order': {fortran}, 'shape': {shape}, }}"
    pad = 64 - (10 + len(header) + 1) % 64
    header_b = (header + " " * pad + "\n").encode("latin-1")
    fmt = {"<i2": "<h", "<i4": "<i", ">i4": ">i", "|u1": "B", "<u2": "<H", "<i8": "<q"}[descr]
    body = b"".join(struct.pack(fmt, v) for v in values)
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header_b)) + header_b + body


def grid(tokens: int, layers: int, top_k: int) -> list[list[list[int]]]:
    return [
        [[(t * 7 + li * 3 + k) % 64 for k in range(top_k)] for li in range(layers)]
        for t in range(tokens)
    ]


def flat(g: list[list[list[int]]]) -> list[int]:
    return [v for tok in g for layer in tok for v in layer]


@pytest.mark.parametrize("descr", ["<i2", "<i4", ">i4", "|u1", "<u2", "<i8"])
def test_npy_round_trip_c_order(descr: str) -> None:
    g = grid(5, 3, 2)
    blob = base64.b64encode(npy_bytes(flat(g), (5, 3, 2), descr)).decode()
    assert blob.startswith("k05VTVBZ")
    result = decode_routed_experts(blob)
    assert result.routing == g
    assert result.moe_layers == [0, 1, 2]
    assert (result.num_tokens, result.num_layers, result.top_k) == (5, 3, 2)
    assert result.dtype == descr


def test_npy_fortran_order() -> None:
    g = grid(4, 3, 2)
    # Fortran order: first index varies fastest.
    values = [g[t][li][k] for k in range(2) for li in range(3) for t in range(4)]
    blob = base64.b64encode(npy_bytes(values, (4, 3, 2), "<i4", fortran=True))
    assert decode_npy_routed_experts(blob).routing == g


def test_npy_placeholder_layers_excluded() -> None:
    g = grid(3, 4, 2)
    for tok in g:
        tok[0] = [-1, -1]  # dense layer 0 filled with -1
        tok[2] = [0, 0]  # dense layer 2 filled with 0 (top_k >= 2: cannot be real routing)
    blob = base64.b64encode(npy_bytes(flat(g), (3, 4, 2), "<i4")).decode()
    result = decode_routed_experts(blob)
    assert result.moe_layers == [1, 3]
    assert result.excluded_layers == [0, 2]
    assert result.routing == [[tok[1], tok[3]] for tok in g]
    assert "excluded" in result.note
    sparse = result.sparse()
    assert sparse["moe_layers"] == [1, 3] and sparse["topk_experts"] == 2


def test_npy_header_parsed_by_hand() -> None:
    data = npy_bytes([1, 2, 3, 4], (2, 2), "<i2")
    descr, fortran, shape, offset = parse_npy_header(data)
    assert (descr, fortran, shape) == ("<i2", False, (2, 2))
    assert data[offset:] == struct.pack("<4h", 1, 2, 3, 4)


def test_npy_matches_numpy_when_available() -> None:
    np = pytest.importorskip("numpy")
    import io

    arr = np.arange(2 * 3 * 4, dtype=np.int16).reshape(2, 3, 4) % 60
    buf = io.BytesIO()
    np.save(buf, arr)
    result = decode_routed_experts(base64.b64encode(buf.getvalue()).decode())
    assert result.routing == arr.tolist()


@pytest.mark.parametrize(
    "blob",
    [
        base64.b64encode(b"\x93NUMPY\x09\x00xxxx").decode(),  # unknown version
        base64.b64encode(b"\x93NUMPY\x01\x00\x05\x00{'a'}").decode(),  # bad header
        base64.b64encode(npy_bytes([1], (1,), "<i4").replace(b"<i4", b"<f4")).decode(),
    ],
)
def test_npy_bad_blobs_raise(blob: str) -> None:
    with pytest.raises(RoutingDecodeError):
        decode_routed_experts(blob)


def test_truncated_npy_keeps_raw_count() -> None:
    data = npy_bytes(list(range(12)), (3, 2, 2), "<i4")[:-8]
    result = decode_routed_experts(base64.b64encode(data).decode())
    assert result.routing is None and result.raw_count == 10
    assert "header says 12" in result.note


def test_openai_completion_body_with_routed_experts_in_vllm_log() -> None:
    g = grid(9, 2, 2)  # prompt 6 + completion 4 - 1 rows
    blob = base64.b64encode(npy_bytes(flat(g), (9, 2, 2), "<i4")).decode()
    body = {
        "id": "cmpl-r1",
        "object": "text_completion",
        "model": "m",
        "choices": [
            {"index": 0, "text": "abcd", "finish_reason": "length", "routed_experts": blob}
        ],
        "usage": {
            "prompt_tokens": 6,
            "completion_tokens": 4,
            "total_tokens": 10,
            "prompt_tokens_details": {"cached_tokens": 2},
        },
    }
    parser = vllm.FAMILY.new_parser()
    kind, event = parser.parse(json.dumps(body).encode())
    assert kind == "api.response"
    assert event is not None and event[0] == "request"
    payload = event[1]
    assert payload["request_id"] == "cmpl-r1"
    assert payload["cached_tokens"] == 2
    assert payload["sparse"]["routing"] == g  # type: ignore[typeddict-item]
    assert payload["sparse"]["moe_layers"] == [0, 1]  # type: ignore[typeddict-item]
