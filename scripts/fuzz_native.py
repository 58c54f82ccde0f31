"""Fuzz the C extensions (native/*.c) under AddressSanitizer and UBSan.

    python scripts/fuzz_native.py [--seconds 120] [--target _scan ...] [--seed 1]
    python scripts/fuzz_native.py --target _scan --replay 1:12345   # one input again

Each target's C file is built with ``-fsanitize=address,undefined -fno-sanitize-recover=all
-g -O1`` into a temporary directory and loaded, by path, in a child Python run under
``LD_PRELOAD=libasan.so`` with ``PYTHONMALLOC=malloc`` (so every Python buffer is a malloc
block with ASan's red zones around it, not a slice of a pymalloc arena). The child feeds the
module's Python entry points inputs made from real log lines (tests/data/real_logs,
sample_logs, lines of shared/tools/gen_logs.py) and random bytes, mutated: byte flips,
truncations, splices, runs of digits, quotes, backslashes, UTF-8 edge cases, CRLF, NUL.
Input ``i`` depends only on (seed, i), so a finding is replayed with ``--replay SEED:I``;
the child notes the index of the input in hand in a shared page before each call, which
is how the parent knows which one a sanitizer abort (or a hang) came from.

A target is one line of TARGETS: the C file, the module name and a driver, a function
``(module, data, rng) -> None`` that calls the module on ``data`` and asserts what must
hold whatever the input (an AssertionError is a finding too; ValueError and TypeError on
arguments the module refuses are not).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import importlib.util
import json
import mmap
import os
import random
import shutil
import struct
import subprocess
import sys
import sysconfig
import tempfile
import time
from array import array
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]
GEN_LOGS = ROOT.parent / "shared" / "tools" / "gen_logs.py"
#: The child writes the index of the input in hand here (8 bytes), then the input itself.
PROGRESS_BYTES = 8 + 8 + (1 << 20)
MAX_INPUT = 1 << 20
#: An input that keeps the child busy this long is reported as a hang.
HANG_S = 10.0

Driver = Callable[[ModuleType, bytes, random.Random], None]


def exact_buffer(data: bytes) -> ctypes.Array[ctypes.c_char]:
    """The bytes in a malloc block of exactly their size: a read one past the end is in
    ASan's red zone (a bytes object has a NUL after its last byte that would hide it)."""
    return (ctypes.c_char * len(data)).from_buffer_copy(data)


# -- drivers ------------------------------------------------------------------------------


def drive_scan(module: ModuleType, data: bytes, rng: random.Random) -> None:
    """_scan.scan_requests as formats/_trace_native.py calls it: scan, skip the line it
    stopped at, scan again, to the end; with random limits."""
    buf = exact_buffer(data) if rng.random() < 0.9 else data
    max_records = rng.choice((1, 2, 3, 7, 64, 1 << 16))
    max_line = rng.choice((0, 1, 16, 80, 200, 1 << 20))
    pos = 0 if rng.random() < 0.8 else rng.randrange(len(data) + 1)
    size = len(data)
    for _ in range(10_000):
        n, end, reason, next_end, offsets, lengths, *_rest, tables = module.scan_requests(
            buf, pos, max_records, max_line
        )
        assert pos <= end <= next_end <= size, (pos, end, next_end, size)
        assert 0 <= n <= max_records and len(offsets) == 8 * n and len(lengths) == 4 * n
        starts = struct.unpack(f"{n}q", offsets)
        spans = struct.unpack(f"{n}I", lengths)
        for start, span in zip(starts, spans):
            assert pos <= start and start + span <= end
        assert all(isinstance(name, str) for table in tables for name in table)
        if reason == module.STOP_END:
            assert end == size
            return
        if reason == module.STOP_NOT_SIMPLE:
            assert next_end > end, "a stop must name a line to skip"
            pos = next_end
        else:
            assert reason == module.STOP_FULL and n > 0, "a full scan must have taken rows"
            pos = end
        if pos >= size:
            return
    raise AssertionError("the scan did not advance")


