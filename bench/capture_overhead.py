"""What the routing hooks of `record` cost generate() on a tiny model (hooks on vs off).

Usage:  python bench/capture_overhead.py [--model qwen3_moe] [--rounds 7] [--new 32]

Builds a tiny random-init MoE model (tests/capture/tiny_models.py; no download), then,
in one process and one torch thread, alternates rounds of ``generate`` over the same 8
prompts without hooks and with ``RoutingCapture`` on (greedy, ``--new`` tokens each, EOS
ignored so every round makes the same tokens). "with hooks" includes turning the recorded
tensors into the per-position rows a trace holds (``rows()``). Prints median tokens/s of
each and the ratio; alternating rounds keeps a busy machine's drift out of the ratio.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "capture"))

import tiny_models
import torch

from sparseety_tui.capture.hooks import RoutingCapture

PROMPTS = [[(7 * i + j) % 90 + 4 for j in range(12 + i)] for i in range(8)]


def one_round(model: Any, new: int, capture: RoutingCapture | None) -> float:
    """Generated tokens per second over the 8 prompts."""
    start = time.perf_counter()
    tokens = 0
    for ids in PROMPTS:
        x = torch.tensor([ids])
        with torch.no_grad():
            if capture is None:
                out = model.generate(x, attention_mask=torch.ones_like(x), max_new_tokens=new,
                                     min_new_tokens=new, do_sample=False, pad_token_id=0)  # fmt: skip
            else:
                capture.clear()
                with capture:
                    out = model.generate(x, attention_mask=torch.ones_like(x), max_new_tokens=new,
                                         min_new_tokens=new, do_sample=False, pad_token_id=0)  # fmt: skip
                capture.rows()
        tokens += out.shape[1] - x.shape[1]
    return tokens / (time.perf_counter() - start)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="qwen3_moe", choices=tiny_models.available())
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--new", type=int, default=32)
    args = parser.parse_args()
    torch.set_num_threads(1)
    model = tiny_models.build(args.model)
    capture = RoutingCapture(model)
    one_round(model, 4, None)  # warm-up: first-call costs out of the timed rounds
    one_round(model, 4, capture)
    off: list[float] = []
    on: list[float] = []
    for _ in range(args.rounds):
        off.append(one_round(model, args.new, None))
        on.append(one_round(model, args.new, capture))
    m_off, m_on = statistics.median(off), statistics.median(on)
    print(f"model {args.model} ({type(model).__name__}), {len(capture.moe_layers)} MoE layers, "
          f"torch {torch.__version__}, 1 thread, {args.rounds} rounds x 8 prompts x {args.new} tokens")  # fmt: skip
    print(f"hooks off: {m_off:8.1f} tokens/s (median; min {min(off):.1f}, max {max(off):.1f})")
    print(f"hooks on:  {m_on:8.1f} tokens/s (median; min {min(on):.1f}, max {max(on):.1f})")
    print(f"on/off:    {m_on / m_off:.3f}  (overhead {100 * (1 - m_on / m_off):.1f} %)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
