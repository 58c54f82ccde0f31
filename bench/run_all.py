"""Every comparison against a reference in one command: the table that opens bench/RESULTS.md.

    python bench/run_all.py --quick            # small generated inputs, one run each: < 5 min
    python bench/run_all.py --data /tmp/perf   # the 1 GB files (made when missing): < 30 min

Each figure is set against its reference measured in the same run (lnav, a bare orjson
loop, the store's own bytes), as a ratio, with its goal and whether it is met, the machine
and the command that measures it alone. The section between the run_all markers, at the
top of bench/RESULTS.md, is this script's: each run rewrites it (with the machine, load,
versions, date and the exact command) and leaves the rest of the file alone; a file
without the markers gets the section under its title. A step whose tool is missing (lnav,
tmux) says "not measured" and why.

The comparisons reuse the other scripts of bench/: server_logs.py (summary vs lnav's
count), summary_throughput.py (summary vs an orjson loop, memory the store holds),
tail_read.py (first screen, whole read and RSS of a big file in a terminal, both tools),
tail_latency.py (write->screen latency and CPU, both tools); child.py has what they share.
Inputs are looked up in --data by name, and the missing ones written with
shared/tools/gen_logs.py --seed 1 into --scratch (never into --data).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))

import server_logs  # noqa: E402  (bench/ is no package: its scripts import each other)
import summary_throughput  # noqa: E402
import tail_read  # noqa: E402
from child import compile_package, peak_rss  # noqa: E402
from tail_read import TailRead  # noqa: E402

BEGIN = "<!-- run_all:begin -->"
END = "<!-- run_all:end -->"
MB = 1_000_000


@dataclass
class Line:
    """One result: a figure, its anchor (reference) from the same run, the goal, met or
    not, and the command that measures it alone."""

    what: str
    figure: str = ""
    anchor: str = ""
    ratio: float | None = None
    goal: str = ""
    met: bool | None = None  # None: not measured, or no goal
    note: str = ""
    command: str = ""

    def verdict(self) -> str:
        if self.met is None:
            return self.note if self.note.startswith("not measured") else "—"
        return "**met**" if self.met else "**not met**"


def not_measured(what: str, why: str, goal: str = "", command: str = "") -> Line:
    return Line(what, goal=goal, note=f"not measured: {why}", command=command)


def bench_command(script: str, *args: object) -> str:
    """The shell line that runs one bench/ script as run_all ran it."""
    return shlex.join(["python", f"bench/{script}", *map(str, args)])


# -- inputs -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Input:
    name: str  # file name looked up in --data, else made in --scratch
    kind: str  # gen_logs.py --kind
    size: str  # gen_logs.py --size
    label: str  # how the results call it


FULL = {
    "vllm": Input("vllm.log", "vllm", "1G", "1 GB vLLM log"),
    "sglang": Input("sglang.log", "sglang", "1G", "1 GB SGLang log"),
    "jsonl": Input("req1g.jsonl", "jsonl", "1G", "1 GB request JSONL"),
    "jsonl_small": Input("req200m.jsonl", "jsonl", "200M", "200 MB request JSONL"),
}
QUICK = {
    "vllm": Input("vllm50m.log", "vllm", "50M", "50 MB vLLM log"),
    "sglang": Input("sglang50m.log", "sglang", "50M", "50 MB SGLang log"),
    "jsonl": Input("req50m.jsonl", "jsonl", "50M", "50 MB request JSONL"),
    "jsonl_small": Input("req10m.jsonl", "jsonl", "10M", "10 MB request JSONL"),
}


def ensure_input(item: Input, data: Path, scratch: Path) -> Path:
    """The file from --data, or from --scratch, written there first if missing."""
    for folder in (data, scratch):
        if (folder / item.name).is_file():
            return folder / item.name
    scratch.mkdir(parents=True, exist_ok=True)
    out = scratch / item.name
    if item.kind == "jsonl":
        summary_throughput.generate(str(out), item.size)
    else:  # server_logs picks the kind from the name, as this table names them
        assert item.kind in out.name
        server_logs.generate([str(out)], item.size)
    return out


# -- context shared by the steps ------------------------------------------------------------


@dataclass
class Run:
    quick: bool
    runs: int
    files: dict[str, Path]
    labels: dict[str, str]
    lnav: str | None
    tmux: str | None
    held: dict[str, dict[str, float]] = field(default_factory=dict)
    raw: dict[str, object] = field(default_factory=dict)

    def held_per_request(self, key: str) -> dict[str, float]:
        """The store's bytes per request for an input (summary_throughput.held), once."""
        if key not in self.held:
            self.held[key] = summary_throughput.held(str(self.files[key]), 0)
        return self.held[key]