def drive_idtable(module: ModuleType, data: bytes, rng: random.Random) -> None:
    """_idtable's two loops on a table, stored hashes and new hashes cut from ``data``:
    mostly as core/store/ builds them, sometimes not (a wrong mask, odd lengths,
    rows that point nowhere, a full table)."""
    size = 1 << rng.randrange(0, 11)
    table = array("i", [-1]) * size
    known = array(
        "q",
        [
            int.from_bytes(data[i : i + 8].ljust(8, b"\0"), "little", signed=True)
            for i in range(0, min(len(data), 8 * size), 8)
        ],
    )
    rows = list(range(len(known)))
    rng.shuffle(rows)
    fill = rng.choice((0.0, 0.25, 0.5, 1.0))
    for row in rows[: int(fill * size)]:
        slot = known[row] & (size - 1)
        for _ in range(size):
            if table[slot] == -1:
                table[slot] = row
                break
            slot = (slot + 1) & (size - 1)
    if rng.random() < 0.2:  # values core/store/ never writes
        for _ in range(rng.randrange(1, 4)):
            table[rng.randrange(size)] = rng.choice((-2, -(1 << 31), len(known), 1 << 30))
    mask = size - 1
    if rng.random() < 0.1:
        mask = rng.choice((-1, 0, size, 2 * size - 1, -(1 << 62)))
    if rng.random() < 0.05:
        table = array("i")
    new = bytes(data[rng.randrange(len(data) + 1) :]) if data else b""
    if rng.random() < 0.8:
        new = new[: len(new) - len(new) % 8]
    stored = known.tobytes()
    if rng.random() < 0.05:
        stored += b"\1"
    try:
        fresh = module.all_new(
            exact_buffer(table.tobytes()), mask, exact_buffer(stored), exact_buffer(new)
        )
        assert fresh in (True, False)
    except (ValueError, TypeError, OverflowError):
        pass
    first_row = rng.choice((0, len(known), (1 << 31) - 2, -1))
    with contextlib.suppress(ValueError, TypeError, OverflowError):
        module.place_rows(table, mask, exact_buffer(new), first_row)


def drive_idwindow(module: ModuleType, data: bytes, rng: random.Random) -> None:
    """_idwindow's Generations through random operations on ids cut from ``data`` (str of
    every kind: ASCII, Latin-1, BMP, astral, lone surrogates), held equal to the two
    dicts formats/vllm/_recent.py keeps without it."""
    pieces = [data[i : i + rng.randrange(1, 9)] for i in range(0, len(data), 3)] or [b""]
    decode = rng.choice(
        (
            lambda b: b.decode("latin-1"),
            lambda b: b.decode("utf-8", "surrogateescape"),
            lambda b: b.decode("utf-16-le", "surrogatepass") if len(b) % 2 == 0 else "x",
            lambda b: "\U0001f600" + b.hex(),
        )
    )
    ids = [decode(p) for p in pieces]
    native, new, old = module.Generations(), {}, {}

    def serial_of(rid: str) -> int:
        return new.get(rid, old.get(rid, 0))

    for _ in range(rng.randrange(1, 60)):
        op = rng.randrange(4)
        if op == 0:
            rid, serial = rng.choice(ids), rng.randrange(1, 1 << 40)
            native.add(rid, serial)
            new[rid] = serial
        elif op == 1:
            run = rng.sample(ids, min(len(ids), rng.randrange(0, 50)))
            if rng.random() < 0.2 and run:
                run.append(run[0])
            start, floor = rng.randrange(1, 1 << 40), rng.randrange(-5, 1 << 40)
            want = not any(serial_of(r) > max(floor, 0) for r in run) and len(set(run)) == len(run)
            assert native.add_run(run, start, floor) is want
            if want:
                new.update(zip(run, range(start, start + len(run))))
        elif op == 2:
            gone = rng.sample(ids, min(len(ids), rng.randrange(0, 50)))
            native.discard(gone)
            for rid in gone:
                new.pop(rid, None)
        else:
            size = rng.randrange(0, 40)
            native.next_generation(size)
            if len(new) >= size:
                old, new = new, {}
        probe = rng.sample(ids, min(len(ids), 20))
        assert [native.serial_of(r) for r in probe] == [serial_of(r) for r in probe]
    assert native.latest() == {**old, **new}
    with contextlib.suppress(TypeError):
        native.add_run([b"not a str"], 1, 0)


