"""Fuzz native/sglang_scan.c under AddressSanitizer and UndefinedBehaviorSanitizer.

Builds the extension with ``-fsanitize=address,undefined`` into a temporary folder and
feeds it random and mutated SGLang lines (real logs' lines, the common shapes, bytes of
every value, cut lines) through ``scan``, and the scans' columns plus corrupted ones
through ``accumulate``. Any out-of-bounds access or undefined behaviour aborts the run.

    python scripts/fuzz_sglang_scan.py --seconds 120

It re-runs itself under ``LD_PRELOAD=libasan.so`` (the Python binary is not built with
ASan). Prints the number of inputs tried.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import random
import subprocess
import sys
import sysconfig
import tempfile
import time
from array import array
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "native" / "sglang_scan.c"
REAL_LOGS = ROOT / "tests" / "data" / "real_logs"

SHAPES = [
    b"[2026-11-30 12:00:00 TP0] Prefill batch. #new-seq: 3, #new-token: 3105, #cached-token: "
    b"2784, token usage: 0.01, #running-req: 0, #queue-req: 0",
    b"[2026-11-30 12:00:00 DP0 TP0 EP0] Decode batch. #running-req: 5, #token: 3175, token "
    b"usage: 0.01, gen throughput (token/s): 199.40, #queue-req: 1",
    b'[2026-11-30 12:00:00] INFO:     127.0.0.1:57479 - "POST /v1/completions HTTP/1.1" 200 OK',
    b"[2026-11-30 12:00:00 TP0] Decode batch. #running-req: 123456789012345678, #token: 1, "
    b"token usage: 123456789012345678.123456789012345678, gen throughput (token/s): "
    b"0.000000000000000001, #queue-req: 999999999999999999",
]


def build(out_dir: Path) -> Path:
    include = sysconfig.get_paths()["include"]
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    target = out_dir / f"_sglscan{suffix}"
    subprocess.run(
        [
            "gcc",
            "-O1",
            "-g",
            "-fsanitize=address,undefined",
            "-fno-sanitize-recover=all",
            "-fno-omit-frame-pointer",
            "-Wall",
            "-Wextra",
            "-shared",
            "-fPIC",
            f"-I{include}",
            str(SOURCE),
            "-o",
            str(target),
            "-lm",
        ],
        check=True,
    )
    return target


def corpus() -> list[bytes]:
    lines = list(SHAPES)
    for path in sorted(REAL_LOGS.glob("sglang_*.log")):
        lines.extend(path.read_bytes().split(b"\n")[:400])
    return [line for line in lines if line]


def mutate(rng: random.Random, line: bytes) -> bytes:
    data = bytearray(line)
    for _ in range(rng.randrange(1, 4)):
        roll = rng.random()
        if roll < 0.3 and data:
            data[rng.randrange(len(data))] = rng.randrange(256)
        elif roll < 0.5:
            data.insert(rng.randrange(len(data) + 1), rng.choice(b"0123456789.,: []\r\n\x1b\xff"))
        elif roll < 0.7 and data:
            del data[rng.randrange(len(data))]
        elif roll < 0.85:
            data = data[: rng.randrange(len(data) + 1)]
        else:
            at = rng.randrange(len(data) + 1)
            data[at:at] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 40)))
    return bytes(data)


class Minutes:
    """``LabelSeries.own`` stand-in: a minute's array (now and then a too-short one)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.arrays: dict[int, array[float]] = {}

    def __call__(self, minute: int) -> array[float]:
        if minute not in self.arrays:
            self.arrays[minute] = array("d", bytes(8 * self.rng.choice([18, 18, 18, 3])))
        return self.arrays[minute]


def fuzz(module_path: Path, seconds: float, seed: int) -> int:
    spec = importlib.util.spec_from_file_location("sparseety_tui._sglscan", module_path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    rng = random.Random(seed)
    lines = corpus()
    inputs = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        picked = [rng.choice(lines) for _ in range(rng.randrange(1, 30))]
        picked = [mutate(rng, line) if rng.random() < 0.3 else line for line in picked]
        data = b"\n".join(picked) + (b"\n" if rng.random() < 0.8 else b"")
        start = rng.randrange(len(data) + 1)
        max_line = rng.choice([0, 10, 100, 1 << 20])
        got = mod.scan(data, start, max_line, rng.choice([0, 1, 5, 1 << 20]))
        inputs += 1
        lines_read, end, next_end = got[0], got[1], got[2]
        assert start <= end <= next_end <= len(data), (start, end, next_end)
        rows = len(got[6])
        if not rows:
            continue
        kinds, minutes, secs, ranks, ints, floats = got[6:12]
        bases = array("d", [rng.choice([1.7e9, float("nan"), -6.2e10, 1e300]) for _ in got[12]])
        if rng.random() < 0.2:  # corrupt columns: must raise, never read out of bounds
            kinds = mutate(rng, kinds)
            minutes = mutate(rng, minutes)
            secs = secs[: rng.randrange(len(secs) + 1)]
        own = Minutes(rng)
        sums = array("d", bytes(8 * rng.choice([7, 7, 2])))
        with contextlib.suppress(ValueError):  # a corrupted column is refused
            mod.accumulate(
                kinds, ranks, ints, floats, minutes, secs, bases, rng.randrange(-1, 3), sums, own
            )
        inputs += 1
        assert lines_read >= 0
    return inputs


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--module", help=argparse.SUPPRESS)  # the re-run under ASan
    args = parser.parse_args()
    if args.module:
        n = fuzz(Path(args.module), args.seconds, args.seed)
        print(f"{n} inputs, no sanitizer report")
        return
    with tempfile.TemporaryDirectory() as tmp:
        module = build(Path(tmp))
        libasan = subprocess.run(
            ["gcc", "-print-file-name=libasan.so"], capture_output=True, text=True, check=True
        ).stdout.strip()
        env = {
            **os.environ,
            "LD_PRELOAD": libasan,
            "ASAN_OPTIONS": "detect_leaks=0",
            "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1",
        }
        cmd = [sys.executable, __file__, "--seconds", str(args.seconds), "--seed", str(args.seed)]
        subprocess.run([*cmd, "--module", str(module)], env=env, check=True)


if __name__ == "__main__":
    main()
