"""Decoding per-token MoE routing ("routed experts") returned in API responses.

Two wire formats exist (log-formats.md §4.3, §5.6):

- **SGLang** ``meta_info.routed_experts`` / ``choices[].sgl_ext.routed_experts``: base64 of
  raw little-endian int32 (``meta_info.routed_experts_dtype`` may name ``uint16``/``uint8``
  in newer builds), **no header**, flattened row-major ``[num_tokens, num_layers, top_k]``
  with num_tokens = prompt + completion - 1. The shape needs the model config, so
  ``num_layers`` / ``top_k`` are parser options; when one is missing it is inferred only
  if the length divides cleanly given the token count, otherwise the raw value count is
  kept and ``note`` says why.
- **vLLM** ``choices[].routed_experts``: base64 of a NumPy ``.npy`` file (always starts with
  ``k05VTVBZ`` = ``\\x93NUMPY``). The header carries dtype and shape, which we read
  ourselves (no numpy on the hot path). int8/16/32/64 and unsigned, either byte order,
  C or Fortran order.

Layers whose every slot is a placeholder (all ``-1``, as sglang-jax writes for dense
layers, or all ``0`` with top_k >= 2, which real routing cannot produce because the top-k
experts are distinct) are dropped from ``routing``; ``moe_layers`` lists the layer indices
kept and ``note`` names the excluded ones.
"""

from __future__ import annotations

import base64
import binascii
import sys
from array import array
from dataclasses import dataclass, field

from sparseety_tui.events import SparseInfo
from sparseety_tui.formats._pylit import LiteralError, as_int, parse_literal

NPY_B64_MAGIC = "k05VTVBZ"
NPY_MAGIC = b"\x93NUMPY"
#: Largest blob we decode (decoded bytes); a bigger one keeps only its raw count.
MAX_BLOB_BYTES = 256 * 1024 * 1024

# numpy kind+size -> array typecode (sizes checked at import below).
_TYPECODES = {
    ("i", 1): "b",
    ("u", 1): "B",
    ("i", 2): "h",
    ("u", 2): "H",
    ("i", 4): "i",
    ("u", 4): "I",
    ("i", 8): "q",
    ("u", 8): "Q",
}
_NAMED_DTYPES = {
    "int8": ("i", 1),
    "uint8": ("u", 1),
    "int16": ("i", 2),
    "uint16": ("u", 2),
    "int32": ("i", 4),
    "uint32": ("u", 4),
    "int64": ("i", 8),
    "uint64": ("u", 8),
}
for (_kind, _size), _code in list(_TYPECODES.items()):
    if array(_code).itemsize != _size:  # pragma: no cover - exotic platforms
        del _TYPECODES[(_kind, _size)]


class RoutingDecodeError(ValueError):
    """The blob is not decodable at all (bad base64, bad .npy header, unknown dtype)."""


@dataclass
class RoutingResult:
    """A decoded routing blob. ``routing`` is None when the shape could not be told."""

    raw_count: int  # number of values in the blob
    dtype: str
    routing: list[list[list[int]]] | None = None  # [tokens][moe_layers][top_k]
    moe_layers: list[int] = field(default_factory=list)
    num_layers: int | None = None  # layers in the blob (MoE or not)
    top_k: int | None = None
    num_tokens: int | None = None
    excluded_layers: list[int] = field(default_factory=list)
    note: str = ""

    def sparse(self) -> SparseInfo:
        """The request payload's ``sparse`` fields this result can fill."""
        out: SparseInfo = {}
        if self.routing is not None:
            out["routing"] = self.routing
            out["moe_layers"] = self.moe_layers
            if self.top_k is not None:
                out["topk_experts"] = self.top_k
            if self.num_layers is not None:
                out["num_layers"] = self.num_layers
        return out


def _b64decode(blob: str | bytes) -> bytes:
    if isinstance(blob, str):
        blob = blob.strip().encode("ascii", "replace")
    if len(blob) > MAX_BLOB_BYTES * 4 // 3 + 8:
        raise RoutingDecodeError("blob too large")
    try:
        return base64.b64decode(blob, validate=False)
    except (binascii.Error, ValueError) as exc:
        raise RoutingDecodeError(f"bad base64: {exc}") from None