def line_scanner(call: Callable[..., tuple[int, ...]]) -> Driver:
    """A driver for a server-line scanner that returns (lines, end, ...) and says where the
    line it stopped at ends: it walks ``data`` as formats/*/native.py do, scanning a run,
    skipping the line the scan left to the parser, scanning again. ``call(module, data,
    start, max_lines, max_line_bytes)`` returns (lines, end, next_end)."""

    def drive(module: ModuleType, data: bytes, rng: random.Random) -> None:
        buf = exact_buffer(data) if rng.random() < 0.9 else data
        max_lines = rng.choice((1, 2, 7, 1 << 16))
        max_line = rng.choice((0, 16, 200, 1 << 20))
        pos, size = 0, len(data)
        while pos < size:
            lines, end, next_end = call(module, buf, pos, max_lines, max_line)
            assert lines >= 0 and pos <= end <= size, (pos, lines, end, size)
            newline = data.find(b"\n", end)
            skip = size if newline < 0 else newline + 1
            pos = max(skip, next_end) if next_end <= size else skip

    return drive


def _sglscan(
    module: ModuleType, data: object, start: int, lines: int, line_bytes: int
) -> tuple[int, ...]:
    raw = module.scan(data, start, line_bytes, lines)
    return raw[0], raw[1], raw[2]


def _vllmscan(
    module: ModuleType, data: object, start: int, lines: int, line_bytes: int
) -> tuple[int, ...]:
    # Carrying or not (formats/vllm/_native.py carries), on the same inputs.
    raw = module.scan_vllm(data, start, lines, line_bytes, (start + lines) % 2 == 0)
    n, requests = raw[0], len(raw[7])
    assert len(raw[4]) == n and len(raw[13]) == 4 * requests, (n, requests)
    received = raw[14]
    assert len(received) == raw[4].count(0) and len(raw[16]) == len(raw[17]) == 8 * len(received)
    assert raw[15] == "".join(received).encode(), "the Received ids' blob"
    return raw[0], raw[1], raw[3]


class Target(NamedTuple):
    source: str  # the C file, relative to the repository
    module: str  # the name its PyInit_ function is made for
    drive: Driver


#: One line a module. A target whose C file is not in the tree is skipped (said so).
TARGETS: dict[str, Target] = {
    "_scan": Target("native/scan.c", "sparseety_tui._scan", drive_scan),
    "_idtable": Target("native/idtable.c", "sparseety_tui._idtable", drive_idtable),
    "_sglscan": Target("native/sglang_scan.c", "sparseety_tui._sglscan", line_scanner(_sglscan)),
    "_vllmscan": Target("native/vllm_scan.c", "sparseety_tui._vllmscan", line_scanner(_vllmscan)),
    "_idwindow": Target("native/id_window.c", "sparseety_tui._idwindow", drive_idwindow),
}


# -- inputs -------------------------------------------------------------------------------

