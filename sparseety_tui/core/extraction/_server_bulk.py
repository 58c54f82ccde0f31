"""Applying a run of server-log lines that a family's native scanner read
(``formats.base.ServerScan``) to the store, the engine series and the file's counts,
with the result the per-line path (``Extractor._run_lines``) would have given.

Each family's scan type has its applier here; the Extractor calls ``apply_server_scan``
for every run and reads the lines the scanner stopped at one by one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sparseety_tui.core.extraction._sglang_bulk import apply_sglang_scan
from sparseety_tui.core.extraction._vllm_bulk import apply_vllm_scan
from sparseety_tui.core.store import FileState
from sparseety_tui.formats.base import ServerScan
from sparseety_tui.formats.sglang.native import SglangScan
from sparseety_tui.formats.vllm.native import VllmScan

if TYPE_CHECKING:
    from sparseety_tui.core.extraction._merge import Merger


@dataclass(frozen=True)
class ServerTarget:
    """Where a run goes: the Extractor's merger and the state of the file read, whose
    data starts at ``base_offset`` in the file (line offsets are relative to the data)."""

    merger: Merger
    state: FileState
    file: int
    base_offset: int


#: scan type -> its applier. An applier counts every line of the run (``state.lines_total``
#: and ``state.by_kind``) and either applies the whole run or raises before changing
#: anything (the Extractor then reads the lines one by one).
APPLIERS: dict[type[Any], Callable[[ServerTarget, Any], None]] = {
    SglangScan: apply_sglang_scan,
    VllmScan: apply_vllm_scan,
}


def apply_server_scan(target: ServerTarget, scan: ServerScan) -> None:
    """Apply ``scan`` (``scan.n`` > 0) to ``target``."""
    APPLIERS[type(scan)](target, scan)
