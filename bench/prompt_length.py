"""Extraction time against prompt length: it must grow linearly (no quadratic step).

Usage:  python bench/prompt_length.py [--repeat 5]

Writes one request record with a Chinese prompt of N characters (N = 1k ... 64k), runs
the same core as `extract` over it (tokenizer counting included; the tokenizer is loaded
once beforehand), and prints seconds and microseconds per character for each N. Linear
growth shows as a flat us/char column; the script also prints the ratio of the largest
to the smallest us/char.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

import orjson

from sparseety_tui.core.extraction._extractor import Extractor
from sparseety_tui.core.figures._costmodel import DEFAULT_SHAPE
from sparseety_tui.core.report._report import request_record
from sparseety_tui.core.tokens._tokens import TokenCounter
from sparseety_tui.sources import iter_lines

LENGTHS = (1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 64_000)


def one_run(path: Path, tokens: TokenCounter) -> float:
    start = time.perf_counter()
    extractor = Extractor(tokens=tokens)
    file = extractor.add_file(str(path))
    extractor.feed(file, iter_lines(str(path)))
    extractor.finish_file(file)
    request_record(extractor, DEFAULT_SHAPE, 0)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    tokens = TokenCounter()
    tokens.count("warm up")  # load the tokenizer outside the timings
    rng = random.Random(1)
    per_char = []
    print(f"{'chars':>7} {'tokens':>7} {'median s':>9} {'us/char':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        for n in LENGTHS:
            prompt = "".join(chr(rng.randint(0x4E00, 0x9FA5)) for _ in range(n))
            path = Path(tmp) / f"zh{n}.jsonl"
            path.write_bytes(
                orjson.dumps({"request_id": f"zh-{n}", "prompt": prompt, "completion": "好的"})
                + b"\n"
            )
            seconds = statistics.median(one_run(path, tokens) for _ in range(args.repeat))
            per_char.append(seconds / n * 1e6)
            print(f"{n:>7} {tokens.count(prompt):>7} {seconds:>9.4f} {per_char[-1]:>8.2f}")
    print(f"us/char at 64k / at 1k: {per_char[-1] / per_char[0]:.2f} (1.0 = linear)")


if __name__ == "__main__":
    main()