UTF8_EDGES = (
    b"\xc0\x80",
    b"\xc1\xbf",
    b"\xed\xa0\x80",
    b"\xed\xbf\xbf",
    b"\xf4\x90\x80\x80",
    b"\xf8\x88\x80\x80\x80",
    b"\x80",
    b"\xbf",
    b"\xff",
    b"\xfe",
    b"\xef\xbb\xbf",
    b"\xe2\x80\xa8",
    b"\xe4\xb8",
    b"\xf0\x9f\x98",
    b"\xf0\x9f\x98\x80",
    b"\xc3\xa9",
    b"\x7f",
)
TOKENS = (
    b'"',
    b"\\",
    b'\\"',
    b"\\u0000",
    b"\\ud800",
    b"\r\n",
    b"\r",
    b"\n",
    b"\0",
    b"\t",
    b"{",
    b"}",
    b"[",
    b"]",
    b":",
    b",",
    b"null",
    b"true",
    b"false",
    b"-",
    b"-0",
    b"0.",
    b".5",
    b"1e",
    b"1e400",
    b"-1e-400",
    b"2147483647",
    b"2147483648",
    b"-2147483649",
    b"9007199254740993",
    b"18446744073709551616",
    b"1" * 25,
    b"0" * 30,
    b"1.7e18",
    b"NaN",
    b"Infinity",
    b"2026-13-01T00:00:00",
    b"2024-02-29T23:59:59.999999Z",
    b"1970-01-01 00:00:00",
    b"9999-12-31T23:59:59.999Z",
    b'"ts":',
    b'"request_id":',
    b'"sparse":{',
    b'"model":"',
    b" " * 40,
)


def corpus_lines(seed: int) -> list[bytes]:
    """Seed lines: every real and sample log, a few records of each generated kind, and
    records that carry every field the scanner takes."""
    lines: list[bytes] = []
    for pattern in ("tests/data/real_logs/*.log", "sample_logs/*.jsonl", "sample_logs/*.log"):
        for path in sorted(ROOT.glob(pattern)):
            lines.extend(path.read_bytes().splitlines()[:400])
    if GEN_LOGS.exists():
        for kind in ("jsonl", "sglang", "vllm"):
            out = subprocess.run(
                [
                    sys.executable,
                    str(GEN_LOGS),
                    "--kind",
                    kind,
                    "--size",
                    "128K",
                    "--out",
                    "-",
                    "--seed",
                    str(seed),
                ],
                capture_output=True,
                check=True,
            ).stdout
            lines.extend(out.splitlines()[:600])
    full = {
        "request_id": "req-1",
        "ts": 1764504000.25,
        "model": "m",
        "prompt_tokens": 12,
        "completion_tokens": 3,
        "cached_tokens": 0,
        "latency_s": 0.5,
        "ttft_s": 0.05,
        "state": "finished",
        "received_ts": "2026-11-30T10:00:00.123Z",
        "finished_ts": "2026-11-30 10:00:01.123456",
        "cache_hit": True,
        "finish_reason": "stop",
        "sparse": {
            "topk_experts": 2,
            "total_experts": 8,
            "skipped_attention_heads": 1,
            "total_attention_heads": 32,
            "kv_kept": 10,
            "kv_total": 20,
            "kv_skip": "window",
            "kv_policy": "x",
        },
    }
    lines.append(json.dumps(full).encode())
    lines.append(json.dumps(full, separators=(",", ":")).encode())
    return [line for line in lines if line]


def mutate(line: bytes, rng: random.Random, corpus: list[bytes]) -> bytes:
    data = bytearray(line)
    for _ in range(rng.choice((0, 1, 1, 2, 3, 8))):
        op = rng.randrange(8)
        at = rng.randrange(len(data) + 1)
        if op == 0 and data:  # flip a bit, or set a byte to any value
            i = min(at, len(data) - 1)
            data[i] = (
                data[i] ^ (1 << rng.randrange(8)) if rng.random() < 0.5 else rng.randrange(256)
            )
        elif op == 1:  # truncate
            del data[at:]
        elif op == 2:  # splice in the tail of another line
            other = rng.choice(corpus)
            data[at:] = other[rng.randrange(len(other) + 1) :]
        elif op == 3:  # a long run of digits, maybe a number's tail
            run = bytes(rng.choice(b"0123456789") for _ in range(rng.choice((1, 19, 20, 64, 400))))
            data[at:at] = run + rng.choice((b"", b".5", b"e308", b"e-330", b"E+2"))
        elif op == 4:
            data[at:at] = rng.choice(TOKENS)
        elif op == 5:
            data[at:at] = rng.choice(UTF8_EDGES)
        elif op == 6 and data:  # delete a range
            del data[at : at + rng.randrange(1, 16)]
        else:  # repeat a piece (a repeated key, a doubled value)
            end = min(len(data), at + rng.randrange(1, 40))
            data[at:at] = data[at:end]
    return bytes(data)