def _values(raw: bytes, kind: str, size: int, little_endian: bool) -> array[int]:
    code = _TYPECODES.get((kind, size))
    if code is None:
        raise RoutingDecodeError(f"unsupported dtype {kind}{size}")
    usable = len(raw) - len(raw) % size
    values: array[int] = array(code)
    values.frombytes(raw[:usable])
    if size > 1 and little_endian != (sys.byteorder == "little"):
        values.byteswap()
    return values


def _reshape(
    values: array[int] | list[int], tokens: int, layers: int, top_k: int, fortran: bool = False
) -> list[list[list[int]]]:
    if not fortran:
        flat = values.tolist() if isinstance(values, array) else values
        row = layers * top_k
        return [
            [flat[t * row + li * top_k : t * row + (li + 1) * top_k] for li in range(layers)]
            for t in range(tokens)
        ]
    # Fortran order: element (t, l, k) lives at t + tokens * (li + layers * k).
    return [
        [[values[t + tokens * (li + layers * k)] for k in range(top_k)] for li in range(layers)]
        for t in range(tokens)
    ]


def _drop_placeholder_layers(result: RoutingResult, grid: list[list[list[int]]]) -> None:
    layers = result.num_layers or 0
    top_k = result.top_k or 0
    keep: list[int] = []
    excluded: list[int] = []
    for li in range(layers):
        slots = [v for tok in grid for v in tok[li]]
        if (slots and all(v == -1 for v in slots)) or (
            slots and top_k >= 2 and all(v == 0 for v in slots)
        ):
            excluded.append(li)
        else:
            keep.append(li)
    result.moe_layers = keep
    result.excluded_layers = excluded
    if excluded:
        result.routing = [[tok[li] for li in keep] for tok in grid]
        result.note = f"layers {excluded} excluded: every slot is a placeholder (-1 or 0), not MoE"
    else:
        result.routing = grid


def decode_sglang_routed_experts(
    blob: str | bytes,
    *,
    num_layers: int | None = None,
    top_k: int | None = None,
    num_tokens: int | None = None,
    dtype: str = "int32",
) -> RoutingResult:
    """Decode SGLang's headerless base64 int array into [tokens][layers][top_k].

    ``num_tokens`` is the expected row count (prompt + completion - 1, or less when the
    prompt part was cropped); it is only used to infer a missing ``num_layers``/``top_k``.
    """
    kind_size = _NAMED_DTYPES.get(dtype.lower().lstrip("<|"))
    if kind_size is None:
        raise RoutingDecodeError(f"unknown dtype {dtype!r}")
    kind, size = kind_size
    raw = _b64decode(blob)
    if len(raw) % size:
        raise RoutingDecodeError(f"{len(raw)} bytes is not a multiple of {size}")
    values = _values(raw, kind, size, little_endian=True)
    count = len(values)
    result = RoutingResult(raw_count=count, dtype=dtype)
    layers, k, tokens = num_layers, top_k, None
    if layers and k:
        if count % (layers * k):
            result.note = f"{count} values do not divide by num_layers*top_k={layers * k}"
            return result
        tokens = count // (layers * k)
    elif num_tokens and (layers or k):
        known = layers or k or 1
        if count % (num_tokens * known):
            result.note = f"{count} values do not divide by num_tokens*{known}"
            return result
        other = count // (num_tokens * known)
        layers, k, tokens = (layers, other, num_tokens) if layers else (other, k, num_tokens)
    else:
        result.note = (
            f"{count} routed-expert values kept raw: shape needs num_layers and top_k "
            "(parser options) or one of them plus the token count"
        )
        return result
    if not layers or not k:
        result.note = f"{count} values: shape could not be inferred"
        return result
    result.num_layers, result.top_k, result.num_tokens = layers, k, tokens
    _drop_placeholder_layers(result, _reshape(values, tokens, layers, k))
    return result


