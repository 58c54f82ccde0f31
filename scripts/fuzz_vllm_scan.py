"""Fuzz native/vllm_scan.c under AddressSanitizer / UBSan.

Build and run (from the repository root):

    PY=python3
    INC=$($PY -c 'import sysconfig;print(sysconfig.get_paths()["include"])')
    gcc -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -shared -fPIC \\
        -I$INC native/vllm_scan.c -o /tmp/vllmscan_asan.so
    LD_PRELOAD=$(gcc -print-file-name=libasan.so) ASAN_OPTIONS=detect_leaks=0 \\
        UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \\
        $PY scripts/fuzz_vllm_scan.py /tmp/vllmscan_asan.so --seconds 120 tests/data/real_logs/vllm*.log

Inputs: lines of the given logs and hand-made vLLM lines, mutated (bytes flipped,
inserted, deleted, lines cut short, every byte value) and joined into chunks, scanned from
random starts with random limits. Each input is a fresh ``bytes`` of its exact size, so
ASan sees any read past its end. Checks the result's invariants too.
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import sys
import time
from pathlib import Path
from typing import Any

SEEDS = [
    b"INFO 11-30 12:00:00 [logger.py:43] Received request chatcmpl-1: prompt: 'a b', params: "
    b"SamplingParams(n=1, temperature=0.7, top_p=0.95, top_k=0, max_tokens=256, min_tokens=0),"
    b" prompt_token_ids: [1, 2, 3], lora_request: None.",
    b"(APIServer pid=7) INFO 11-30 12:00:00 [async_llm.py:270] Added request chatcmpl-1.",
    b'INFO:     127.0.0.1:5 - "POST /v1/completions HTTP/1.1" 200 OK',
    b'(APIServer pid=7) INFO:     127.0.0.1:5 - "GET /x HTTP/1.1"',
    b"INFO 11-30 12:00:00 [logger.py:43] Received request x: params: SamplingParams(n=1, "
    b"max_tokens=9), prompt token ids: [], lora_request: None.",
]


def load(path: str) -> Any:
    spec = importlib.util.spec_from_file_location("sparseety_tui._vllmscan", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def mutate(rng: random.Random, line: bytes) -> bytes:
    data = bytearray(line)
    for _ in range(rng.randint(0, 4)):
        op = rng.random()
        at = rng.randint(0, len(data))
        if op < 0.3 and data:
            data[min(at, len(data) - 1)] = rng.randrange(256)
        elif op < 0.5:
            data[at:at] = bytes([rng.choice(b"'\"\\()[]:,. \r\n\x1b0123456789")])
        elif op < 0.7 and data:
            del data[at : at + rng.randint(1, 8)]
        elif op < 0.85:
            data = data[:at]
        else:
            other = rng.choice(SEEDS)
            data[at:at] = other[rng.randint(0, len(other)) :]
    return bytes(data)


def check(result: tuple[Any, ...], data: bytes, start: int, max_lines: int) -> None:
    n, end, _reason, next_end, kinds, offsets, lengths, ids, seg, stamps, ints, floats, spans = (
        result[:13]
    )
    refs = result[13]
    assert 0 <= n <= max_lines and start <= end <= next_end <= len(data)
    assert len(kinds) == n and len(offsets) == 8 * n and len(lengths) == 4 * n
    requests = sum(1 for k in kinds if k in (0, 1))
    assert len(refs) == 4 * requests
    received = sum(1 for k in kinds if k == 0)
    assert len(ids) == requests and len(seg) == 4 * len(stamps)
    assert len(ints) == 12 * received and len(floats) == 16 * received
    assert len(spans) == 16 * received


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("module")
    ap.add_argument("logs", nargs="*")
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_intermixed_args()
    scan = load(args.module)
    lines = list(SEEDS)
    for log in args.logs:
        lines.extend(line for line in Path(log).read_bytes().split(b"\n") if line)
    rng = random.Random(args.seed)
    deadline = time.monotonic() + args.seconds
    inputs = 0
    while time.monotonic() < deadline:
        picked = [mutate(rng, rng.choice(lines)) for _ in range(rng.randint(1, 12))]
        data = bytes(b"\n".join(picked) + (b"\n" if rng.random() < 0.5 else b""))
        start = rng.randint(0, len(data))
        max_lines = rng.randint(1, 20)
        max_line_bytes = rng.choice((1 << 20, rng.randint(0, 300)))
        carry = rng.random() < 0.5
        result = scan.scan_vllm(data, start, max_lines, max_line_bytes, carry)
        check(result, data, start, max_lines)
        inputs += 1
    print(f"{inputs} inputs, no sanitizer report", file=sys.stderr)


if __name__ == "__main__":
    main()
