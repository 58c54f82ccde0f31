"""A format family with a fast path is added in formats/ terms only: this test defines a
tiny family whose Python fast path gives batches (``sparseety_tui.batch``), registers it,
and holds what the Extractor makes of a log through the fast path equal to what the
per-line parser (the reference) makes of it, every line counted once. Nothing under
``core/`` knows the family; nothing under ``core/`` names any format family at all."""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from sparseety_tui.batch import RECORD_COUNT_COLUMNS, Batch, Names, NewRows, RecordFields
from sparseety_tui.core.extraction import Extractor
from sparseety_tui.core.figures import DEFAULT_SHAPE
from sparseety_tui.core.report import request_records, summary_document
from sparseety_tui.events import LineKind, ParsedLine, RequestPayload
from sparseety_tui.formats import LineParser, RecordScanner
from sparseety_tui.formats import _registry as registry
from sparseety_tui.ingest.batch import ingest_file

_REQUEST = re.compile(
    rb"TINY req (?P<id>\S+) prompt=(?P<prompt>\d+) out=(?P<out>\d+) "
    rb"lat=(?P<lat>\d+\.\d+) at=(?P<at>\d+\.\d+)"
)
REQUEST_KIND = "tiny.request"
NOTE_KIND = "tiny.note"


class TinyParser:
    """The per-line reference: a request line is a finished request record."""

    def __init__(self) -> None:
        self.pending: list[Any] = []
        self.last_reason = ""
        self.ignored: dict[str, int] = {}
        self.parsed = 0

    def parse(self, line: bytes) -> ParsedLine:
        self.parsed += 1
        match = _REQUEST.fullmatch(line)
        if match is not None:
            payload: RequestPayload = {
                "request_id": match["id"].decode(),
                "prompt_tokens": int(match["prompt"]),
                "completion_tokens": int(match["out"]),
                "latency_s": float(match["lat"]),
                "ts": float(match["at"]),
            }
            return REQUEST_KIND, ("request", payload)
        if line.startswith(b"TINY note"):
            return NOTE_KIND, None
        self.last_reason = "not a tiny line"
        return LineKind.UNPARSED, None

    def finish(self) -> None:
        pass


def _line_end(data: bytes, start: int) -> int:
    newline = data.find(b"\n", start)
    return len(data) if newline < 0 else newline + 1


def tiny_scan(data: bytes, start: int, max_line_bytes: int) -> Batch:
    """The fast path: the run of request lines from ``start`` as a batch of records."""
    ids: list[str] = []
    prompts: list[int] = []
    outs: list[int] = []
    lats: list[float] = []
    ats: list[float] = []
    offsets: list[int] = []
    lengths: list[int] = []
    pos = start
    while pos < len(data):
        end = _line_end(data, pos)
        line = data[pos:end].rstrip(b"\n")
        match = _REQUEST.fullmatch(line) if len(line) <= max_line_bytes else None
        if match is None:
            break
        ids.append(match["id"].decode())
        prompts.append(int(match["prompt"]))
        outs.append(int(match["out"]))
        lats.append(float(match["lat"]))
        ats.append(float(match["at"]))
        offsets.append(pos)
        lengths.append(end - pos)
        pos = end
    n = len(ids)
    next_end = _line_end(data, pos) if pos < len(data) else pos
    if not n:
        return Batch(0, pos, next_end)
    unknown = np.full(n, -1, dtype=np.int32)
    nan = np.full(n, math.nan)
    counts = {name: unknown for name in RECORD_COUNT_COLUMNS}
    counts["prompt_tokens"] = np.array(prompts, dtype=np.int32)
    counts["completion_tokens"] = np.array(outs, dtype=np.int32)
    none = Names((), np.zeros(n, dtype=np.uint8))
    record = RecordFields(
        counts=counts,
        times={
            "latency_s": np.array(lats),
            "ttft_s": nan,
            "ts": np.array(ats),
            "received_ts": nan,
            "finished_ts": nan,
        },
        model=none,
        kv_skip=none,
        cache_hit=np.zeros(n, dtype=np.uint8),
        reports_outcome=np.ones(n, dtype=bool),
    )
    return Batch(
        n,
        pos,
        next_end,
        offsets=np.array(offsets, dtype=np.int64),
        lengths=np.array(lengths, dtype=np.uint32),
        counts=((0, REQUEST_KIND, n),),
        rows=NewRows(ids, none, {}, record),
    )


