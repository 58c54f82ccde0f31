"""SGLang expert-distribution dumps (``expert_distribution_recorder_*.pt``) -> what the
tool reads. Needs torch (the capture extra): the dumps are ``torch.save`` files, loaded
here with ``weights_only=True`` (tensors, lists, dicts and numbers only, no code run).

Two modes of ``--expert-distribution-recorder-mode`` (sgl-project/sglang
``python/sglang/srt/eplb/expert_distribution.py``):

- ``stat`` (the default): ``{rank, logical_count: int [buffered_steps, layers, experts],
  average_utilization_rate_over_window}``, counts only: written as the
  ``layer_id,expert_id,count`` CSV that the tool already reads as an SGLang
  expert-distribution dump (summed over the buffered steps).
- ``per_token``: ``{records: [{forward_pass_id, rank, input_ids, positions,
  extend_seq_lens, forward_mode, topk_ids_of_layer: int32 [layers, tokens, 8], ...}],
  last_physical_to_logical_map: [layers, physical experts]}``. The records name no
  request (a TODO in SGLang), so each forward pass's token segments are joined to
  requests whose token ids are known (``--requests``): a segment is assigned when exactly
  one request has those ids at those positions; ambiguous and unmatched tokens are
  counted, never guessed. Expert ids are physical (EPLB replicas): mapped to logical
  ones with the dump's last map (the map may have changed while recording: SGLang's note).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np


class DumpError(ValueError):
    """A file that is not a readable SGLang expert-distribution dump."""


def load(path: Path) -> dict[str, Any]:
    import torch

    try:
        data = torch.load(str(path), map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises many kinds (pickle, zip, weights_only refusals)
        raise DumpError(f"{path}: not loadable as a tensors-only torch file: {exc}") from None
    if not isinstance(data, dict) or not ("logical_count" in data or "records" in data):
        raise DumpError(
            f"{path}: not an SGLang expert-distribution dump (no logical_count/records)"
        )
    return data


def is_stat(dump: dict[str, Any]) -> bool:
    return "logical_count" in dump


def _array(value: Any) -> np.ndarray:
    return value.numpy() if hasattr(value, "numpy") else np.asarray(value)


def stat_csv(dump: dict[str, Any]) -> list[str]:
    """``layer_id,expert_id,count`` lines, counts summed over the buffered steps."""
    counts = _array(dump["logical_count"])
    if counts.ndim == 2:
        counts = counts[None]
    if counts.ndim != 3:
        raise DumpError(f"logical_count of shape {counts.shape}, not [steps, layers, experts]")
    total = counts.astype(np.int64).sum(axis=0)
    lines = ["layer_id,expert_id,count"]
    for layer in range(total.shape[0]):
        lines.extend(f"{layer},{e},{int(c)}" for e, c in enumerate(total[layer]))
    return lines


@dataclass
class JoinStats:
    tokens: int = 0
    joined: int = 0
    ambiguous: int = 0
    unmatched: int = 0
    repeated: int = 0
    by_request: dict[str, int] = field(default_factory=dict)


def read_requests(path: Path) -> dict[str, list[int]]:
    """request id -> prompt + completion token ids, from a trace's request records."""
    seqs: dict[str, list[int]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if not isinstance(obj, dict) or obj.get("type") not in (None, "request"):
            continue
        rid, prompt = obj.get("request_id"), obj.get("prompt_token_ids")
        if isinstance(rid, (str, int)) and isinstance(prompt, list):
            seqs[str(rid)] = list(prompt) + list(obj.get("completion_token_ids") or [])
    return seqs


def _segments(record: dict[str, Any], tokens: int) -> list[tuple[int, int]]:
    lens = record.get("extend_seq_lens")
    if isinstance(lens, (list, tuple)) and lens and sum(int(n) for n in lens) == tokens:
        out, offset = [], 0
        for n in lens:
            out.append((offset, int(n)))
            offset += int(n)
        return out
    return [(i, 1) for i in range(tokens)]  # decode: one token per running request


def per_token_events(
    dumps: list[dict[str, Any]], requests: dict[str, list[int]], stats: JoinStats
) -> Iterator[dict[str, Any]]:
    """One ``"type": "token"`` event per joined (request, position), in dump order."""
    seen: set[tuple[str, int]] = set()
    index: dict[tuple[int, int], list[str]] = {}  # (position, token id) -> requests
    for rid, seq in requests.items():
        for pos, tid in enumerate(seq):
            index.setdefault((pos, tid), []).append(rid)
    for dump in dumps:
        p2l = dump.get("last_physical_to_logical_map")
        mapping = None if p2l is None else _array(p2l).astype(np.int64)
        for record in dump.get("records", []):
            ids = [int(t) for t in record["input_ids"]]
            positions = [int(p) for p in record["positions"]]
            topk = _array(record["topk_ids_of_layer"]).astype(np.int64)[:, : len(ids), :]
            if mapping is not None:
                layer_rows = np.arange(topk.shape[0])[:, None, None]
                topk = np.where(topk >= 0, mapping[layer_rows, np.clip(topk, 0, None)], -1)
            for offset, n in _segments(record, len(ids)):
                stats.tokens += n
                seg, start = ids[offset : offset + n], positions[offset]
                owners = [
                    rid
                    for rid in index.get((start, seg[0]), [])
                    if requests[rid][start : start + n] == seg
                ]
                if len(owners) != 1:
                    if owners:
                        stats.ambiguous += n
                    else:
                        stats.unmatched += n
                    continue
                rid = owners[0]
                for k in range(n):
                    key = (rid, start + k)
                    if key in seen:  # the same pass dumped by another rank
                        stats.repeated += 1
                        continue
                    seen.add(key)
                    stats.joined += 1
                    stats.by_request[rid] = stats.by_request.get(rid, 0) + 1
                    yield {
                        "type": "token",
                        "request_id": rid,
                        "pos": start + k,
                        "token_id": seg[k],
                        "experts": _trim(topk[:, offset + k, :]).tolist(),
                    }


def _trim(rows: np.ndarray) -> np.ndarray:
    """Drop the -1 columns SGLang pads its 8 slots with for a model of smaller top-k."""
    used = int((rows >= 0).sum(axis=1).max()) if rows.size else 0
    return rows[:, : max(used, 1)]