def ratio(a: float, b: float) -> float | None:
    return round(a / b, 2) if b > 0 else None


# -- steps ----------------------------------------------------------------------------------


def step_server_logs(run: Run) -> list[Line]:
    goal = "≤ 2× lnav's count"
    keys = ("vllm", "sglang")
    command = bench_command("server_logs.py", *(run.files[k] for k in keys), "--runs", run.runs)
    if run.lnav is None:
        return [
            not_measured(f"`summary --json`, {run.labels[k]}", "lnav not found", goal, command)
            for k in keys
        ]
    results = server_logs.compare([str(run.files[k]) for k in keys], run.runs, run.lnav)
    run.raw["server_logs"] = results
    lines = []
    for key, result in zip(keys, results):
        r = float(result["ratio_summary_over_lnav_median_of_pairs"])  # type: ignore[arg-type]
        lines.append(
            Line(
                f"`summary --json`, {run.labels[key]}",
                f"{result['summary_s_median']} s (CPU {result['summary_cpu_s_median']} s)",
                f"lnav `SELECT count(*)` {result['lnav_s_median']} s",
                round(r, 2),
                goal,
                r <= 2.0,
                command=command,
            )
        )
    return lines


def step_jsonl_throughput(run: Run) -> list[Line]:
    result = summary_throughput.compare(str(run.files["jsonl"]), run.runs)
    run.raw["summary_throughput"] = result
    run.held["jsonl"] = {"bytes_per_request": float(result["bytes_per_request"])}  # type: ignore[arg-type]
    r = float(result["ratio_median_of_pairs"])  # type: ignore[arg-type]
    return [
        Line(
            f"`summary --json`, {run.labels['jsonl']}",
            f"{result['summary_s_median']} s",
            f"bare `orjson.loads` loop {result['orjson_loop_s_median']} s",
            round(r, 2),
            "≤ 1.3× the loop",
            r <= 1.3,
            command=bench_command("summary_throughput.py", run.files["jsonl"], "--runs", run.runs),
        )
    ]


@dataclass
class SummaryPeak:
    per_request: float  # bytes of peak RSS per request above start-up
    peak: float  # bytes
    start_up: float  # bytes: the same command on the file's first 5 lines
    requests: int
    by: str  # which code measured it


def summary_peak(path: Path) -> SummaryPeak:
    """Peak RSS of ``summary --json`` per request above start-up. bench/peak_memory.py
    measures it when it is in the tree; else run_all does, the same way:
    ``/usr/bin/time -f %M`` of the command on the file and on its first 5 lines."""
    cmd = [sys.executable, "-m", "sparseety_tui", "summary", "--json"]
    with tempfile.TemporaryDirectory() as tmp:
        tiny = Path(tmp) / ("tiny" + path.suffix)
        with path.open("rb") as f:
            tiny.write_bytes(b"".join(line for _, line in zip(range(5), f)))
        if (BENCH / "peak_memory.py").exists():
            import peak_memory  # imported only when present (see above)

            r = peak_memory.summary_peak(str(path), dict(os.environ), str(tiny))
            return SummaryPeak(
                float(r["peak_per_request_bytes"]),
                r["peak_mib"] * 2**20,
                r["startup_peak_mib"] * 2**20,
                int(r["requests"]),
                "bench/peak_memory.py",
            )
        start_up, _ = peak_rss([*cmd, str(tiny)])
    peak, out = peak_rss([*cmd, str(path)])
    requests = json.loads(out)["requests"]["count"]
    return SummaryPeak(
        (peak - start_up) / requests, peak, start_up, requests, "run_all (no bench/peak_memory.py)"
    )


