"""Batch ingestion on every core: split a big file into line-aligned byte ranges.

CPython parses one line at a time on one core (perf-baseline.md: an orjson loop is ~1.5 us
a line before any work is done). For ``summary`` over a multi-GB request log, each worker
process runs the very same Extractor over its range, and the parent merges the results in
range order, so the numbers are the ones a single process would produce:

- line counts by kind add up; line numbers are shifted by the lines of earlier ranges;
- rows are appended in order; a request id seen in two ranges is merged field by field,
  later known values winning, exactly as one Extractor merges two lines of one request.

Only formats whose parsers keep no state across lines are split (JSONL traces, key=value
lines). Server logs carry tracebacks across lines, so a split could cut one in two; they
are read by one process.
"""

from __future__ import annotations

import math
import multiprocessing
import os
from array import array
from dataclasses import dataclass
from typing import Any

from sparseety_tui.batch import Options, ingest_file, release_free_memory
from sparseety_tui.core.extractor import (
    BULK_BLOCK_LINES,
    EngineSeries,
    Extractor,
    FileState,
    HeatCounts,
)
from sparseety_tui.core.idindex import IdIndex
from sparseety_tui.core.store import (
    BYTE_COLUMNS,
    FLOAT32_COLUMNS,
    FLOAT64_COLUMNS,
    INT_COLUMNS,
    UNKNOWN,
    RowExtras,
)
from sparseety_tui.core.tokens import TokenCounter
from sparseety_tui.formats import registry
from sparseety_tui.sources.lines import find_range_starts, iter_line_blocks, iter_lines

#: Files smaller than this are read by one process (forking costs more than it saves).
PARALLEL_MIN_BYTES = 64 << 20
#: Format families whose parsers are stateless across lines, so a file can be split.
SPLITTABLE = frozenset({"trace", "kv"})


@dataclass
class RangeResult:
    lines_total: int
    by_kind: dict[str, int]
    diagnostics: list[Any]
    ids: IdIndex
    columns: dict[str, bytes]
    offsets: bytes
    lengths: bytes
    models: list[str]
    extras: dict[int, RowExtras]
    engine: EngineSeries
    expert_load: HeatCounts
    dropped: HeatCounts
    head_skips: HeatCounts
    errors: list[Any]
    error_count: int
    meta: dict[str, Any]


def _run_range(args: tuple[str, str, str | None, int, int | None]) -> RangeResult:
    path, family, tokenizer, start, end = args
    extractor = Extractor(tokens=TokenCounter(tokenizer), forced_format=family)
    file = extractor.add_file(path)
    extractor.feed_blocks(file, iter_line_blocks(path, start, end, BULK_BLOCK_LINES))
    extractor.finish_file(file)
    state = extractor.files[file]
    store = extractor.store
    return RangeResult(
        lines_total=state.lines_total,
        by_kind=state.by_kind,
        diagnostics=list(state.diagnostics),
        ids=store.ids,
        columns={name: col.tobytes() for name, col in store.columns.items()},
        offsets=store.offset.tobytes(),
        lengths=store.length.tobytes(),
        models=store.models,
        extras=store.extras,
        engine=extractor.engine,
        expert_load=extractor.expert_load,
        dropped=extractor.dropped,
        head_skips=extractor.head_skips,
        errors=list(extractor.errors),
        error_count=extractor.error_count,
        meta=state.meta,
    )


def _detect_family(path: str, forced: str | None) -> str | None:
    if forced is not None:
        return forced
    head = []
    for line in iter_lines(path):
        if line.data.strip():
            head.append(line.data[:4096])
        if len(head) >= registry.SNIFF_LINES:
            break
    family = registry.detect(head, path=path)
    return family.name if family is not None else None


def ingest_all(extractor: Extractor, options: Options, paths: list[str], jobs: int = 0) -> None:
    workers = jobs or os.cpu_count() or 1
    for path in paths:
        size = os.path.getsize(path)
        family = _detect_family(path, options.format) if workers > 1 else None
        if workers > 1 and size >= PARALLEL_MIN_BYTES and family in SPLITTABLE:
            _ingest_split(extractor, options, path, family, workers)
        else:
            ingest_file(extractor, path)