def parse_npy_header(data: bytes) -> tuple[str, bool, tuple[int, ...], int]:
    """(descr, fortran_order, shape, data offset) of a .npy file, read by hand."""
    if not data.startswith(NPY_MAGIC) or len(data) < 10:
        raise RoutingDecodeError("not a .npy file")
    major = data[6]
    if major == 1:
        hlen = int.from_bytes(data[8:10], "little")
        start = 10
    elif major in (2, 3):
        hlen = int.from_bytes(data[8:12], "little")
        start = 12
    else:
        raise RoutingDecodeError(f"unsupported .npy version {major}")
    if hlen > 65536 or start + hlen > len(data):
        raise RoutingDecodeError("bad .npy header length")
    try:
        header = parse_literal(data[start : start + hlen].decode("latin-1"))
    except (LiteralError, UnicodeDecodeError) as exc:
        raise RoutingDecodeError(f"bad .npy header: {exc}") from None
    if not isinstance(header, dict):
        raise RoutingDecodeError("bad .npy header")
    descr = header.get("descr")
    fortran = header.get("fortran_order")
    shape = header.get("shape")
    if not isinstance(descr, str) or not isinstance(fortran, bool):
        raise RoutingDecodeError("bad .npy header fields")
    if isinstance(shape, int):
        shape = (shape,)
    if not isinstance(shape, (tuple, list)):
        raise RoutingDecodeError("bad .npy shape")
    dims: list[int] = []
    for d in shape:
        di = as_int(d)
        if di is None or di < 0:
            raise RoutingDecodeError("bad .npy shape")
        dims.append(di)
    return descr, fortran, tuple(dims), start + hlen


def decode_npy_routed_experts(blob: str | bytes) -> RoutingResult:
    """Decode vLLM's base64 ``.npy`` routing array (shape from its own header)."""
    data = _b64decode(blob)
    descr, fortran, shape, offset = parse_npy_header(data)
    if len(descr) < 3 or descr[0] not in "<>|=" or descr[1] not in "iu":
        raise RoutingDecodeError(f"unsupported dtype {descr!r}")
    try:
        size = int(descr[2:])
    except ValueError:
        raise RoutingDecodeError(f"unsupported dtype {descr!r}") from None
    little = descr[0] != ">" and not (descr[0] == "=" and sys.byteorder == "big")
    values = _values(data[offset:], descr[1], size, little_endian=little)
    expected = 1
    for d in shape:
        expected *= d
    result = RoutingResult(raw_count=len(values), dtype=descr)
    if len(values) < expected:
        result.note = f".npy data holds {len(values)} values, header says {expected}"
        return result
    if len(shape) == 2:  # [tokens, layers] with top_k == 1
        shape = (shape[0], shape[1], 1)
    if len(shape) != 3:
        result.note = f".npy shape {shape} is not [tokens, layers, top_k]"
        return result
    tokens, layers, k = shape
    result.num_tokens, result.num_layers, result.top_k = tokens, layers, k
    if expected == 0:
        result.routing, result.moe_layers = [], list(range(layers))
        return result
    grid = _reshape(values[:expected], tokens, layers, k, fortran=fortran)
    _drop_placeholder_layers(result, grid)
    return result


def decode_routed_experts(
    blob: str,
    *,
    num_layers: int | None = None,
    top_k: int | None = None,
    num_tokens: int | None = None,
    dtype: str | None = None,
) -> RoutingResult:
    """Either format: ``.npy`` when the blob starts with the NumPy magic, else SGLang raw."""
    if blob.lstrip().startswith(NPY_B64_MAGIC):
        return decode_npy_routed_experts(blob)
    return decode_sglang_routed_experts(
        blob, num_layers=num_layers, top_k=top_k, num_tokens=num_tokens, dtype=dtype or "int32"
    )


@dataclass
class RoutingOptions:
    """Model shape for headerless (SGLang) routing blobs; both optional."""

    num_layers: int | None = None
    top_k: int | None = None
    #: Human-readable notes about blobs that could not be shaped (bounded).
    notes: list[str] = field(default_factory=list)

    def note(self, text: str) -> None:
        if len(self.notes) < 1000:
            self.notes.append(text)
