"""The requests a filter keeps, as a state the reports read like any other.

``summary --filter`` and ``extract --filter`` choose rows with the TUI's filter language
(``core.query.parse_filter`` and ``compute_view``, the function the table's view comes
from), then hand ``report.summary_document`` / ``request_records`` a ``SubsetExtractor``:
the same reading interface (``core.views``) over the chosen rows only, so the totals are
the same functions over the filtered rows, and nothing is copied but the row numbers.

What a filter cannot split is not passed on as if it could: the expert and head heat maps
are counted per layer for the whole log, not per request, so under a filter they are
unknown (``null``), never the whole log's counts. Files, engine series and errors are
the log's, as without a filter (they are not requests).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, overload

from sparseety_tui.core.costmodel import ModelShape
from sparseety_tui.core.query import ViewQuery, compute_view, parse_filter
from sparseety_tui.core.series import EngineSeries, HeatCounts
from sparseety_tui.core.store import LineLocation, RowExtras
from sparseety_tui.core.tokens import TokenCounter
from sparseety_tui.core.views import ColumnView, ExtractorView, FileView, IdsView, StoreView
from sparseety_tui.events import ErrorPayload, MetaPayload

if TYPE_CHECKING:
    import numpy as np


def filtered_rows(extractor: ExtractorView, shape: ModelShape, text: str) -> np.ndarray[Any, Any]:
    """Store rows matching filter ``text``, in log order (raises ``FilterError``)."""
    store = extractor.store
    query = ViewQuery(text=text.strip(), clauses=parse_filter(text))
    return compute_view(store, shape, query, len(store))


class _Column:
    def __init__(self, column: ColumnView, rows: Sequence[int]) -> None:
        self._column = column
        self._rows = rows

    def __getitem__(self, row: int) -> Any:
        return self._column[self._rows[row]]


class _Ids:
    def __init__(self, ids: IdsView, rows: Sequence[int], position: Mapping[int, int]) -> None:
        self._ids = ids
        self._rows = rows
        self._position = position

    def __len__(self) -> int:
        return len(self._rows)

    @overload
    def __getitem__(self, row: int) -> str: ...
    @overload
    def __getitem__(self, row: slice) -> list[str]: ...

    def __getitem__(self, row: int | slice) -> str | list[str]:
        if isinstance(row, slice):
            return [self._ids[r] for r in self._rows[row]]
        return self._ids[self._rows[row]]

    def __iter__(self) -> Iterator[str]:
        return (self._ids[r] for r in self._rows)

    def find(self, request_id: str) -> int | None:
        row = self._ids.find(request_id)
        return None if row is None else self._position.get(row)


class SubsetStore:
    """Rows ``rows`` (ascending) of ``store``, numbered 0 .. len(rows)-1."""

    def __init__(self, store: StoreView, rows: np.ndarray[Any, Any]) -> None:
        self._store = store
        self._index = rows
        self._rows: list[int] = rows.tolist()
        self._position = {row: i for i, row in enumerate(self._rows)}
        self._columns = {name: _Column(col, self._rows) for name, col in store.columns.items()}
        self._extras = {
            self._position[row]: extras
            for row, extras in store.extras.items()
            if row in self._position
        }
        self._numeric: dict[str, np.ndarray[Any, Any]] | None = None

    @property
    def columns(self) -> Mapping[str, ColumnView]:
        return self._columns

    @property
    def extras(self) -> Mapping[int, RowExtras]:
        return self._extras

    @property
    def models(self) -> Sequence[str]:
        return self._store.models

    @property
    def ids(self) -> IdsView:
        return _Ids(self._store.ids, self._rows, self._position)

    @property
    def offset(self) -> ColumnView:
        return _Column(self._store.offset, self._rows)

    def __len__(self) -> int:
        return len(self._rows)

    def numeric_view(
        self, start: int = 0, stop: int | None = None
    ) -> dict[str, np.ndarray[Any, Any]]:
        if self._numeric is None:
            # Once: the readers ask chunk by chunk, the chosen rows are spread out.
            whole = self._store.numeric_view()
            self._numeric = {name: values[self._index] for name, values in whole.items()}
        stop = len(self._rows) if stop is None else stop
        return {name: values[start:stop] for name, values in self._numeric.items()}

    def lines_of(self, row: int) -> list[LineLocation]:
        return self._store.lines_of(self._rows[row])


class SubsetExtractor:
    """``extractor`` seen through the rows a filter kept (see the module docstring)."""

    def __init__(self, extractor: ExtractorView, rows: np.ndarray[Any, Any]) -> None:
        self._extractor = extractor
        self._store = SubsetStore(extractor.store, rows)
        self._no_heat = HeatCounts()  # not split by request: unknown under a filter

    @property
    def store(self) -> StoreView:
        return self._store

    @property
    def files(self) -> Sequence[FileView]:
        return self._extractor.files

    @property
    def engine(self) -> EngineSeries:
        return self._extractor.engine

    @property
    def expert_load(self) -> HeatCounts:
        return self._no_heat

    @property
    def dropped(self) -> HeatCounts:
        return self._no_heat

    @property
    def head_skips(self) -> HeatCounts:
        return self._no_heat

    @property
    def errors(self) -> Sequence[ErrorPayload]:
        return self._extractor.errors

    @property
    def error_count(self) -> int:
        return self._extractor.error_count

    @property
    def tokens(self) -> TokenCounter:
        return self._extractor.tokens

    def tokens_for(self, file: int) -> TokenCounter:
        return self._extractor.tokens_for(file)

    def meta(self) -> MetaPayload:
        return self._extractor.meta()