def make_input(seed: int, index: int, corpus: list[bytes]) -> tuple[bytes, random.Random]:
    """Input ``index`` of a run, from (seed, index) alone."""
    rng = random.Random(f"{seed}:{index}")
    if rng.random() < 0.1:
        return rng.randbytes(rng.choice((0, 1, 7, 64, 4096))), rng
    lines = [mutate(rng.choice(corpus), rng, corpus) for _ in range(rng.choice((1, 1, 2, 5, 30)))]
    data = rng.choice((b"\n", b"\r\n", b"\n\n")).join(lines)
    if rng.random() < 0.7:
        data += b"\n"
    return data[:MAX_INPUT], rng


# -- child: run one target ----------------------------------------------------------------


def load(so_path: str, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, so_path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def child(args: argparse.Namespace) -> None:
    target = TARGETS[args.target]
    module = load(args.so, target.module)
    corpus = [line for line in Path(args.corpus).read_bytes().split(b"\0\n") if line]
    with open(args.progress, "r+b") as f:
        progress = mmap.mmap(f.fileno(), PROGRESS_BYTES)
    indexes = [args.replay] if args.replay is not None else range(args.start, 1 << 62)
    deadline = time.monotonic() + args.seconds
    done = 0
    for index in indexes:
        data, rng = make_input(args.seed, index, corpus)
        progress[:16] = struct.pack("qq", index, len(data))
        progress[16 : 16 + len(data)] = data
        target.drive(module, data, rng)
        done += 1
        if done % 64 == 0 and time.monotonic() > deadline:
            break
    print(json.dumps({"target": args.target, "inputs": done}))


# -- parent: build, run, report -----------------------------------------------------------


def build(source: Path, name: str, out_dir: Path) -> Path:
    include = sysconfig.get_paths()["include"]
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    so = out_dir / f"{name.rsplit('.', 1)[-1]}{suffix}"
    subprocess.run(
        [
            "gcc",
            "-fsanitize=address,undefined",
            "-fno-sanitize-recover=all",
            "-g",
            "-O1",
            "-fno-omit-frame-pointer",
            "-Wall",
            "-Wextra",
            "-shared",
            "-fPIC",
            f"-I{include}",
            str(source),
            "-o",
            str(so),
        ],
        check=True,
    )
    return so


def sanitizer_env() -> dict[str, str]:
    libasan = subprocess.run(
        ["gcc", "-print-file-name=libasan.so"], capture_output=True, text=True, check=True
    ).stdout.strip()
    return {
        **os.environ,
        "LD_PRELOAD": libasan,
        "PYTHONMALLOC": "malloc",
        "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1:allocator_may_return_null=1",
        "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1",
    }


def watch(cmd: list[str], progress: Path) -> tuple[int | None, str, str]:
    """Run a child; stop it when one input has held it for HANG_S (a hang is a finding).
    Returns its exit code (None for a hang), stdout and stderr."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, env=sanitizer_env(), stdout=out, stderr=err)
        last, since = b"", time.monotonic()
        while proc.poll() is None:
            time.sleep(0.5)
            now = progress.read_bytes()[:8]
            if now != last:
                last, since = now, time.monotonic()
            elif time.monotonic() - since > HANG_S:
                proc.kill()
                proc.wait()
                err.write(f"hang: one input ran for more than {HANG_S} s".encode())
                break
        out.seek(0)
        err.seek(0)
        code = None if proc.returncode == -9 else proc.returncode
        return code, out.read().decode(errors="replace"), err.read().decode(errors="replace")


def run_target(name: str, args: argparse.Namespace, work: Path, corpus: Path) -> dict[str, object]:
    target = TARGETS[name]
    if not (Path(args.source_root) / target.source).exists():
        return {"target": name, "inputs": 0, "findings": [], "skipped": f"no {target.source}"}
    so = build(Path(args.source_root) / target.source, target.module, work)
    progress = work / f"{name}.progress"
    progress.write_bytes(b"\0" * PROGRESS_BYTES)
    inputs, findings, start = 0, [], 0
    deadline = time.monotonic() + args.seconds
    # After a finding the run goes on from the next input, until the time is up.
    while time.monotonic() < deadline and len(findings) < 5:
        left = max(1.0, deadline - time.monotonic())
        cmd = [
            sys.executable,
            __file__,
            "--child",
            "--target",
            name,
            "--so",
            str(so),
            "--corpus",
            str(corpus),
            "--progress",
            str(progress),
            "--seed",
            str(args.seed),
            "--start",
            str(start),
            "--seconds",
            str(left),
        ]
        if args.replay is not None:
            cmd += ["--replay", str(args.replay)]
        code, stdout, stderr = watch(cmd, progress)
        if code == 0:
            inputs += json.loads(stdout.splitlines()[-1])["inputs"]
            break
        raw = progress.read_bytes()
        index, length = struct.unpack("qq", raw[:16])
        saved = work / f"{name}-{args.seed}-{index}.bin"
        saved.write_bytes(raw[16 : 16 + length])
        inputs += index - start + 1
        findings.append(
            {
                "input": f"{args.seed}:{index}",
                "exit": code,
                "saved": str(saved),
                "report": "\n".join(stderr.strip().splitlines()[-40:]),
            }
        )
        if args.replay is not None:
            break
        start = index + 1
    return {"target": name, "inputs": inputs, "findings": findings}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--target",
        action="append",
        choices=sorted(TARGETS),
        help="a module to fuzz (default: all of TARGETS); may repeat",
    )
    parser.add_argument("--seconds", type=float, default=120, help="per target")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--replay", metavar="SEED:INDEX", help="run one input again")
    parser.add_argument("--keep", action="store_true", help="keep the build directory")
    parser.add_argument(
        "--source-root",
        default=str(ROOT),
        help="take the C files from this tree (e.g. an older checkout)",
    )
    # the child's own arguments
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--so", help=argparse.SUPPRESS)
    parser.add_argument("--corpus", help=argparse.SUPPRESS)
    parser.add_argument("--progress", help=argparse.SUPPRESS)
    parser.add_argument("--start", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        args.target = args.target[0]
        args.replay = int(args.replay) if args.replay is not None else None
        child(args)
        return 0
    if args.replay is not None:
        seed, index = args.replay.split(":")
        args.seed, args.replay = int(seed), int(index)
    work = Path(tempfile.mkdtemp(prefix="fuzz-native-"))
    corpus = work / "corpus"
    corpus.write_bytes(b"".join(line + b"\0\n" for line in corpus_lines(args.seed)))
    results = [run_target(name, args, work, corpus) for name in args.target or sorted(TARGETS)]
    print(json.dumps(results, indent=2))
    for result in results:
        if "skipped" in result:
            print(f"skipped {result['target']}: {result['skipped']}", file=sys.stderr)
            continue
        found = result["findings"]
        print(
            f"fuzzed {result['target']}: {result['inputs']} inputs, "
            f"{len(found) if isinstance(found, list) else found} findings",
            file=sys.stderr,
        )
    if not args.keep and not any(r["findings"] for r in results):
        shutil.rmtree(work, ignore_errors=True)
    else:
        print(f"build, corpus and failing inputs kept in {work}", file=sys.stderr)
    return 1 if any(r["findings"] for r in results) else 0


if __name__ == "__main__":
    raise SystemExit(main())
