"""An Extractor's state copied out: ``freeze`` (an immutable copy for readers on other
threads), and a byte range of a file read by another process (``ExtractorPart``,
exported by one Extractor and merged into another)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sparseety_tui.core.extraction._lifecycle import LifecyclePart
from sparseety_tui.core.store import (
    Diagnostic,
    EngineSeries,
    ErrorLog,
    FrozenExtractor,
    HeatByModel,
    HeatCounts,
    RecordingEngineSeries,
    StorePart,
    copy_heat_by_model,
    freeze_store,
    merge_heat_by_model,
)
from sparseety_tui.events import ErrorPayload

if TYPE_CHECKING:
    from sparseety_tui.core.extraction._extractor import Extractor


def freeze_extractor(x: Extractor) -> FrozenExtractor:
    """``Extractor.freeze``."""
    prev = x._frozen
    engine = x.engine
    by_model = copy_heat_by_model(x.expert_by_model, dict(prev.expert_by_model) if prev else None)
    # One model: all models' counts are that model's frozen copy (no second copy).
    load = (
        next(iter(by_model.values()))
        if len(by_model) == 1
        else _heat_copy(x.expert_load, prev.expert_load if prev else None)
    )
    frozen = FrozenExtractor(
        version=x.version,
        store=freeze_store(x.store, prev.store if prev is not None else None),
        files=tuple(
            state.freeze(prev.files[i] if prev is not None and i < len(prev.files) else None)
            for i, state in enumerate(x.files)
        ),
        engine=prev.engine
        if prev is not None and prev.engine.count == engine.count
        else engine.copy(),
        expert_load=load,
        dropped=_heat_copy(x.dropped, prev.dropped if prev else None),
        head_skips=_heat_copy(x.head_skips, prev.head_skips if prev else None),
        expert_by_model=by_model,
        dropped_by_model=copy_heat_by_model(
            x.dropped_by_model, dict(prev.dropped_by_model) if prev else None
        ),
        expert_dumps=_heat_copy(x.expert_dumps, prev.expert_dumps if prev else None),
        dump_by_model=copy_heat_by_model(
            x.dump_by_model, dict(prev.dump_by_model) if prev else None
        ),
        errors=prev.errors
        if prev is not None and prev.error_count == x.error_count
        else tuple(x.errors),
        error_count=x.error_count,
        error_log=x.error_log.freeze(prev.error_log if prev is not None else None),
        tokens=x.tokens,
        file_tokens=x.file_tokens.snapshot(),
    )
    return frozen


# -- a file read in byte ranges ----------------------------------------------------


def export_part(x: Extractor, file: int) -> ExtractorPart:
    """``Extractor.export_part``."""
    state = x.files[file]
    return ExtractorPart(
        lines_total=state.lines_total,
        by_kind=state.by_kind,
        diagnostics=list(state.diagnostics),
        ignored=state.ignored,
        meta=state.meta,
        store=x.store.export_part(),
        engine=x.engine,
        expert_load=x.expert_load,
        dropped=x.dropped,
        head_skips=x.head_skips,
        expert_by_model=x.expert_by_model,
        dropped_by_model=x.dropped_by_model,
        heat_fallback=x._merger.heat_fallback,
        expert_dumps=x.expert_dumps,
        dump_by_model=x.dump_by_model,
        errors=list(x.errors),
        error_count=x.error_count,
        lifecycle=x._merger.lifecycle.export(file),
        error_log=x.error_log,
    )


def merge_part(
    x: Extractor, file: int, part: ExtractorPart, renames: Mapping[str, str] | None = None
) -> None:
    """``Extractor.merge_part``."""
    shift = x.files[file].append_part(
        part.lines_total, part.by_kind, part.diagnostics, part.ignored, part.meta
    )
    lifecycle = x._merger.lifecycle
    if part.lifecycle is not None:
        lifecycle.before_part(file, part.lifecycle)
    x.store.merge_part(part.store, file, shift, renames)
    if part.lifecycle is not None:
        lifecycle.after_part(file, part.lifecycle, renames)
    # expert_load is made from expert_by_model (core.extraction): merged through it.
    x.dropped.merge(part.dropped)
    x.head_skips.merge(part.head_skips)
    merge_heat_by_model(x.expert_by_model, part.expert_by_model)
    merge_heat_by_model(x.dropped_by_model, part.dropped_by_model)
    x._merger.heat_fallback += part.heat_fallback
    x.expert_dumps.merge(part.expert_dumps)
    merge_heat_by_model(x.dump_by_model, part.dump_by_model)
    if isinstance(part.engine, RecordingEngineSeries):
        x.engine.extend_exact(part.engine)
    else:
        x.engine.extend(part.engine)
    x.errors.extend(part.errors)
    x._merger.error_count += part.error_count
    if part.error_log is not None:
        x.error_log.extend(part.error_log, file, shift)
    x.version += 1


@dataclass
class ExtractorPart:
    """What an Extractor read of one byte range of a file, in a picklable form
    (``Extractor.export_part`` / ``merge_part``)."""

    lines_total: int
    by_kind: dict[str, int]
    diagnostics: list[Diagnostic]
    ignored: dict[str, int]
    meta: dict[str, Any]
    store: StorePart
    engine: EngineSeries
    expert_load: HeatCounts
    dropped: HeatCounts
    head_skips: HeatCounts
    errors: list[ErrorPayload]
    error_count: int
    #: Requests ended by idle stats lines (core.extraction); None: nothing recorded.
    lifecycle: LifecyclePart | None = None
    #: Its errors with their lines numbered from the range's first line (core.store).
    error_log: ErrorLog | None = None
    expert_by_model: HeatByModel = field(default_factory=dict)
    dropped_by_model: HeatByModel = field(default_factory=dict)
    #: Routing records whose heat went to the file's model or the unknown one
    #: (``Merger.heat_fallback``): in a later byte range, not what one reader would do.
    heat_fallback: int = 0
    expert_dumps: HeatCounts = field(default_factory=HeatCounts)
    dump_by_model: HeatByModel = field(default_factory=dict)


def _heat_copy(heat: HeatCounts, previous: HeatCounts | None) -> HeatCounts:
    if previous is not None and previous.revision == heat.revision:
        return previous
    return heat.copy()
