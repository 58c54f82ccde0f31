"""Lines of a fast-path batch taken one at a time by the applier (``core.extraction``'s
``_apply``): a carried line's event merged at its place, a line counted unparsed with its
diagnostic, as ``Extractor._run_lines`` does."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sparseety_tui.batch import COUNTED, Batch, CarriedLine
from sparseety_tui.core.store import Diagnostic, FileState
from sparseety_tui.events import LineKind
from sparseety_tui.formats import failure_reason

if TYPE_CHECKING:
    from sparseety_tui.core.extraction._merge import Merger

#: The code of a line counted unparsed (a merge failed) among a batch's line codes.
UNPARSED_CODE = 255
#: Characters of an unparsed line kept for display (``Extractor``'s ``PREVIEW_CHARS``).
PREVIEW_CHARS = 300


@dataclass(slots=True)
class Target:
    """Where a batch goes: the Extractor's merger and the state of the file read, whose
    data starts at ``base_offset`` in the file (a batch's offsets are relative to it)."""

    merger: Merger
    state: FileState
    file: int
    base_offset: int


def is_request_event(carried: CarriedLine) -> bool:
    return carried.event is not None and carried.event[0] == "request"


def merge_carried(
    target: Target,
    batch: Batch,
    carried: CarriedLine,
    line_kinds: Any,
    names: dict[int, str],
) -> None:
    """A line the parser read in the batch, as ``Extractor._run_lines`` takes it: its event
    merged, its kind counted (unparsed, with a diagnostic, when parsing or merging it
    failed)."""
    merger, state = target.merger, target.state
    line = carried.line
    line_no = state.lines_total + 1 + line
    kind, reason = carried.kind, carried.reason
    if carried.event is not None:
        offset = int(batch.offsets[line]) + target.base_offset
        try:
            merger.on_event(
                carried.event, target.file, state.meta, offset, int(batch.lengths[line]), line_no
            )
        except Exception as exc:  # the merge changed nothing (core.extraction)
            kind, reason = LineKind.UNPARSED, failure_reason("not merged", exc)
    if kind == LineKind.UNPARSED:
        unparsed(target, batch, line, line_no, reason, line_kinds, carried.text)
        return
    line_kinds[line] = code_of(names, kind)


def code_of(names: dict[int, str], kind: str) -> int:
    """The code of line kind ``kind`` among a batch's ``names`` (one more when new)."""
    for code, name in names.items():
        if name == kind and code > COUNTED:
            return code
    code = max(c for c in names if c != UNPARSED_CODE) + 1
    names[code] = kind
    return code


def unparsed(
    target: Target,
    batch: Batch,
    line: int,
    line_no: int,
    reason: str,
    kinds: Any,
    text: bytes | None = None,
) -> None:
    """A line not parsed, or whose event could not be merged: counted unparsed, with a
    diagnostic (as ``Extractor._run_lines`` / ``_diagnose`` do). ``text``: the line as the
    per-line path holds it (default: its bytes without the newline)."""
    kinds[line] = UNPARSED_CODE
    start = int(batch.offsets[line])
    if text is None:
        data = batch.data if batch.data is not None else b""
        text = data[start : start + int(batch.lengths[line])]
        if text.endswith(b"\n"):
            text = text[:-1]
    preview = text[: PREVIEW_CHARS * 4].decode("utf-8", errors="replace")
    if len(preview) > PREVIEW_CHARS:
        preview = preview[:PREVIEW_CHARS] + "…"
    target.state.diagnostics.append(
        Diagnostic(line_no, target.base_offset + start, reason, preview)
    )
