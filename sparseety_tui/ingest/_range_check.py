"""The proof that a server log read in byte ranges merges as one reader would have read it.

Each range's worker keeps notes of what its parser and Extractor saw at the range's edges
(``RangeNotes``); ``check_server_ranges`` walks the ranges in order with what one reader
from the top would carry across each boundary (the ERROR-line context, the minutes of
engine stats, vLLM's year state and window of received ids, the requests whose fields are
derived), and refuses the split (``Refusal``) at the first place where one reader could
have parsed a range differently. The rules are listed in ``ingest.parallel``'s docstring.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sparseety_tui.core.extraction import Extractor, ExtractorPart, check_parts
from sparseety_tui.core.store import IdIndex, RecordingEngineSeries
from sparseety_tui.formats import BoundaryNotes, LineParser, RangeAware, family_by_name, vllm

#: The window of received ids a vLLM parser maps engine-side ids against.
VLLM_RECENT_IDS = vllm.RECENT_IDS
#: Why requests with lines on both sides of a boundary cannot be merged by id.
_DERIVED_IN_TWO = "a request with derived fields has lines in two ranges"

#: Per range: (id renames, ids to mark failed after its merge).
MergePlan = list[tuple[dict[str, str], list[str]]]


@dataclass
class RangeResult:
    """What a range worker sends back: the Extractor's part and, for server logs, notes."""

    part: ExtractorPart
    #: Server logs only: what the range's parser and extractor assumed at its start.
    notes: RangeNotes | None = None


@dataclass(frozen=True)
class Refusal:
    """Why a split of a server log cannot be merged exactly (the file is read whole)."""

    reason: str


@dataclass
class RangeNotes:
    """What one range of a server log saw at its edges (see ``check_server_ranges``)."""

    tb_open_at_end: bool = False
    stale_risk: bool = False
    context_first_pops: set[str] = field(default_factory=set)
    context_touched: set[str] = field(default_factory=set)
    context_end: dict[str, str] = field(default_factory=dict)
    context_cleared: bool = False
    deriving_ids: set[str] = field(default_factory=set)
    unresolved_errors: list[str] = field(default_factory=list)
    boundary: BoundaryNotes | None = None
    year_end: tuple[int | None, int] = (None, 0)
    recent_end: list[str] = field(default_factory=list)
    remembered: int = 0
    year_seeded: bool = False


def range_aware(parser: LineParser | None, family: str) -> RangeAware:
    """A range's parser as the one interface a split reader uses (formats._base)."""
    if not isinstance(parser, RangeAware):
        raise TypeError(f"a {family} parser cannot read a range of a file")
    return parser


class _Refused(Exception):
    """A check failed: ``args[0]`` says why."""


def check_server_ranges(
    extractor: Extractor,
    family: str,
    results: list[RangeResult],
    reference_time: float | None,
) -> MergePlan | Refusal:
    """Per range: (id renames, ids to mark failed after its merge); a Refusal when one
    process reading the whole file could have parsed a range differently."""
    ended = check_parts([result.part.lifecycle for result in results])
    if ended is not None:
        return Refusal(ended)
    walk = _Walk(extractor, family, reference_time)
    plan: MergePlan = []
    try:
        for k in range(len(results)):
            plan.append(walk.step(k, results))
    except _Refused as refused:
        return Refusal(str(refused.args[0]))
    return plan