class TinyFamily:
    """A format family (``formats._base.FormatFamily``) with a fast path or without."""

    name = "tiny"
    description = "a test's tiny request log"
    scan_server = None
    range_start = None
    decode_simple_block = None

    def __init__(self, fast: bool) -> None:
        self.fast = fast
        self.parsers: list[TinyParser] = []
        self.scanned = 0  # lines the fast path gave (taken or refused)

    def sniff(self, lines: list[bytes]) -> float:
        return 0.9 if lines and all(line.startswith(b"TINY ") for line in lines[:5]) else 0.0

    def new_parser(self, *, reference_time: float | None = None) -> LineParser:
        parser = TinyParser()
        self.parsers.append(parser)
        return parser

    @property
    def scan_requests(self) -> RecordScanner | None:
        if not self.fast:
            return None

        def scan(data: bytes, start: int, max_line_bytes: int) -> Batch:
            batch = tiny_scan(data, start, max_line_bytes)
            self.scanned += batch.n
            return batch

        return scan


def _tiny_log(path: Path) -> int:
    """A log of runs of request lines between notes and odd lines, one id repeated (its
    run must go line by line); returns its number of lines."""
    lines = []
    for i in range(1500):
        if i % 400 == 399:
            lines.append("TINY note the engine restarted")
        elif i == 777:
            lines.append("garbage that no tiny parser reads")
        rid = "r3" if i == 1001 else f"r{i}"  # r3 again: its run is refused
        lines.append(
            f"TINY req {rid} prompt={i % 97} out={i % 13 + 1} lat={i % 7}.25 at={1_700_000_000 + i}.5"
        )
    path.write_text("\n".join(lines) + "\n")
    return len(lines)


def _read(path: Path, family: TinyFamily) -> tuple[Extractor, str, list[str]]:
    with registry.registered(family):
        extractor = Extractor()
        ingest_file(extractor, str(path))
    frozen = extractor.freeze()
    summary = json.dumps(summary_document(frozen, DEFAULT_SHAPE).to_json(), sort_keys=True)
    records = [json.dumps(r, sort_keys=True) for r in request_records(frozen, DEFAULT_SHAPE)]
    return extractor, summary, records


def test_a_fast_path_in_a_test_family_equals_its_per_line_parser(tmp_path: Path) -> None:
    path = tmp_path / "service.tiny"
    n_lines = _tiny_log(path)
    fast_family, slow_family = TinyFamily(fast=True), TinyFamily(fast=False)
    fast, fast_summary, fast_records = _read(path, fast_family)
    slow, slow_summary, slow_records = _read(path, slow_family)
    assert fast.files[0].family is fast_family  # detected through the registry
    # The fast path took most lines; the per-line parser read the others: the odd lines
    # and the run of 400 request lines (lines 800 to 1199) that repeats an id, which the
    # applier refuses.
    assert fast_family.scanned >= n_lines - 4
    parsed = sum(p.parsed for p in fast_family.parsers)
    assert 400 <= parsed < n_lines // 2
    assert sum(p.parsed for p in slow_family.parsers) == n_lines
    # The same result through either path, every line counted once.
    assert fast_summary == slow_summary
    assert fast_records == slow_records
    by_kind = fast.files[0].by_kind
    assert by_kind == slow.files[0].by_kind
    assert sum(by_kind.values()) == fast.files[0].lines_total == n_lines
    assert by_kind[LineKind.UNPARSED] == 1 and by_kind[NOTE_KIND] == 3
    assert len(fast.store) == 1499  # r3 twice is one request


def test_registering_a_family_is_undone() -> None:
    family = TinyFamily(fast=True)
    with registry.registered(family):
        assert registry.family_by_name("tiny") is family
        assert registry.detect([b"TINY note x"] * 3) is family
    assert "tiny" not in registry.FAMILIES


# -- core names no format ------------------------------------------------------------

_CORE = Path(__file__).resolve().parents[2] / "sparseety_tui" / "core"
#: Format families (and their fast paths): core reads them through protocols and batches.
_FAMILY_MODULES = ("vllm", "sglang", "trace", "trace_native", "trace_block", "kvline", "generic")


def _imports(tree: ast.AST) -> list[str]:
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
            names.extend(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
    return names


def _names_a_family(module: str, is_family: Callable[[str], bool]) -> bool:
    parts = module.split(".")
    # formats' family modules are private now (``_trace``): the name without its underscore
    return module.startswith("sparseety_tui.formats.") and is_family(parts[2].lstrip("_"))


def test_core_names_no_format_family() -> None:
    modules = sorted(_CORE.rglob("*.py"))
    assert len(modules) > 30
    for module in modules:
        stem = module.stem.lstrip("_")
        assert not any(family in stem.split("_") for family in ("vllm", "sglang", "trace")), module
        imported = _imports(ast.parse(module.read_text()))
        bad = [m for m in imported if _names_a_family(m, _FAMILY_MODULES.__contains__)]
        assert not bad, (module, bad)
