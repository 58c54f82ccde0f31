"""What the readers of extracted state need of it: typed, read-only interfaces.

Two kinds of state satisfy these protocols: the live ``Extractor`` (read by the batch
commands on the thread that filled it, once it is done) and a ``FrozenExtractor`` (read by
the UI, the totals/view thread and the server while the ingest thread keeps writing).
Totals, figures, views, reports and request details are written against these protocols
only, so they give the same numbers for both, and mypy checks that both really provide
what they read.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, overload

from sparseety_tui.core.store._errors import ErrorRecord
from sparseety_tui.core.store._files import Diagnostic
from sparseety_tui.core.store._heat import HeatCounts
from sparseety_tui.core.store._layout import RowExtras
from sparseety_tui.core.store._series import EngineSeries
from sparseety_tui.core.store._store import LineLocation
from sparseety_tui.core.tokens import TokenCounter
from sparseety_tui.events import ErrorPayload, MetaPayload
from sparseety_tui.formats import FormatFamily

if TYPE_CHECKING:
    import numpy as np


class ColumnView(Protocol):
    def __getitem__(self, row: int, /) -> Any: ...


class IdsView(Protocol):
    """Request ids by row, and the row of an id."""

    def __len__(self) -> int: ...
    @overload
    def __getitem__(self, row: int, /) -> str: ...
    @overload
    def __getitem__(self, row: slice, /) -> list[str]: ...
    def __iter__(self) -> Iterator[str]: ...
    def find(self, request_id: str) -> int | None: ...


class StoreView(Protocol):
    """The reading side of a ``RequestStore`` (see its docstring for the columns)."""

    @property
    def columns(self) -> Mapping[str, ColumnView]: ...
    @property
    def extras(self) -> Mapping[int, RowExtras]: ...
    @property
    def models(self) -> Sequence[str]: ...
    @property
    def ids(self) -> IdsView: ...
    @property
    def offset(self) -> ColumnView:
        """Byte offset of each row's first line in its file."""
        ...

    def __len__(self) -> int: ...

    def numeric_view(
        self, start: int = 0, stop: int | None = None, names: Sequence[str] | None = None
    ) -> dict[str, np.ndarray[Any, Any]]:
        """Rows [start, stop) of every column (or of ``names``) as numpy arrays, unknown
        ints as NaN."""
        ...

    def lines_of(self, row: int) -> list[LineLocation]: ...


class FileView(Protocol):
    """The reading side of one file's ``FileState``."""

    @property
    def path(self) -> str: ...
    @property
    def family(self) -> FormatFamily | None: ...
    @property
    def reference_time(self) -> float | None: ...
    @property
    def superseded(self) -> str | None: ...
    @property
    def lines_total(self) -> int: ...
    @property
    def by_kind(self) -> Mapping[str, int]: ...
    @property
    def meta(self) -> Mapping[str, Any]: ...
    @property
    def diagnostics(self) -> Sequence[Diagnostic]: ...
    @property
    def ignored(self) -> Mapping[str, int]: ...
    @property
    def events(self) -> Sequence[str]: ...
    @property
    def format_name(self) -> str: ...


class ErrorLogView(Protocol):
    """The error log (core.store): records, exact counts by class and by minute."""

    @property
    def records(self) -> Sequence[ErrorRecord]: ...
    @property
    def by_kind(self) -> Mapping[str, int]: ...
    @property
    def per_minute(self) -> Mapping[int, Mapping[str, int]]: ...
    @property
    def total(self) -> int: ...
    @property
    def dropped(self) -> int: ...


class ExtractorView(Protocol):
    """The reading side of an ``Extractor``: everything totals, reports and details use."""

    @property
    def store(self) -> StoreView: ...
    @property
    def files(self) -> Sequence[FileView]: ...
    @property
    def engine(self) -> EngineSeries: ...
    @property
    def expert_load(self) -> HeatCounts: ...
    @property
    def dropped(self) -> HeatCounts: ...
    @property
    def head_skips(self) -> HeatCounts: ...
    @property
    def expert_by_model(self) -> Mapping[str, HeatCounts]: ...
    @property
    def dropped_by_model(self) -> Mapping[str, HeatCounts]: ...
    @property
    def expert_dumps(self) -> HeatCounts: ...
    @property
    def dump_by_model(self) -> Mapping[str, HeatCounts]: ...
    @property
    def errors(self) -> Sequence[ErrorPayload]: ...
    @property
    def error_count(self) -> int: ...
    @property
    def error_log(self) -> ErrorLogView: ...
    @property
    def tokens(self) -> TokenCounter: ...

    def tokens_for(self, file: int) -> TokenCounter:
        """The tokenizer that counted (and decodes) the text of file ``file``."""
        ...

    def meta(self) -> MetaPayload: ...


def merged_meta(files: Sequence[FileView]) -> MetaPayload:
    """The meta headers of all files in one (a later file's keys win)."""
    merged: dict[str, Any] = {}
    for state in files:
        merged.update(state.meta)
    return merged  # type: ignore[return-value]
