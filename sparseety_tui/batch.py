"""The batch vocabulary: what a fast path gives for a run of lines, in columns.

A format family may read runs of common lines faster than one ``LineParser.parse`` call a
line (a C scanner, or Python that decodes a block at once). Such a *fast path* produces a
``Batch``: the same vocabulary as the events (``sparseety_tui.events``), column by column
instead of one dict a line. The Extractor's one applier (``core.extraction``) applies a
batch with the result the per-line path would have given, and names no format; a family
adds a fast path by producing batches, in ``formats/`` (and ``native/``) only.

A batch's lines, in order, are each one of:

- ``NEW_ROW``: a line that makes a new request row (``Batch.rows``, one row a line, in
  order); its id is new to the store, which the applier checks;
- ``UPDATE_ROW``: a line that moves a request to a starting state at a time
  (``Batch.updates``, in order), such as "the engine scheduled it";
- ``COUNTED``: a line that is only counted in its kind (an access line);
- ``CARRIED``: a line the family's parser read itself, inside the run: its kind and event
  ride along (``Batch.carried``), merged by the applier at their place.

Arrays are numpy arrays (typed ``Any`` here: this module imports no numpy). Unknown is
-1 in a count column and NaN in a float column, as in the store. A batch is made once
per run and never changed after (its classes are plain slotted dataclasses, not frozen
ones: a run's few objects are made without a ``__setattr__`` call per field).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from sparseety_tui.events import Event, StatsPayload

#: Line operations (``Batch.ops``).
NEW_ROW, UPDATE_ROW, COUNTED, CARRIED = 0, 1, 2, 3

#: ``sparse`` fields that are request-level summaries, with no per-token data: a ``sparse``
#: object with nothing else needs no per-token merge, and the only ones a record batch holds.
SPARSE_SUMMARY_KEYS = frozenset(
    {
        "topk_experts",
        "total_experts",
        "skipped_attention_heads",
        "total_attention_heads",
        "kv_kept",
        "kv_total",
        "kv_skip",
        "kv_policy",
    }
)

#: The count fields of a request record batch (``RecordFields.counts``), by store column
#: name: the record's ``prompt_tokens`` ... and its ``sparse`` summary counts.
RECORD_COUNT_COLUMNS = (
    "prompt_tokens",
    "completion_tokens",
    "cached_tokens",
    "topk_experts",
    "total_experts",
    "skipped_heads",
    "total_heads",
    "kv_kept",
    "kv_total",
)


class IdBlob(NamedTuple):
    """Request ids as a C scanner gives them: their UTF-8 bytes end to end, the end of
    each (int64), and each id's ``hash(str)`` (int64), so a store takes them without a
    ``str`` object each. ``strings``: the same ids as ``str``, when the scanner made them."""

    blob: bytes
    ends: Any
    hashes: Any
    strings: list[str] | None = None


class Names(NamedTuple):
    """A column of names: ``codes`` (unsigned ints, one a row) index ``table`` from 1; 0 is
    none (absent, null, or not a string)."""

    table: Sequence[str]
    codes: Any


@dataclass(slots=True)
class RecordFields:
    """What complete request records say beyond ``NewRows.columns``; the applier derives
    the rest as the merge of one record does (a record that reports an outcome and no
    state is finished, a start is its end minus its latency...)."""

    #: ``RECORD_COUNT_COLUMNS`` -> int32 column
    counts: dict[str, Any]
    #: float64 columns: ``latency_s``, ``ttft_s``, ``ts``, ``received_ts``, ``finished_ts``
    times: dict[str, Any]
    model: Names
    kv_skip: Names
    #: uint8: 0 unknown, 1 miss, 2 hit
    cache_hit: Any
    #: bool: the record has ``completion_tokens`` or ``latency_s`` (even when null)
    reports_outcome: Any


@dataclass(slots=True)
class NewRows:
    """The rows a batch's ``NEW_ROW`` lines make, one a line, in line order.

    Either complete records (``record`` set: the columns are derived as a record's merge
    derives them) or opened requests (``record`` None: ``columns`` are store columns as
    given, by name, e.g. ``prompt_tokens``, ``max_tokens``, ``sampling_n``,
    ``temperature``, ``top_p``, ``received_ts``; the others unknown; each row is open)."""

    ids: list[str] | IdBlob
    state: Names
    columns: dict[str, Any]
    record: RecordFields | None = None
    #: ``prompt_tokens`` counts logged prompt ids, which a server's ``max_log_len`` cuts
    #: without a mark (at or above it, the count is a lower bound).
    prompt_ids_logged: bool = False


@dataclass(slots=True)
class RowUpdates:
    """The ``UPDATE_ROW`` lines, in order: each moves the row of ``ids[i]`` (made by an
    earlier line, in the batch or before it) to the starting ``state`` at ``ts[i]``
    (float64; its row's received time), the line added to the row's lines."""

    ids: list[str]
    state: str
    ts: Any
    #: Per update, the index among ``NewRows`` of the last row before it with its id (-1:
    #: none); None when not known (the applier looks the ids up).
    refs: Any | None = None


@dataclass(slots=True)
class CarriedLine:
    """A line of a run that the family's parser read: its index in the batch, its kind and
    event as ``parse`` gave them, why it was not parsed (``kind`` unparsed), and its text
    as the per-line path held it (for a diagnostic's preview)."""

    line: int
    kind: str
    event: Event | None
    reason: str
    text: bytes


class StatsRows(Protocol):
    """Engine stats lines of a batch as columns (one row a line, in line order), added
    to the engine series as ``EngineSeries.add`` one by one would, with sums bit-exact in
    line order. Each row has a phase (an index into ``phase_fields``) and an engine label
    (an index into ``engines``)."""

    @property
    def rows(self) -> int:
        """Stats rows."""
        ...

    @property
    def engines(self) -> Sequence[str]:
        """The engine label of each label index ("" for none)."""
        ...

    @property
    def phase_fields(self) -> Sequence[Sequence[str]]:
        """Per phase, its summed fields in the order its payload has them."""
        ...

    @property
    def sum_fields(self) -> Sequence[tuple[str, int, int]]:
        """(field, phases bit mask (``1 << phase``), slot) of each sum ``accumulate``
        fills, in its order."""
        ...

    def first_phase(self, label: int) -> int:
        """The phase of the first row of label index ``label`` (-1: of every row)."""
        ...

    def accumulate(
        self, label: int, sums: Any, own: Callable[[int], Any]
    ) -> tuple[Sequence[int], int]:
        """Add the rows of label index ``label`` (-1: every row) to ``sums`` (an array of
        doubles, one a ``sum_fields`` entry) in line order, and each row's fields to its
        minute's cells (``own(minute)``: the label's cells of that minute); returns the
        rows of each phase and the label's last row."""
        ...

    def payloads(self, start: int, stop: int, source: str) -> list[StatsPayload]:
        """Rows ``start`` to ``stop`` as the per-line path's payloads (same keys, same
        order, ``source`` last)."""
        ...


@dataclass(slots=True)
class Batch:
    """A run of whole lines a fast path read, from a start offset up to ``end``.

    Lines are counted in their kinds either per line (``ops``: each line's operation,
    its kind ``op_kinds[op]``, a carried line's its own) or, without ``ops``, by
    ``counts``. Without ``ops``, the ``rows`` (if any) are the batch's lines in order."""

    #: lines read
    n: int
    #: offset in the data just after the lines read
    end: int
    #: end of the line at ``end`` (or of more lines the fast path would not read either);
    #: ``end`` when the data ends there
    next_end: int
    #: the data ``offsets`` index (None: offsets are the lines' offsets in the file)
    data: bytes | None = None
    #: int64 line starts, uint32 line lengths (the ending counted); None: not known
    offsets: Any = None
    lengths: Any = None
    #: uint8 per line: NEW_ROW, UPDATE_ROW, COUNTED or CARRIED
    ops: Any = None
    #: the kind of each op's lines (NEW_ROW, UPDATE_ROW, COUNTED)
    op_kinds: dict[int, str] | None = None
    #: without ``ops``: (first line, kind, lines) of each kind, in any order
    counts: tuple[tuple[int, str, int], ...] = ()
    rows: NewRows | None = None
    updates: RowUpdates | None = None
    carried: Sequence[CarriedLine] = ()
    stats: StatsRows | None = None
    #: ``(line, i)`` -> the event the parser gives the i-th NEW_ROW or UPDATE_ROW line
    #: (at ``line``): a batch whose parser already moved past its lines is merged by line
    #: with these when the applier cannot apply it at once. None: a refused batch's lines
    #: are read again by the per-line path.
    event_of: Callable[[int, int], Event] | None = None