def step_peak_memory(run: Run) -> list[Line]:
    lines = []
    for key in ("jsonl_small", "jsonl"):
        m = summary_peak(run.files[key])
        store = run.held_per_request(key)["bytes_per_request"]
        lines.append(
            Line(
                f"peak RSS of `summary` per request above start-up, {run.labels[key]}",
                f"{m.per_request:.0f} B ({m.peak / 2**20:.0f} MiB peak, "
                f"{m.start_up / 2**20:.0f} MiB start-up, {m.requests:,} requests)",
                f"store held {store:.0f} B a request",
                ratio(m.per_request, store),
                "≤ 150 B per request",
                m.per_request <= 150,
                note=f"measured by {m.by}",
                command=bench_command("peak_memory.py", "--summary", run.files[key]),
            )
        )
    return lines


def tail_lines(
    label: str, ours: TailRead, theirs: TailRead | None, timeout: float, command: str = ""
) -> list[Line]:
    """First useful screen and whole read of one file, against lnav's."""
    lines = []
    screen = f"first useful screen of `tail`, {label}"
    if ours.first_screen_s is None:
        lines.append(not_measured(screen, f"none within {timeout:.0f} s", "≤ 1 s", command))
    else:
        lnav_first = theirs.first_screen_s if theirs else None
        lines.append(
            Line(
                screen,
                f"{ours.first_screen_s:.2f} s",
                f"lnav {lnav_first:.2f} s" if lnav_first else "lnav: not measured",
                ratio(ours.first_screen_s, lnav_first) if lnav_first else None,
                "≤ 1 s",
                ours.first_screen_s <= 1.0,
                command=command,
            )
        )
    read = f"`tail` reads all of the {label}"
    lnav_read = theirs.loaded_s if theirs else None
    if ours.loaded_s is None:
        lines.append(not_measured(read, f"still busy after {timeout:.0f} s", "≤ 2× lnav", command))
    else:
        r = ratio(ours.loaded_s, lnav_read) if lnav_read else None
        lines.append(
            Line(
                read,
                f"{ours.loaded_s:.1f} s",
                f"lnav indexes it in {lnav_read:.1f} s" if lnav_read else "lnav: not measured",
                r,
                "≤ 2× lnav",
                None if r is None else r <= 2.0,
                command=command,
            )
        )
    return lines


def step_tail(run: Run) -> list[Line]:
    keys = ("jsonl", "vllm", "sglang")
    if run.tmux is None:
        return [not_measured(f"`tail`, {run.labels[k]}", "tmux not found") for k in keys]
    timeout = 180 if run.quick else 900
    env = {"PYTHONPATH": os.environ["PYTHONPATH"]}
    lines = []
    for key in keys:
        path, label = run.files[key], run.labels[key]
        ours = tail_read.measure(path, "sparseety", timeout, env)
        theirs = tail_read.measure(path, "lnav", timeout, env) if run.lnav else None
        run.raw[f"tail_{key}"] = {
            "sparseety": asdict(ours),
            "lnav": asdict(theirs) if theirs else None,
        }
        command = bench_command("tail_read.py", path, "--timeout", timeout)
        lines += tail_lines(label, ours, theirs, timeout, command)
        if key == "jsonl":
            lines.append(
                Line(
                    f"`tail` RSS once it has read the {label}",
                    f"{ours.rss / MB:.0f} MB (peak {ours.peak / MB:.0f} MB)",
                    f"lnav {theirs.rss / MB:.0f} MB" if theirs else "lnav: not measured",
                    ratio(ours.rss, theirs.rss) if theirs else None,
                    "≤ 500 MB",
                    ours.rss <= 500 * MB,
                    command=command,
                )
            )
    return lines


