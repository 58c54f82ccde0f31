"""Heat maps: how often each expert was routed to, or each head skipped, per layer.

Counted by the one Extractor as routing and head masks arrive, per model (experts of
different models mean nothing added together); readers get copies (``copy_heat_by_model``,
which shares a model's counts that did not move). Parts of a file read in byte ranges merge
by adding counts.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from sparseety_tui.formats import count

#: Heat maps are dense tables, layer × index (expert or head). An id beyond any model's
#: (a corrupt or hostile line: expert 10**8) would add a cell for every index below it, so a
#: heat count holds layers below HEAT_LAYERS and indices below HEAT_INDICES only; the
#: others are counted in ``out_of_range`` (their slots still count as routed or skipped).
HEAT_LAYERS = 1024
HEAT_INDICES = 4096


def heat_index(value: Any) -> int:
    """A layer, expert or head id: a count, or the digits of one (JSON object keys are
    strings); -1 for anything else. Never raises. ``HeatCounts.add`` keeps only those in
    range (``HEAT_LAYERS``, ``HEAT_INDICES``) and counts the rest as out of range. The
    request detail's heat maps read ids with it too, so the two maps agree."""
    if type(value) is int:
        return value if value >= 0 else -1
    if type(value) is float:
        return int(value) if value.is_integer() and value >= 0 else -1
    if type(value) is str:
        number = count(value.strip())
        return -1 if number is None else number
    return -1


@dataclass
class HeatCounts:
    """Counts per (layer, index): experts routed to, or heads skipped."""

    counts: dict[int, dict[int, int]] = field(default_factory=dict)
    #: Bumped by every ``add``: a reader's copy is current while this has not moved.
    revision: int = 0
    #: Counts not held because their layer or index was out of range (HEAT_LAYERS/INDICES).
    out_of_range: int = 0

    def add(self, layer: int, index: int, n: int = 1) -> None:
        self.revision += 1
        if not (0 <= layer < HEAT_LAYERS and 0 <= index < HEAT_INDICES):
            self.out_of_range += n
            return
        row = self.counts.get(layer)
        if row is None:
            row = self.counts[layer] = {}
        row[index] = row.get(index, 0) + n

    def add_row(self, layer: int, indices: list[int]) -> None:
        """Count each of ``indices`` (counts: ints >= 0) once in ``layer``: a routing row,
        as ``add`` would one by one, in one call."""
        self.revision += len(indices)
        if not 0 <= layer < HEAT_LAYERS:
            self.out_of_range += len(indices)
            return
        row = self.counts.get(layer)
        for index in indices:
            if index >= HEAT_INDICES:
                self.out_of_range += 1
                continue
            if row is None:  # made by the first index held (an empty row is no layer)
                row = self.counts[layer] = {}
            row[index] = row.get(index, 0) + 1

    def total(self) -> int:
        return sum(sum(row.values()) for row in self.counts.values())

    def copy(self) -> HeatCounts:
        return HeatCounts(
            {layer: dict(row) for layer, row in self.counts.items()},
            self.revision,
            self.out_of_range,
        )

    def merge(self, other: HeatCounts) -> None:
        """Add another part's counts (counts add, whatever the order)."""
        for layer, row in other.counts.items():
            for index, n in row.items():
                self.add(layer, index, n)
        self.out_of_range += other.out_of_range


#: The heat bucket of requests whose model neither the request nor its file names.
UNKNOWN_MODEL = "unknown model"
#: model name -> its heat counts: experts of an 8-, a 128- and a 256-expert model are three
#: tables, never one (their ids and their imbalance mean nothing added together).
HeatByModel: TypeAlias = "dict[str, HeatCounts]"


def heat_for(by_model: HeatByModel, model: str) -> HeatCounts:
    """The model's heat counts, made on first use."""
    heat = by_model.get(model)
    if heat is None:
        heat = by_model[model] = HeatCounts()
    return heat


def copy_heat_by_model(
    by_model: HeatByModel, previous: dict[str, HeatCounts] | None
) -> dict[str, HeatCounts]:
    """A reader's copy: a model's counts that did not move since ``previous`` are shared."""
    out: dict[str, HeatCounts] = {}
    for model, heat in by_model.items():
        old = previous.get(model) if previous is not None else None
        out[model] = old if old is not None and old.revision == heat.revision else heat.copy()
    return out


def combined_heat(parts: Iterable[HeatCounts], revision: int) -> HeatCounts:
    """Heat counts added together, with the given revision (the sum of the parts')."""
    out = HeatCounts(revision=revision)
    counts = out.counts
    for part in parts:
        # Cell by cell without ``add``: made again at every freeze of a live multi-model
        # log, and the parts' ids are in range already.
        for layer, row in part.counts.items():
            mine = counts.get(layer)
            if mine is None:
                counts[layer] = dict(row)
                continue
            for index, n in row.items():
                mine[index] = mine.get(index, 0) + n
        out.out_of_range += part.out_of_range
    return out


def merge_heat_by_model(into: HeatByModel, other: HeatByModel) -> None:
    """Add another part's counts, model by model (counts add, whatever the order)."""
    for model, heat in other.items():
        heat_for(into, model).merge(heat)