def _ingest_split(
    extractor: Extractor, options: Options, path: str, family: str, workers: int
) -> None:
    starts = find_range_starts(path, workers)
    ends: list[int | None] = [*starts[1:], None]
    tasks = [(path, family, options.tokenizer, s, e) for s, e in zip(starts, ends)]
    context = multiprocessing.get_context("fork")
    with context.Pool(len(tasks)) as pool:
        results = pool.map(_run_range, tasks, chunksize=1)
    file = extractor.add_file(path)
    state = extractor.files[file]
    state.family = registry.family_by_name(family)
    state.parser = state.family.new_parser()
    results.reverse()
    while results:  # pop each range as it is merged, so its copy is freed at once
        _merge_range(extractor, file, state, results.pop())
    release_free_memory()
    extractor.version += 1


def _merge_range(extractor: Extractor, file: int, state: FileState, result: RangeResult) -> None:
    import numpy as np

    line_shift = state.lines_total
    state.lines_total += result.lines_total
    for kind, count in result.by_kind.items():
        state.by_kind[kind] = state.by_kind.get(kind, 0) + count
    for diagnostic in result.diagnostics:
        diagnostic.line_no += line_shift
        state.diagnostics.append(diagnostic)
    state.meta.update(result.meta)

    store = extractor.store
    base = len(store)
    model_map = np.array([store.model_code(name) for name in result.models], dtype=np.uint16)
    incoming: dict[str, Any] = {}
    for name, raw in result.columns.items():
        typecode = store.columns[name].typecode
        incoming[name] = np.frombuffer(raw, dtype=np.dtype(typecode)).copy()
    incoming["model"] = model_map[incoming["model"]] if len(model_map) else incoming["model"]
    incoming["file"][:] = file
    incoming["line_no"] += line_shift

    if not store.ids.shares_ids_with(result.ids):
        for name, values in incoming.items():
            store.columns[name].frombytes(values.tobytes())
        store.offset.frombytes(result.offsets)
        store.length.frombytes(result.lengths)
        store.ids.extend_from(result.ids)
        for row, extras in result.extras.items():
            store.extras[base + row] = _shift_lines(extras, file)
    else:
        offsets = array("q")
        offsets.frombytes(result.offsets)
        lengths = array("I")
        lengths.frombytes(result.lengths)
        for i, request_id in enumerate(result.ids):
            existing = store.index.get(request_id)
            if existing is None:
                row = store.new_row(request_id, file, offsets[i], lengths[i], 0)
                _overwrite(store, row, incoming, i, only_known=False)
            else:
                row = existing
                store.add_line(row, file, offsets[i], lengths[i])
                _overwrite(store, row, incoming, i, only_known=True)
            more = result.extras.get(i)
            if more is not None:
                _add_extras(store.extras_for(row), _shift_lines(more, file))

    _merge_heat(extractor.expert_load, result.expert_load)
    _merge_heat(extractor.dropped, result.dropped)
    _merge_heat(extractor.head_skips, result.head_skips)
    _merge_engine(extractor.engine, result.engine)
    extractor.errors.extend(result.errors)
    extractor.error_count += result.error_count


def _overwrite(store: Any, row: int, incoming: dict[str, Any], i: int, only_known: bool) -> None:
    for name, values in incoming.items():
        value = values[i].item()
        if only_known:
            if name in INT_COLUMNS and value == UNKNOWN:
                continue
            if (name in FLOAT32_COLUMNS or name in FLOAT64_COLUMNS) and math.isnan(value):
                continue
            if name in BYTE_COLUMNS and value == 0:
                continue
            if name in ("model", "line_no") and value == 0:
                continue
            if name == "line_no":
                continue  # the first line of the request stays where it was
        store.columns[name][row] = value


def _shift_lines(extras: RowExtras, file: int) -> RowExtras:
    extras.more_lines = [(file, offset, length) for _f, offset, length in extras.more_lines]
    return extras


def _add_extras(target: RowExtras, extra: RowExtras) -> None:
    for name in (
        "routed_tokens", "routed_slots", "routing_rows", "dropped_slots", "kv_tokens",
        "kv_visible", "kv_kept", "evicted_positions", "masked_positions", "head_rows",
        "head_slots", "skipped_head_slots",
    ):
        setattr(target, name, getattr(target, name) + getattr(extra, name))
    target.moe_layers = extra.moe_layers or target.moe_layers
    target.more_lines.extend(extra.more_lines)


def _merge_heat(target: HeatCounts, source: HeatCounts) -> None:
    for layer, row in source.counts.items():
        for index, count in row.items():
            target.add(layer, index, count)


def _merge_engine(target: EngineSeries, source: EngineSeries) -> None:
    # Splittable formats (SPLITTABLE) carry no engine stats lines; replaying the recent
    # points is exact for them and keeps this honest if one ever does.
    for point in source.points:
        target.add(point)
