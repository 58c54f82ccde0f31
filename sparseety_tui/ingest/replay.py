"""``sparseety-tui demo``: replay the bundled sample logs into temporary logs, live.

The samples (``sample_logs/`` of the repo, next to the package in a checkout or editable
install, or ``$SPARSEETY_SAMPLES``) are never written to. Each sample is copied line by
line, at a steady pace, into a temporary log of its format family (one file per family, so
format detection works as on a real host); ``tail`` follows those. JSON trace lines get
their timestamps moved to "now" (keeping their spacing within a request) and, on every
pass after the first, a suffix on their request ids, so the table keeps filling.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import orjson

from sparseety_tui.formats import registry

_TS_KEYS = ("received_ts", "first_token_ts", "finished_ts")
_MAX_SAMPLE_BYTES = 64 * 1024 * 1024


class DemoError(Exception):
    """No samples to replay; the message says where we looked."""


def samples_dir() -> Path:
    env = os.environ.get("SPARSEETY_SAMPLES")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "sample_logs"


@dataclass
class Source:
    path: Path
    family: str
    lines: list[bytes]
    position: int = 0


@dataclass
class DemoPlan:
    directory: Path
    outputs: dict[str, Path]  # family -> temporary log
    sources: list[Source] = field(default_factory=list)


def find_sources(directory: Path) -> list[Source]:
    if not directory.is_dir():
        raise DemoError(
            f"sample logs not found at {directory} (the demo needs the repo's sample_logs/; "
            "run from a checkout or an editable install, or set SPARSEETY_SAMPLES)"
        )
    sources: list[Source] = []
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):
        if path.name.startswith(".") or path.suffix in (".md", ".py", ".json", ".sha256"):
            continue
        if path.stat().st_size > _MAX_SAMPLE_BYTES:
            continue
        try:
            data = path.read_bytes()
        except OSError:
            continue
        lines = data.splitlines()
        head = [line for line in lines[: registry.SNIFF_LINES] if line.strip()]
        family = registry.detect(head, path=str(path))
        if family is None or not lines:
            continue
        sources.append(Source(path, family.name, lines))
    if not sources:
        raise DemoError(f"no sample logs of a known format in {directory}")
    return sources


def plan(directory: Path | None = None, out_dir: Path | None = None) -> DemoPlan:
    sources = find_sources(directory or samples_dir())
    target = out_dir or Path(tempfile.mkdtemp(prefix="sparseety-demo-"))
    target.mkdir(parents=True, exist_ok=True)
    outputs: dict[str, Path] = {}
    for source in sources:
        if source.family not in outputs:
            suffix = ".jsonl" if source.family == "trace" else ".log"
            outputs[source.family] = target / f"demo-{source.family}{suffix}"
    for path in outputs.values():
        path.touch()
    return DemoPlan(target, outputs, sources)


def retime(line: bytes, now: float, suffix: str) -> bytes:
    """A JSON trace line with its timestamps moved to ``now`` and ids suffixed."""
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        return line
    if not isinstance(obj, dict):
        return line
    anchor = _number(obj.get("ts"))
    if anchor is None:
        for key in ("finished_ts", "first_token_ts", "received_ts"):
            anchor = _number(obj.get(key))
            if anchor is not None:
                break
    if anchor is not None:
        for key in ("ts", *_TS_KEYS):
            value = _number(obj.get(key))
            if value is not None:
                obj[key] = round(now - (anchor - value), 3)
    if suffix and isinstance(obj.get("request_id"), str):
        obj["request_id"] += suffix
    return orjson.dumps(obj)


def _number(value: object) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        from sparseety_tui.formats.timestamps import parse_timestamp

        return parse_timestamp(value)
    return None


class Replayer(threading.Thread):
    """Appends the samples' lines to the temporary logs at ``rate`` lines per second."""

    def __init__(self, demo: DemoPlan, rate: float, burst: int = 60) -> None:
        super().__init__(name="sparseety-demo", daemon=True)
        self.demo = demo
        self.rate = max(1.0, rate)
        self.burst = burst
        self.written = 0
        self._stop_event = threading.Event()

    def stop(self) -> None:
        self._stop_event.set()
        self.join(timeout=2)

    def run(self) -> None:
        with contextlib.ExitStack() as stack:
            handles = {
                family: stack.enter_context(open(path, "ab"))
                for family, path in self.demo.outputs.items()
            }
            self._loop(handles)

    def _loop(self, handles: Mapping[str, IO[bytes]]) -> None:
        sources = self.demo.sources
        passes = 0
        interval = 1.0 / self.rate
        next_at = time.monotonic()
        while not self._stop_event.is_set():
            active = [s for s in sources if s.position < len(s.lines)]
            if not active:
                passes += 1
                # Text logs are replayed once; trace files loop with fresh request ids.
                for s in sources:
                    if s.family == "trace":
                        s.position = 0
                if not any(s.family == "trace" for s in sources):
                    return
                continue
            for source in active:
                if self._stop_event.is_set():
                    return
                line = source.lines[source.position]
                source.position += 1
                if source.family == "trace":
                    line = retime(line, time.time(), f"-{passes}" if passes else "")
                handle = handles[source.family]
                handle.write(line + b"\n")
                handle.flush()
                self.written += 1
                if self.written <= self.burst:
                    continue
                next_at += interval
                delay = next_at - time.monotonic()
                if delay > 0:
                    self._stop_event.wait(delay)
                else:
                    next_at = time.monotonic()


def cleanup(demo: DemoPlan) -> None:
    shutil.rmtree(demo.directory, ignore_errors=True)
