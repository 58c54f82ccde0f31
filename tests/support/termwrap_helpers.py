"""The hard-wrapped real vLLM V0 log, real stats line shapes, and the wrapping a terminal
does, shared by the unit and the worker (integration) halves of the terminal wrap tests."""

from __future__ import annotations

from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data" / "real_logs"
REAL = DATA / "vllm_tt_v0_hardwrapped_130col_dollar_fused_stats_tt246.log"

V1_ENGINE = (
    "(APIServer pid=387731) INFO 03-11 06:16:52 [loggers.py:257] Engine {e:03d}: Avg prompt "
    "throughput: {p:.1f} tokens/s, Avg generation throughput: {g:.1f} tokens/s, Running: {r} "
    "reqs, Waiting: {w} reqs, GPU KV cache usage: {kv:.1f}%, Prefix cache hit rate: 70.0%, "
    "MM cache hit rate: 0.0%"
)
DECODE = (
    "[2026-04-08 14:05:{s:02d} TP0] Decode batch, #running-req: {r}, #token: 20800, token "
    "usage: {u:.2f}, cuda graph: True, gen throughput (token/s): {g:.2f}, #queue-req: {q}"
)
PREFILL = (
    "[2026-04-08 14:05:{s:02d} TP0] Prefill batch. #new-seq: 1, #new-token: {n}, "
    "#cached-token: 0, token usage: {u:.2f}, #running-req: {r}, #queue-req: {q}, "
    "cuda graph: False, input throughput (token/s): 812.40"
)
ACCESS = (
    '[2026-04-08 14:05:{s:02d}] INFO:     127.0.0.1:37664 - "POST /v1/completions HTTP/1.1" 200 OK'
)


def wrap(line: str, width: int, pad: bool = False) -> list[str]:
    """``line`` as a terminal of ``width`` columns shows it; ``pad``: the last row filled
    with spaces to the width, as a copied screen gives it."""
    rows = [line[i : i + width] for i in range(0, len(line), width)]
    if pad:
        rows[-1] = rows[-1].ljust(width)
    return rows