def latency_args(quick: bool) -> list[str]:
    # Quick: fewer markers and a shorter idle phase; the settle stays long enough for the
    # tool to catch up (3 s measured the end of its catching up as "idle").
    return ["--markers", "10", "--idle-s", "5", "--settle-s", "6"] if quick else []


def tail_latency(tool: str, quick: bool) -> dict[str, float]:
    extra = latency_args(quick)
    out = subprocess.run(
        [sys.executable, str(BENCH / "tail_latency.py"), "--tool", tool, *extra],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    result: dict[str, float] = json.loads(out.strip().splitlines()[-1])
    return result


def step_latency(run: Run) -> list[Line]:
    names = (
        "write→screen p50 at 20k lines/s",
        "write→screen p99 at 20k lines/s",
        "CPU while following 20k lines/s",
        "idle CPU of `tail`",
    )
    command = bench_command("tail_latency.py", *latency_args(run.quick))
    if run.tmux is None:
        return [not_measured(n, "tmux not found", command=command) for n in names]
    pairs = 1 if run.quick else 2
    ours, theirs = [], []
    for _ in range(pairs):  # alternated, so drift in machine speed hits both
        ours.append(tail_latency("sparseety", run.quick))
        if run.lnav:
            theirs.append(tail_latency("lnav", run.quick))
    run.raw["tail_latency"] = {"sparseety": ours, "lnav": theirs}

    def med(rows: list[dict[str, float]], key: str) -> float | None:
        values = [r[key] for r in rows if r.get(key) is not None]
        return statistics.median(values) if values else None

    o = {k: med(ours, k) for k in ("p50_ms", "p99_ms", "cpu_streaming_pct", "cpu_idle_pct")}
    t = {k: med(theirs, k) for k in o}
    rows = []

    def anchor(key: str, unit: str) -> str:
        return f"lnav {t[key]:g} {unit}" if t[key] is not None else "lnav: not measured"

    p50, p99, cpu, idle = (o[k] for k in o)
    if p50 is None:
        rows.append(not_measured(names[0], "no marker reached the screen", command=command))
    else:
        r = ratio(p50, t["p50_ms"]) if t["p50_ms"] else None
        rows.append(
            Line(
                names[0],
                f"{p50:g} ms",
                anchor("p50_ms", "ms"),
                r,
                "≤ lnav's p50",
                None if t["p50_ms"] is None else p50 <= t["p50_ms"],
                command=command,
            )
        )
    if p99 is not None:
        rows.append(
            Line(
                names[1],
                f"{p99:g} ms",
                anchor("p99_ms", "ms"),
                ratio(p99, t["p99_ms"]) if t["p99_ms"] else None,
                "≤ 150 ms",
                p99 <= 150,
                command=command,
            )
        )
    if cpu is not None:
        r = ratio(cpu, t["cpu_streaming_pct"]) if t["cpu_streaming_pct"] else None
        rows.append(
            Line(
                names[2],
                f"{cpu:g} % of a core",
                anchor("cpu_streaming_pct", "%"),
                r,
                "≤ 1.5× lnav's",
                None if r is None else r <= 1.5,
                command=command,
            )
        )
    if idle is not None:
        rows.append(
            Line(
                names[3],
                f"{idle:g} % of a core",
                anchor("cpu_idle_pct", "%"),
                ratio(idle, t["cpu_idle_pct"]) if t["cpu_idle_pct"] else None,
                "≤ 0.5 %",
                idle <= 0.5,
                command=command,
            )
        )
    return rows


STEPS: list[tuple[str, Callable[[Run], list[Line]]]] = [
    ("server logs: summary vs lnav", step_server_logs),
    ("request JSONL: summary vs orjson", step_jsonl_throughput),
    ("peak memory of summary", step_peak_memory),
    ("tail: first screen, full read, RSS", step_tail),
    ("tail: latency and CPU", step_latency),
]


# -- machine and report ---------------------------------------------------------------------


def output_of(cmd: list[str]) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        return ""


def machine() -> dict[str, str]:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in output_of(["lscpu"]).splitlines()
            if line.startswith("Model name")
        ),
        platform.processor(),
    )
    mem = next(
        (
            int(line.split()[1])
            for line in Path("/proc/meminfo").read_text().splitlines()
            if line.startswith("MemTotal")
        ),
        0,
    )
    try:
        from importlib.metadata import version

        textual = version("textual")
    except Exception:  # a report line, whatever went wrong
        textual = "not installed"
    commit = output_of(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"])
    dirty = output_of(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"])
    return {
        "cpu": f"{cpu}, {output_of(['nproc'])} cores (nproc)",
        "memory": f"{mem / 2**20:.1f} GiB",
        "os": platform.platform(),
        "python": platform.python_version(),
        "lnav": output_of(["lnav", "-V"]) or "not found",
        "tmux": output_of(["tmux", "-V"]) or "not found",
        "textual": textual,
        "gcc": (output_of(["gcc", "--version"]).splitlines() or ["not found"])[0],
        "commit": commit + (" (with uncommitted changes)" if dirty else ""),
    }


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def machine_label(info: dict[str, str]) -> str:
    """The machine in a few words, for each row of the table."""
    return f"{info['cpu'].replace(' (nproc)', '')}, {info['memory']}"


def table_row(line: Line, machine: str) -> str:
    """One row of the table of today's numbers."""
    r = "—" if line.ratio is None else f"{line.ratio:g}×"
    verdict = line.verdict()
    goal = f"{line.goal}: {verdict}" if line.goal and verdict != "—" else line.goal or verdict
    command = f"`{line.command}`" if line.command else "—"
    return (
        f"| {line.what} | {line.figure or '—'} | {line.anchor or '—'} | {r} | {goal} | "
        f"{machine} | {command} |"
    )


def section(
    info: dict[str, str],
    lines: list[Line],
    command: str,
    started: str,
    minutes: float,
    load_start: str,
    load_end: str,
    quick: bool,
    files: dict[str, Path],
) -> str:
    """The section this script owns in RESULTS.md (BEGIN ... END): one table of the run's
    figures against their references, then what it ran on and how each is measured."""
    mode = "quick (small inputs, one run each)" if quick else "full (1 GB inputs)"
    machine = machine_label(info)
    out = [
        BEGIN,
        "## Today's numbers (`bench/run_all.py`)",
        "",
        "Written by `bench/run_all.py`, which rewrites this section on each run and leaves the",
        "rest of the file alone. Each ratio is our figure over its reference (lnav, a bare",
        "`orjson.loads` loop, the store's own bytes), both measured in this run on one machine;",
        "each command measures its row alone.",
        "",
        "| figure | ours | reference (same run) | ratio | goal | machine | command |",
        "|---|---|---|---|---|---|---|",
        *(table_row(line, machine) for line in lines),
        "",
        f"Run: `{command}`. Mode: {mode}. Date: {started} UTC, {minutes:.1f} min. "
        f"Commit {info['commit']}.",
        f"Machine: {info['cpu']}, {info['memory']}, {info['os']}. Load average (1/5/15 min) "
        f"at start {load_start}, at end {load_end}.",
        f"Versions: Python {info['python']}, {info['lnav']}, Textual {info['textual']}, "
        f"{info['tmux']}, {info['gcc']}.",
        "Inputs: " + ", ".join(f"`{p}`" for p in files.values()) + ".",
        *(
            [
                "",
                "Quick mode proves the harness, not the goals: on inputs this small start-up",
                "(Python, imports, Textual) weighs far more than at 1 GB, where the goals are set.",
            ]
            if quick
            else []
        ),
    ]
    notes = [
        f"- {line.what}: {line.note}"
        for line in lines
        if line.note and not line.note.startswith("not measured")
    ]
    if notes:
        out += ["", *notes]
    out += [
        "",
        "How each is measured: `summary` vs lnav and vs the orjson loop alternate A B A B",
        "(bench/server_logs.py, bench/summary_throughput.py; ratio = median of per-pair",
        "ratios); peak RSS is `/usr/bin/time -f %M` of `summary --json` minus the same on the",
        "file's first 5 lines, over the requests; \"store held\" is the store's RSS growth",
        "(summary_throughput.py). `tail` runs in a 160×48 tmux pane (bench/tail_read.py, lnav",
        "with `--tool lnav`): first useful screen = its status bar shows the tail window's",
        "totals (lnav: three of the file's last lines on screen); read all = until its CPU",
        "falls under 5 % for 2 s (both tools), RSS summed over its processes then. Latency and",
        "CPU: bench/tail_latency.py, the two tools alternated.",
        END,
    ]
    return "\n".join(out) + "\n"


def place_section(old: str, text: str) -> str:
    """``old`` with ``text`` (BEGIN ... END) in place of its run_all section, or, without
    one, right under its title (the first line) so that the file opens with it; the rest
    of the file is kept byte for byte."""
    begin, end = old.find(BEGIN), old.find(END)
    if begin >= 0 and end > begin:
        return old[:begin] + text.rstrip("\n") + old[end + len(END) :]
    if not old.startswith("# "):
        return text + ("\n" + old if old else "")
    title, _, rest = old.partition("\n")
    return f"{title}\n\n{text}" + ("\n" + rest.lstrip("\n") if rest.strip() else "")


def write_section(results: Path, text: str) -> None:
    """Write ``text`` into RESULTS.md as ``place_section`` places it."""
    old = results.read_text() if results.exists() else ""
    results.write_text(place_section(old, text))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small inputs, one run: < 5 min")
    parser.add_argument(
        "--data",
        type=Path,
        default=Path("/tmp/perf"),
        help="where to look for the inputs first (read only)",
    )
    parser.add_argument(
        "--scratch",
        type=Path,
        default=Path(tempfile.gettempdir()) / "sparseety-bench-data",
        help="where missing inputs are generated (and kept for next time)",
    )
    parser.add_argument("--runs", type=int, help="paired runs (default: 1 quick, 3 full)")
    parser.add_argument("--results", type=Path, default=BENCH / "RESULTS.md")
    parser.add_argument(
        "--only",
        action="append",
        choices=[f.__name__[5:] for _, f in STEPS],
        help="run only this step (may repeat); the section then holds only its lines",
    )
    args = parser.parse_args()

    command = shlex.join(["python", "bench/run_all.py", *sys.argv[1:]])
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")
    t0 = time.monotonic()
    load_start = load_average()
    # The children run this tree's code, installed or not.
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    table = QUICK if args.quick else FULL
    files = {key: ensure_input(item, args.data, args.scratch) for key, item in table.items()}
    compile_package()  # (the children start as an installed copy does)
    run = Run(
        quick=args.quick,
        runs=args.runs or (1 if args.quick else 3),
        files=files,
        labels={key: item.label for key, item in table.items()},
        lnav=shutil.which("lnav"),
        tmux=shutil.which("tmux"),
    )
    lines: list[Line] = []
    for title, step in STEPS:
        if args.only and step.__name__[5:] not in args.only:
            continue
        print(f"== {title}", flush=True)
        try:
            got = step(run)
        except (Exception, SystemExit) as exc:  # a failed step (child.timed exits) is a line
            got = [not_measured(title, f"{type(exc).__name__}: {exc}")]
        for line in got:
            print(
                f"   {line.what}: {line.figure} vs {line.anchor} -> "
                f"{line.ratio}× ({line.goal}: {line.verdict()})",
                flush=True,
            )
        lines += got
    minutes = (time.monotonic() - t0) / 60
    text = section(
        machine(), lines, command, started, minutes, load_start, load_average(), args.quick, files
    )
    write_section(args.results, text)
    args.scratch.mkdir(parents=True, exist_ok=True)
    raw = args.scratch / "run_all.json"  # every figure, for a closer look (not committed)
    with contextlib.suppress(OSError):
        raw.write_text(json.dumps(run.raw, indent=2, default=str) + "\n")
    print(f"wrote {args.results} (raw figures: {raw}) in {minutes:.1f} min")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