class _Walk:
    """What one reader from the top would carry across each boundary, range by range."""

    def __init__(self, extractor: Extractor, family: str, reference_time: float | None) -> None:
        self.store = extractor.store
        self.preexisting = len(self.store) > 0
        self.continues = self.preexisting or extractor.engine.count > 0
        self.year_state: tuple[int | None, int] = (None, 0)
        self.context: dict[str, str] = {}
        self.window: list[str] = []
        self.deriving_before: set[str] = set()
        self.minutes_before = extractor.engine.minutes()
        new_parser = family_by_name(family).new_parser
        self.probe = range_aware(new_parser(reference_time=reference_time), family)

    def step(self, k: int, results: list[RangeResult]) -> tuple[dict[str, str], list[str]]:
        """Check range ``k`` against the ranges before it and carry its state on."""
        result = results[k]
        notes = result.notes
        if notes is None:
            raise _Refused("a range without notes")
        after_start = k > 0 or self.continues
        self._tracebacks(notes, after_start, last=k == len(results) - 1)
        self._engine(result, after_start)
        renames = self._vllm(notes, result.part.store.ids)
        earlier = results[:k]
        self._deriving(notes, renames, result.part.store.ids, earlier, k > 0 or self.preexisting)
        return renames, self._failed(notes, result.part.store.ids, earlier)

    def _seen_before(self, request_id: str, earlier: list[RangeResult]) -> bool:
        return self.store.ids.find(request_id) is not None or any(
            request_id in r.part.store.ids for r in earlier
        )

    def _tracebacks(self, notes: RangeNotes, after_start: bool, last: bool) -> None:
        """Tracebacks and the ERROR-line context they pick up."""
        if not last and notes.tb_open_at_end:
            raise _Refused("a traceback is open where a range ends")
        if after_start:
            if notes.stale_risk or notes.context_cleared:
                raise _Refused(
                    "a traceback stayed idle past its stale limit, or the ERROR context was cleared"
                )
            if any(self.context.get(key) for key in notes.context_first_pops):
                raise _Refused("a traceback picks up ERROR context from an earlier range")
            if len(self.context.keys() | notes.context_touched) > 256:
                raise _Refused("too many ERROR contexts to follow")
        for key in notes.context_touched:
            self.context.pop(key, None)
        self.context.update(notes.context_end)

    def _engine(self, result: RangeResult, after_start: bool) -> None:
        """Engine stats: only the first minute of a range may continue an earlier minute."""
        engine = result.part.engine
        if not isinstance(engine, RecordingEngineSeries):
            raise _Refused("a range without a recorded engine series")
        if after_start:
            if engine.mixed:
                raise _Refused("a stats field mixes ints and floats")
            if not engine.first_minute_complete():
                raise _Refused("a range's first minute of stats comes back later in it")
            if (engine.minutes() - {engine.first_minute}) & self.minutes_before:
                raise _Refused(
                    "a minute of stats other than a range's first continues an earlier one"
                )
        self.minutes_before.update(engine.minutes())

    def _vllm(self, notes: RangeNotes, ids: IdIndex) -> dict[str, str]:
        """vLLM: year inference and engine-side ids; the range's id renames."""
        v = notes.boundary
        if v is None:
            return {}
        if v.year_probe is not None:
            if notes.year_seeded and self.year_state[0] is None:
                raise _Refused("vLLM year seeded where one reader would infer it")
            if self.probe.replay_year_probe(v.year_probe, self.year_state) != v.year_after_probe:
                raise _Refused("vLLM year inference differs at a range start")
            self.year_state = notes.year_end
        if self.window and not set(self.window).isdisjoint(v.first_inserted):
            raise _Refused("a vLLM request id received again across a boundary")
        renames = _engine_side_renames(v, self.window, ids)
        if renames is None:
            raise _Refused("vLLM engine-side ids cannot be mapped consistently")
        if notes.remembered >= VLLM_RECENT_IDS:
            self.window = list(notes.recent_end)
        else:
            self.window = (self.window + notes.recent_end)[-VLLM_RECENT_IDS:]
        return renames

    def _deriving(
        self,
        notes: RangeNotes,
        renames: dict[str, str],
        ids: IdIndex,
        earlier: list[RangeResult],
        after_rows: bool,
    ) -> None:
        """Requests with lines on both sides of a boundary."""
        deriving = {renames.get(rid, rid) for rid in notes.deriving_ids}
        if after_rows:
            if any(self._seen_before(rid, earlier) for rid in deriving):
                raise _Refused(_DERIVED_IN_TWO)
            if any(rid in ids for rid in self.deriving_before):
                raise _Refused(_DERIVED_IN_TWO)
            if any(base in self.deriving_before for base in renames.values()):
                raise _Refused(_DERIVED_IN_TWO)
            if self.preexisting and self.store.ids.shares_ids_with(ids):
                raise _Refused("requests continue rows of earlier files")
        self.deriving_before |= deriving

    def _failed(self, notes: RangeNotes, ids: IdIndex, earlier: list[RangeResult]) -> list[str]:
        """Errors naming a request of an earlier range: that request is marked failed."""
        failed: list[str] = []
        for rid in notes.unresolved_errors:
            if self._seen_before(rid, earlier):
                if rid in ids:
                    raise _Refused("an error names a request of an earlier range that goes on")
                failed.append(rid)
        return failed


def _engine_side_renames(
    notes: BoundaryNotes, window: list[str], ids: IdIndex
) -> dict[str, str] | None:
    """Engine-side ids a range left unmapped that one process would have mapped to a
    front-end id received in an earlier range: its window of recent ids at that line is
    the end of ``window`` plus the range's own ids. None when that is not consistent."""
    decisions: dict[str, str | None] = {}
    for rid, base, remembered in notes.unmapped:
        room = VLLM_RECENT_IDS - remembered
        tail = set(window[-room:]) if room > 0 and window else set()
        target = base if rid not in tail and base in tail else None
        if decisions.setdefault(rid, target) != target:
            return None  # mapped at one line, not at another
    renames = {rid: base for rid, base in decisions.items() if base is not None}
    if any(base in ids for base in renames.values()):
        return None  # the range has its own row for the front-end id as well
    return renames
