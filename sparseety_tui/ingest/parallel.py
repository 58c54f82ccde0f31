"""Batch ingestion on every core: split a big file into line-aligned byte ranges.

CPython parses one line at a time on one core (perf-baseline.md: an orjson loop is ~1.5 us
a line before any work is done). For ``summary`` over a multi-GB request log, each worker
process runs the very same Extractor over its range, and the parent merges the results in
range order, so the numbers are the ones a single process would produce:

- line counts by kind add up; line numbers are shifted by the lines of earlier ranges;
- rows are appended in order; a request id seen in two ranges is merged field by field,
  later known values winning, exactly as one Extractor merges two lines of one request.

Formats whose parsers keep no state across lines (JSONL traces, key=value lines) are split
at any line start. Server logs (vLLM, SGLang) carry state across lines; they are split too,
but only where a new log record starts, and the merge proves, from notes each range's
worker keeps, that every range was parsed as one process reading from the top would have
parsed it (``ingest._range_check``):

- a range starts at a line with the server's own dated prefix, after another such line
  (SGLang: that resets its date context for time-only prefixes; vLLM: its warning state);
- no traceback is open where a range ends, none stayed idle long enough for the stale
  limit to apply (closing then depends on absolute line counts), and no ERROR-line context
  a traceback picks up crosses a boundary;
- vLLM year inference: the first year-setting stamp of a range is replayed on a parser
  holding the previous range's year state and must give the same year;
- vLLM engine-side ids (``<id>-<8hex>``) that a range could not map back because their
  ``Received`` line lies in an earlier range are mapped in the merge, against the exact
  window of received ids that one process would have held;
- a request with lines in two ranges is merged by id; that equals line-by-line merging
  unless a line fills a derived field (start from latency, TTFT, state from a
  completion) or an error names it in a way that depended on the other range: then the
  check fails;
- engine stats: the per-minute sums of the minute that straddles a boundary and the
  whole-file float sums are replayed value by value in line order, so floating-point
  sums are bit-identical; integer sums simply add;
- requests ended by idle stats lines (``core.extraction``): a range's own closings stand
  only if no engine that only earlier ranges had seen was busy then; requests still open
  at a boundary are closed in the merge at the later range's first idle moment that one
  reader would have seen.

If any check fails the file is read again by one process (correct, just slower).
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from sparseety_tui.core.extraction import Extractor
from sparseety_tui.core.store import STATE_CODE, RecordingEngineSeries
from sparseety_tui.core.tokens import STARTUP_KEYS, base_tokenizer, read_startup_meta
from sparseety_tui.events import ErrorPayload, RequestPayload
from sparseety_tui.formats import (
    SNIFF_LINES,
    TRACE_RECORD_SCANNER,
    RangeAware,
    detect,
    family_by_name,
    vllm,
    wrapper_name,
)
from sparseety_tui.ingest._range_check import (
    RangeNotes,
    RangeResult,
    Refusal,
)
from sparseety_tui.ingest._range_check import check_server_ranges as _check_server_ranges
from sparseety_tui.ingest._range_check import range_aware as _range_aware
from sparseety_tui.ingest.batch import Options, ingest_file, reading, release_free_memory
from sparseety_tui.sources import (
    DEFAULT_MAX_LINE_BYTES,
    READ_BUFFER_BYTES,
    find_range_starts,
    iter_chunks,
    iter_lines,
    mtime_or_none,
    open_regular,
)

if TYPE_CHECKING:
    import multiprocessing.pool

#: Files smaller than this are read by one process (forking costs more than it saves).
PARALLEL_MIN_BYTES = 64 << 20
#: Bytes of a trace's head the native scanner tries before choosing to split the file.
SCANNER_PROBE_BYTES = 1 << 20
#: How far past a split point to look for a safe range start before giving that range up.
SAFE_START_SCAN_BYTES = 4 << 20
#: Server-log ranges per worker process (see ``_ingest_server_split``).
RANGES_PER_WORKER = 2
#: Payload keys that make the Extractor fill a derived field from what the row already
#: holds (start = finish - latency, TTFT, "finished" from a completion, sparse detail).
_DERIVING_KEYS = ("completion", "completion_tokens", "latency_s", "first_token_ts", "sparse")


class _EdgeObserver:
    """Notes, while one range of a server log is read, the requests whose merge by id
    might not equal line-by-line merging, and errors naming a request it has not seen
    (a ``core.extraction.EventObserver``)."""

    def __init__(self) -> None:
        self.deriving_ids: set[str] = set()
        self.unresolved_errors: list[str] = []

    def request(self, payload: RequestPayload) -> None:
        for key in _DERIVING_KEYS:
            if key in payload:
                self.deriving_ids.add(payload["request_id"])
                break

    def error(self, payload: ErrorPayload, row: int | None) -> None:
        rid = payload.get("request_id")
        if rid is not None and row is None:
            self.unresolved_errors.append(rid)


def _run_server_range(
    args: tuple[str, str, str | None, int, int | None, bool, tuple[int | None, int] | None],
) -> RangeResult:
    path, family, tokenizer, start, end, record_engine, year_seed = args
    edges = _EdgeObserver()
    extractor = Extractor(
        tokens=base_tokenizer(tokenizer),
        forced_format=family,
        engine=RecordingEngineSeries(record_engine),
        observer=edges,
        record_lifecycle=True,
    )
    file = extractor.add_file(path)
    parser = _range_aware(extractor.files[file].parser, family)
    notes = RangeNotes()
    notes.boundary = parser.begin_range(year_seed)
    notes.year_seeded = notes.boundary is not None and year_seed is not None
    extractor.feed_chunks(file, iter_chunks(path, start, end))
    tracker = parser.tracebacks
    notes.tb_open_at_end = tracker.active
    extractor.finish_file(file)
    notes.stale_risk = tracker.stale_risk
    notes.context_first_pops = tracker.context_first_pops
    notes.context_touched = tracker.context_touched
    notes.context_end = tracker.context_items()
    notes.context_cleared = tracker.context_cleared
    notes.deriving_ids = edges.deriving_ids
    notes.unresolved_errors = edges.unresolved_errors
    year_end = parser.year_state()
    if year_end is not None:
        notes.year_end = year_end
    recent = parser.recent_ids()
    if recent is not None:
        notes.recent_end, notes.remembered = recent
    return _range_result(extractor, file, notes)


def _run_range(args: tuple[str, str, str | None, int, int | None]) -> RangeResult:
    path, family, tokenizer, start, end = args
    extractor = Extractor(tokens=base_tokenizer(tokenizer), forced_format=family)
    file = extractor.add_file(path)
    extractor.feed_chunks(file, iter_chunks(path, start, end))
    extractor.finish_file(file)
    return _range_result(extractor, file)


def _range_result(extractor: Extractor, file: int, notes: RangeNotes | None = None) -> RangeResult:
    """What a range worker sends back: its part of the file and its notes."""
    return RangeResult(extractor.export_part(file), notes)


def _detect_family(path: str, forced: str | None) -> str | None:
    if forced is not None:
        return forced
    head = []
    for line in iter_lines(path):
        if line.data.strip():
            head.append(line.data[:4096])
        if len(head) >= SNIFF_LINES:
            break
    family = detect(head, path=path)
    if family is None or wrapper_name(family) is not None:
        return None  # a wrapped file is read by one process (formats/_wrapped.py)
    return family.name


def ingest_all(extractor: Extractor, options: Options, paths: list[str], jobs: int = 0) -> None:
    workers = jobs or os.cpu_count() or 1
    for path in paths:
        with reading(path):
            _ingest_one(extractor, options, path, workers)


def _ingest_one(extractor: Extractor, options: Options, path: str, workers: int) -> None:
    size = os.path.getsize(path)
    family = _detect_family(path, options.format) if workers > 1 else None
    big = workers > 1 and size >= PARALLEL_MIN_BYTES
    if (
        not big
        or family is None
        or (family == "trace" and _scanner_takes_most(path))
        or family_by_name(family).scan_server is not None
    ):
        # A native scan of a server log's lines costs less than splitting the file
        # between processes and merging their results back (bench/RESULTS.md).
        ingest_file(extractor, path)
    elif family_by_name(family).range_start is None:
        _ingest_split(extractor, options, path, family, workers)  # stateless lines
    elif not _ingest_server_split(extractor, options, path, family, workers):
        ingest_file(extractor, path)


@contextmanager
def _fork_pool(processes: int) -> Iterator[multiprocessing.pool.Pool]:
    """A pool of forked range workers that leave Ctrl+C to the parent.

    Ctrl+C sends SIGINT to the whole foreground process group: workers that took it would
    each print a KeyboardInterrupt traceback. They are forked with SIGINT ignored (set
    around the fork, so no worker can take one before it could ignore it); the parent
    gets KeyboardInterrupt as usual, and leaving the pool terminates the workers.
    """
    import multiprocessing  # (here: a command that never splits a file does not load it)

    context = multiprocessing.get_context("fork")
    in_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if in_main else None
    try:
        pool = context.Pool(processes)
    finally:
        if in_main:
            signal.signal(signal.SIGINT, previous)
    with pool:
        yield pool


def _scanner_takes_most(path: str) -> bool:
    """Whether the native scanner takes most lines of the file's head (request records).

    Then one process is faster than a split: the scan costs well under a microsecond a
    record, less than pickling the rows back from a worker and merging them (measured in
    bench/RESULTS.md). Per-token traces still go through the per-line parser: split those.
    """
    scanner = TRACE_RECORD_SCANNER
    if scanner is None:
        return False
    f, _st = open_regular(path)
    with f:
        head = f.read(SCANNER_PROBE_BYTES)
    head = head[: head.rfind(b"\n") + 1]
    lines = head.count(b"\n")
    taken = pos = 0
    while pos < len(head):
        scan = scanner(head, pos, DEFAULT_MAX_LINE_BYTES)
        taken += scan.n
        pos = scan.next_end
    return lines > 0 and taken >= 0.9 * lines


def _ingest_split(
    extractor: Extractor, options: Options, path: str, family: str, workers: int
) -> None:
    starts = find_range_starts(path, workers)
    ends: list[int | None] = [*starts[1:], None]
    tasks = [(path, family, options.tokenizer, s, e) for s, e in zip(starts, ends)]
    with _fork_pool(len(tasks)) as pool:
        results = pool.map(_run_range, tasks, chunksize=1)
    if _heat_model_guessed(results):
        ingest_file(extractor, path)
        return
    file = extractor.add_file(path, format_name=family)
    results.reverse()
    while results:  # pop each range as it is merged, so its copy is freed at once
        extractor.merge_part(file, results.pop().part)
    release_free_memory()


def server_range_starts(path: str, family: str, n: int) -> list[int]:
    """Range starts for a server log: each split point of ``find_range_starts`` moved on
    to the first line that, like the line before it, is a record start (the family's
    ``range_start``; a range is dropped when there is none within
    ``SAFE_START_SCAN_BYTES``)."""
    range_start = family_by_name(family).range_start
    assert range_start is not None, family
    starts = [0]
    f, _st = open_regular(path, READ_BUFFER_BYTES)
    with f:
        for candidate in find_range_starts(path, n)[1:]:
            if candidate <= starts[-1]:
                continue
            f.seek(candidate)
            pos = candidate
            previous_ok = False
            while pos - candidate < SAFE_START_SCAN_BYTES:
                line = f.readline()
                if not line:
                    break
                ok = range_start(line.rstrip(b"\r\n"))
                if ok and previous_ok:
                    starts.append(pos)
                    break
                previous_ok = ok
                pos += len(line)
    return starts


def _ingest_server_split(
    extractor: Extractor, options: Options, path: str, family: str, workers: int
) -> bool:
    """Split a server log between processes; False (nothing merged) when the merge could
    not be proved equal to one process's reading, so the caller reads it whole."""
    # Two ranges per worker: ranges after the first also record their float stats for
    # the exact merge (~1 us a stats line), so equal ranges would leave the first worker
    # idle at the end; with more ranges than workers the pool evens that out.
    starts = server_range_starts(path, family, workers * RANGES_PER_WORKER)
    if len(starts) < 2:
        return False
    ends: list[int | None] = [*starts[1:], None]
    record_first = extractor.engine.count > 0
    seeds = _vllm_year_seeds(path, starts) if family == "vllm" else [None] * len(starts)
    tasks = [
        (path, family, options.tokenizer, start, end, i > 0 or record_first, seeds[i])
        for i, (start, end) in enumerate(zip(starts, ends))
    ]
    with _fork_pool(min(workers, len(tasks))) as pool:
        results = pool.map(_run_server_range, tasks, chunksize=1)
    plan = _check_server_ranges(extractor, family, results, mtime_or_none(path))
    if isinstance(plan, Refusal) or _restarted_within(path, results):
        return False
    if _heat_model_guessed(results):
        return False
    file = extractor.add_file(path, format_name=family)
    results.reverse()
    plan.reverse()
    while results:  # pop each range as it is merged, so its copy is freed at once
        result, (renames, failed) = results.pop(), plan.pop()
        extractor.merge_part(file, result.part, renames)
        for request_id in failed:
            row = extractor.store.ids.find(request_id)
            if row is not None:
                extractor.store.set_state(row, STATE_CODE["failed"])
    release_free_memory()
    return True


