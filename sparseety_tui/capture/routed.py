"""Decode the routed-experts arrays that vLLM and SGLang put in their responses (numpy).

- vLLM (``--enable-return-routed-experts``): ``prompt_routed_experts`` on the response and
  ``routed_experts`` on each choice, ``[tokens, layers, top_k]``; nested JSON lists in the
  v0.21 docs' ``/v1/completions`` example (int16 ids), a base64 ``.npy`` buffer in newer
  releases (``/inference/v1/generate``, vLLM >= 0.22; vllm-project/vime PR #49,
  PrimeIntellect-ai/verifiers PR #1363). Told apart by type, and the ``.npy`` by its
  magic bytes (``\\x93NUMPY``, base64 ``k05VTVBZ``).
- SGLang (``--enable-return-routed-experts``, request ``return_routed_experts``):
  ``meta_info.routed_experts`` (native ``/generate``) or ``sgl_ext.routed_experts`` on each
  choice (OpenAI endpoints, SGLang PR #17434): base64 of the raw int32 values of a
  flattened ``[tokens, layers, top_k]`` array (SGLang docs; ai-dynamo/dynamo PR #9657:
  ``np.frombuffer(b64decode(x), dtype=np.int32)``). A ``routed_experts_dtype`` in
  ``meta_info`` (``uint16``/``uint8``, an open SGLang PR #31219) is honoured.
"""

from __future__ import annotations

import base64
import binascii
import io
from typing import Any

import numpy as np

NPY_MAGIC = b"\x93NUMPY"
SGLANG_DTYPES = {"int32": np.int32, "uint16": np.uint16, "uint8": np.uint8, "int16": np.int16}


class RoutedError(ValueError):
    """A routed-experts value that does not decode to what the server documents."""


def _b64(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise RoutedError(f"not base64: {exc}") from None


def is_npy(text: str) -> bool:
    return text.startswith("k05VTVBZ")  # base64 of the .npy magic


def decode_array(value: Any) -> np.ndarray:
    """A vLLM value (nested lists or base64 ``.npy``) as an int ``[tokens, layers, k]``."""
    arr: np.ndarray
    if isinstance(value, str):
        if not is_npy(value):
            raise RoutedError("a string that is not a base64 .npy buffer")
        try:
            arr = np.load(io.BytesIO(_b64(value)), allow_pickle=False)
        except ValueError as exc:
            raise RoutedError(f"bad .npy: {exc}") from None
    elif isinstance(value, list):
        try:
            arr = np.asarray(value)
        except ValueError:
            raise RoutedError("nested lists of uneven lengths") from None
        if arr.size == 0:
            return np.zeros((0, 0, 0), dtype=np.int64)
    else:
        raise RoutedError(f"a {type(value).__name__}, not lists or a base64 .npy string")
    if arr.ndim != 3 or not np.issubdtype(arr.dtype, np.integer):
        raise RoutedError(
            f"an array of shape {arr.shape} and dtype {arr.dtype}, not [tokens, layers, top_k] integers"
        )
    return arr.astype(np.int64)


def decode_flat(value: Any, dtype: str = "int32") -> np.ndarray:
    """An SGLang value: base64 of flat little-endian ids (``dtype``), as a 1-D array."""
    if not isinstance(value, str):
        raise RoutedError(f"a {type(value).__name__}, not a base64 string")
    if dtype not in SGLANG_DTYPES:
        raise RoutedError(f"routed_experts_dtype {dtype!r} unknown")
    raw = _b64(value)
    width = np.dtype(SGLANG_DTYPES[dtype]).itemsize
    if len(raw) % width:
        raise RoutedError(f"{len(raw)} bytes is not a whole number of {dtype} values")
    return np.frombuffer(raw, dtype=np.dtype(SGLANG_DTYPES[dtype]).newbyteorder("<")).astype(
        np.int64
    )


def reshape_flat(
    flat: np.ndarray, rows: int | None, top_k: int | None, layers: int | None
) -> np.ndarray:
    """``[tokens, layers, top_k]`` from a flat SGLang array: the row count comes from the
    request (``seqlen - 1 - start_len``), and one of top-k / layers from the user, since
    the response says neither."""
    n = int(flat.size)
    if rows is not None and rows > 0:
        if n % rows:
            raise RoutedError(f"{n} ids do not split into {rows} token rows")
        per_row = n // rows
        if top_k:
            if per_row % top_k:
                raise RoutedError(f"{per_row} ids a row is not layers x top_k={top_k}")
            return flat.reshape(rows, per_row // top_k, top_k)
        if layers:
            if per_row % layers:
                raise RoutedError(f"{per_row} ids a row is not layers={layers} x top_k")
            return flat.reshape(rows, layers, per_row // layers)
        raise RoutedError("SGLang's routed_experts is flat: give --top-k or --layers to shape it")
    if rows == 0:
        if n:
            raise RoutedError(f"{n} ids for no routed token")
        return flat.reshape(0, 0, 0)
    if top_k and layers:
        if n % (top_k * layers):
            raise RoutedError(f"{n} ids are not a whole number of {layers} x {top_k} rows")
        return flat.reshape(-1, layers, top_k)
    raise RoutedError("the token counts are unknown: give --top-k and --layers to shape it")