def _heat_model_guessed(results: list[RangeResult]) -> bool:
    """Whether a range after the first counted routing under its file's model or the
    unknown one (``Merger._model_of``): the request may name its model in an earlier
    range, or the file in its header, which one reader would have used. Then the file is
    read by one process, so the per-model heat maps are the ones it gives."""
    return any(result.part.heat_fallback for result in results[1:])


def _restarted_within(path: str, results: list[RangeResult]) -> bool:
    """Whether a range read a start-up line that the file's head does not hold (a server
    restarted within the log): the tokenizer and ``--max-log-len`` it names apply from
    there on in one reading, and only within that range in a split (core.tokens)."""
    head = read_startup_meta(path) or {}
    return any(
        result.part.meta.get(key) != head.get(key) for result in results for key in STARTUP_KEYS
    )


def _vllm_year_seeds(path: str, starts: list[int]) -> list[tuple[int | None, int] | None]:
    """A guess of the year state at each range start (None for the first range): the
    year inference run over the file's first stamp and each range's first line only.
    It is right unless a range holds a whole Dec -> Jan turn that these samples miss;
    ````check_server_ranges`` replays each range's first stamp and refuses a wrong one."""
    guesser: RangeAware = vllm.FAMILY.new_parser(reference_time=mtime_or_none(path))
    seeds: list[tuple[int | None, int] | None] = [None]
    f, _st = open_regular(path, READ_BUFFER_BYTES)
    with f:
        for _ in range(200):  # the file's first stamped line, before range 1
            line = f.readline()
            if not line or line.startswith(b"Traceback"):
                break
            data = line.rstrip(b"\r\n")
            if vllm.FAMILY.range_start(data):
                guesser.parse(data)
                break
        for start in starts[1:]:
            year = guesser.year_state()
            seeds.append(year if year is not None and year[0] is not None else None)
            f.seek(start)
            guesser.parse(f.readline().rstrip(b"\r\n"))
    return seeds
