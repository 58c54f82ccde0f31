"""The request table's query: a small filter language, sorting, and the view they give.

``parse_filter("skip>0.5 latency>2 state=finished llama")`` gives clauses; a ``ViewQuery``
holds them with a sort column; ``compute_view`` turns a query into the row indices the table
shows, vectorised with numpy over a store's columns (a frozen one, off the UI thread). The
same language serves every reader (the TUI today, the HTTP API's ``?filter=`` later).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sparseety_tui.core.figures import COMPONENTS, ModelShape, dominant
from sparseety_tui.core.query._timewindow import TimeWindow, WindowSpec, request_times, time_span
from sparseety_tui.core.store import STATE_CODE, STATES, StoreView

if TYPE_CHECKING:
    import numpy as np

#: Sortable columns, in the order ``s`` cycles through them (None: arrival order).
SORT_COLUMNS: tuple[str, ...] = (
    "time",
    "id",
    "model",
    "state",
    "prompt",
    "completion",
    "cached",
    "skip",
    "experts",
    "latency",
    "ttft",
    "queue",
    "prefill",
    "decode",
)

#: Filter field names (and aliases) -> store column or derived figure.
FILTER_FIELDS: dict[str, str] = {
    "skip": "skip",
    "latency": "latency",
    "lat": "latency",
    "ttft": "ttft",
    "prompt": "prompt",
    "completion": "completion",
    "compl": "completion",
    "cached": "cached",
    "k": "experts",
    "experts": "experts",
    "state": "state",
    "model": "model",
    "id": "id",
    # Sampling parameters the request was sent with (vLLM SamplingParams).
    "max_tokens": "max_tokens",
    "temperature": "temperature",
    "temp": "temperature",
    "top_p": "top_p",
    "n": "n",
    # Where a request's time went (seconds), and the part that dominated (core.figures).
    "queue": "queue",
    "prefill": "prefill",
    "decode": "decode",
    "inference": "inference",
    "why": "why",
}
#: Float32 columns compared at the precision the log printed them with: ``temperature=0.7``
#: must find the float32 nearest 0.7.
_REAL_DIGITS = 6

_CLAUSE = re.compile(r"^(!?)([a-z_]+)\s*(>=|<=|!=|=|>|<|~)\s*(.+)$")
_NUMBER = re.compile(r"^(-?\d+(?:\.\d+)?)\s*(ms|s|%)?$")
_OPERATOR = re.compile(r"(>=|<=|!=|=|>|<|~)")


class FilterError(ValueError):
    """A filter expression that cannot be understood; the message says why."""


@dataclass(frozen=True)
class Clause:
    """One filter condition. ``field`` is a FILTER_FIELDS value, or "" for free text."""

    field: str
    op: str  # one of > >= < <= = != ~
    value: str | float
    negate: bool = False


@dataclass(frozen=True)
class ViewQuery:
    """What the table shows: the rows matching every clause, in ``sort`` order."""

    text: str = ""
    clauses: tuple[Clause, ...] = ()
    sort: str | None = None
    reverse: bool = False
    serial: int = 0
    #: The time window (``t``, ``--since``/``--until``): only requests whose time is in it
    #: (``core.query``; None: all time).
    window: WindowSpec | None = None

    @property
    def is_identity(self) -> bool:
        return not self.clauses and self.sort is None and not self.reverse and not self.window

    @property
    def narrows(self) -> bool:
        """Whether it hides rows (a filter or a window), so totals follow its rows."""
        return bool(self.clauses) or self.window is not None

    def same_rows(self, other: ViewQuery) -> bool:
        """Whether ``other`` picks the same rows (sort order aside)."""
        return self.clauses == other.clauses and self.window == other.window


def parse_filter(text: str) -> tuple[Clause, ...]:
    """Parse ``skip>0.5 latency>2 state=finished llama`` into clauses (all must hold).

    Fields: skip (ratio 0-1, or ``50%``), latency / ttft (seconds, or ``300ms``), prompt,
    completion, cached, experts (k), state, model, id, the sampling parameters
    max_tokens, temperature (temp), top_p, n, the time in queue, prefill, decode and
    inference (seconds), and why (``why=queue``: the part of the latency that dominated,
    one of queue, prefill, decode, other). Operators ``> >= < <= = != ~`` (``~``
    contains). A word that is not a comparison matches request ids and model names
    (case-insensitive substring). ``!`` before a clause negates it.
    """
    clauses: list[Clause] = []
    for word in _split_words(text):
        match = _CLAUSE.match(word.lower() if "=" not in word and "~" not in word else word)
        if match is None:
            negate = word.startswith("!") and len(word) > 1
            clauses.append(Clause("", "~", (word[1:] if negate else word).lower(), negate))
            continue
        negate_mark, name, op, raw = match.groups()
        name = name.lower()
        fld = FILTER_FIELDS.get(name)
        if fld is None:
            known = ", ".join(sorted(set(FILTER_FIELDS)))
            raise FilterError(f"unknown field {name!r} (known: {known})")
        value: str | float
        if fld in ("state", "model", "id"):
            if op not in ("=", "!=", "~"):
                raise FilterError(f"{name} takes =, != or ~, not {op}")
            value = raw.strip().lower()
            if fld == "state" and op != "~" and value not in STATE_CODE:
                raise FilterError(f"unknown state {raw!r} (known: {', '.join(STATES[1:])})")
        elif fld == "why":
            value = raw.strip().lower()
            if op not in ("=", "!=") or value not in COMPONENTS:
                raise FilterError(f"why takes = or != and one of {', '.join(COMPONENTS)}")
        else:
            if op == "~":
                raise FilterError(f"{name} is a number: use > >= < <= = !=")
            number = _NUMBER.match(raw.strip().lower())
            if number is None:
                raise FilterError(f"{name}{op}{raw}: {raw!r} is not a number")
            value = float(number.group(1))
            unit = number.group(2)
            if unit == "ms":
                value /= 1000.0
            elif unit == "%":
                value /= 100.0
        clauses.append(Clause(fld, op, value, bool(negate_mark)))
    return tuple(clauses)


def _split_words(text: str) -> list[str]:
    """The words of a filter, "latency > 2" one clause: each operator glued to its
    neighbours (the spaces around it dropped). Split at the operators, not matched with
    spaces on both sides by a regex, which costs time quadratic in a run of spaces."""
    pieces = _OPERATOR.split(text.strip())
    last = len(pieces) - 1
    for i in range(0, len(pieces), 2):  # the text between operators (at odd places)
        if i > 0:
            pieces[i] = pieces[i].lstrip()
        if i < last:
            pieces[i] = pieces[i].rstrip()
    return "".join(pieces).split()


def _compare(values: Any, op: str, target: float) -> Any:
    if op == ">":
        return values > target
    if op == ">=":
        return values >= target
    if op == "<":
        return values < target
    if op == "<=":
        return values <= target
    if op == "=":
        return values == target
    return values != target


def compute_view(
    store: StoreView,
    shape: ModelShape,
    query: ViewQuery,
    rows: int,
    older_files: frozenset[int] = frozenset(),
    window: TimeWindow | None = None,
) -> np.ndarray[Any, Any]:
    """Row indices (int32) matching ``query.clauses`` and in ``query.window``, in
    ``query.sort`` order. ``window``: ``query.window`` resolved by the caller (against
    the newest time of the logs, engine stats included); else it is resolved here
    against the newest request time.

    Without a sort, rows are in log order: the store holds a big log's tail before its
    older part (``older_files``, read in the background), so those rows move first.
    Unknown values never match a numeric comparison and sort last.
    """
    import numpy as np

    cols = _ColumnsOnDemand(store, rows)
    column = _FieldColumns(store, shape, cols, rows)
    mask = np.ones(rows, dtype=bool)
    if query.window is not None:
        if window is None:
            span = time_span(store)
            window = query.window.resolve(span[1] if span else None)
        mask &= window.mask(request_times(cols))
    for clause in query.clauses:
        mask &= _clause_mask(store, cols, clause, column, rows)
    if query.sort is None:
        # Arrival (or log) order: the rows' positions straight into int32, no int64 index
        # nor sort over every row (either would be a large part of a live tail's peak).
        return _log_order(store, mask, older_files, query.reverse)
    index = _positions(mask)
    # int32 (``index``'s): a big view's index is what the table holds between queries.
    ordered: np.ndarray[Any, Any] = index[_sort_order(column(query.sort)[index], query.reverse)]
    return ordered


def _sort_order(keys: np.ndarray[Any, Any], reverse: bool) -> np.ndarray[Any, Any]:
    """The stable order of ``keys``; unknown (NaN) keys last, reversed or not."""
    import numpy as np

    if keys.dtype.kind == "f":
        unknown = np.isnan(keys)
        order = np.argsort(np.where(unknown, np.inf, keys), kind="stable")
        if reverse:
            # Reverse the known part only: unknown values stay last.
            known_order = order[~unknown[order]][::-1]
            order = np.concatenate([known_order, order[unknown[order]]])
    else:
        order = np.argsort(keys, kind="stable")
        if reverse:
            order = order[::-1]
    return order


#: Filter and sort fields that are a store column as it is.
_PLAIN_FIELDS = {
    "prompt": "prompt_tokens",
    "completion": "completion_tokens",
    "cached": "cached_tokens",
    "experts": "topk_experts",
    "max_tokens": "max_tokens",
    "n": "sampling_n",
}
#: Filter and sort fields that are a float32 store column, compared as float64.
_SECONDS_FIELDS = {
    "latency": "latency_s",
    "ttft": "ttft_s",
    "queue": "queue_s",
    "prefill": "prefill_s",
    "decode": "decode_s",
    "inference": "inference_s",
}
#: Filter and sort fields that are a float32 sampling parameter (see ``_REAL_DIGITS``).
_REAL_FIELDS = ("temperature", "top_p")


class _FieldColumns:
    """A filter or sort field's values over the view's rows (numeric, one per row), each
    made once per view from the store's columns as the query asks for them."""

    def __init__(
        self, store: StoreView, shape: ModelShape, cols: Mapping[str, Any], rows: int
    ) -> None:
        self._store = store
        self._shape = shape
        self._cols = cols
        self._rows = rows
        self._made: dict[str, Any] = {}

    def __call__(self, name: str) -> Any:
        if name in self._made:
            return self._made[name]
        value = self._made[name] = self._make(name)
        return value

    def _make(self, name: str) -> Any:
        import numpy as np

        cols = self._cols
        if name in _PLAIN_FIELDS:
            return cols[_PLAIN_FIELDS[name]]
        if name in _SECONDS_FIELDS:
            return cols[_SECONDS_FIELDS[name]].astype(np.float64)
        if name in _REAL_FIELDS:
            return np.round(cols[name].astype(np.float64), _REAL_DIGITS)
        if name == "skip":
            return self._skip_ratio()
        if name == "time":
            return np.where(np.isnan(cols["received_ts"]), cols["finished_ts"], cols["received_ts"])
        if name == "state":
            return cols["state"].astype(np.int64)
        if name == "model":
            return self._model_ranks()
        if name == "id":
            return self._id_ranks()
        if name == "why":
            parts = (cols[n] for n in ("queue_s", "prefill_s", "decode_s", "latency_s"))
            return dominant(*parts)[0]
        raise KeyError(name)

    def _skip_ratio(self) -> Any:
        """Each row's skip ratio, as the table's figures give it."""
        import numpy as np

        from sparseety_tui.core.figures import column_figures

        figures = column_figures(self._store, self._shape, self._cols)
        return np.asarray(figures["skip_ratio"], dtype=np.float64)

    def _model_ranks(self) -> Any:
        """Each row's model as its rank among the model names (case-insensitive)."""
        import numpy as np

        names = self._store.models
        order = {
            code: rank
            for rank, code in enumerate(sorted(range(len(names)), key=lambda c: names[c].lower()))
        }
        ranks = np.array([order[c] for c in range(len(names))], dtype=np.int64)
        return ranks[self._cols["model"].astype(np.int64)]

    def _id_ranks(self) -> Any:
        """Each row's request id as its rank among the view's ids."""
        import numpy as np

        rows = self._rows
        ids = _ids(self._store, rows)
        value = np.empty(rows, dtype=np.int64)
        value[np.array(sorted(range(rows), key=ids.__getitem__), dtype=np.int64)] = np.arange(
            rows, dtype=np.int64
        )
        return value


#: Rows whose positions are taken at once: bounds the int64 ``flatnonzero`` gives.
_POSITION_CHUNK = 1 << 20


def _positions(
    mask: np.ndarray[Any, Any], into: np.ndarray[Any, Any] | None = None
) -> np.ndarray[Any, Any]:
    """``np.flatnonzero(mask)`` as int32 (into ``into`` if given), a chunk at a time."""
    import numpy as np

    out = np.empty(int(np.count_nonzero(mask)), dtype=np.int32) if into is None else into
    at = 0
    for start in range(0, len(mask), _POSITION_CHUNK):
        found = np.flatnonzero(mask[start : start + _POSITION_CHUNK])
        found += start
        out[at : at + len(found)] = found
        at += len(found)
    return out


def _log_order(
    store: StoreView, mask: Any, older_files: frozenset[int], reverse: bool
) -> np.ndarray[Any, Any]:
    """The rows of ``mask`` in log order (int32): those of ``older_files`` (a big log's
    older part, read after its tail) first, each part in store order; ``reverse``: the
    other way round. The order a stable sort on "is it of a later file" gave."""
    import numpy as np

    if not older_files:
        index = _positions(mask)
    else:
        older = np.zeros(len(mask), dtype=bool)
        for start in range(0, len(mask), _POSITION_CHUNK):  # the file column a chunk at once
            stop = min(start + _POSITION_CHUNK, len(mask))
            files = store.numeric_view(start, stop, ("file",))["file"]
            older[start:stop] = np.isin(files, list(older_files))
        first = mask & older
        count = int(np.count_nonzero(first))
        index = np.empty(int(np.count_nonzero(mask)), dtype=np.int32)
        _positions(first, index[:count])
        del first
        mask = mask & ~older
        _positions(mask, index[count:])
    return index[::-1].copy() if reverse else index


def _clause_mask(
    store: StoreView,
    cols: Mapping[str, Any],
    clause: Clause,
    column: Callable[[str], Any],
    rows: int,
) -> Any:
    import numpy as np

    fld, op, value = clause.field, clause.op, clause.value
    if fld == "":
        needle = str(value)
        ids = _ids(store, rows)
        models = [m.lower() for m in store.models]
        model_hit = np.array([needle in m for m in models], dtype=bool)
        mask = model_hit[cols["model"].astype(np.int64)]
        mask |= np.fromiter((needle in rid.lower() for rid in ids), dtype=bool, count=rows)
    elif fld == "id":
        ids = _ids(store, rows)
        needle = str(value)
        if op == "~":
            mask = np.fromiter((needle in rid.lower() for rid in ids), dtype=bool, count=rows)
        else:
            mask = np.fromiter((rid.lower() == needle for rid in ids), dtype=bool, count=rows)
            if op == "!=":
                mask = ~mask
    elif fld == "model":
        needle = str(value)
        names = [m.lower() for m in store.models]
        if op == "~":
            hit = np.array([needle in m for m in names], dtype=bool)
        else:
            hit = np.array([m == needle for m in names], dtype=bool)
            if op == "!=":
                hit = ~hit
        mask = hit[cols["model"].astype(np.int64)]
    elif fld == "state":
        needle = str(value)
        if op == "~":
            hit = np.array([needle in s for s in STATES], dtype=bool)
        else:
            hit = np.array([s == needle for s in STATES], dtype=bool)
            if op == "!=":
                hit = ~hit
        mask = hit[cols["state"].astype(np.int64)]
    elif fld == "why":
        mask = column("why") == COMPONENTS.index(str(value))
        if op == "!=":
            mask = ~mask & (column("why") >= 0)  # another component, not an unknown one
    else:
        values = column(fld)
        with np.errstate(invalid="ignore"):
            mask = _compare(values, op, float(value)) & ~np.isnan(values)
    return ~mask if clause.negate else mask


def _ids(store: StoreView, rows: int) -> list[str]:
    """The ids of the first ``rows`` rows."""
    return list(itertools.islice(store.ids, rows))


class _ColumnsOnDemand(Mapping[str, Any]):
    """``store.numeric_view(0, rows)``, one column at a time as a filter, sort or figure
    asks for it: a view reads a few of the store's columns, and copying them all as
    float64 would make a live tail's peak memory."""

    def __init__(self, store: StoreView, rows: int) -> None:
        self._store = store
        self._rows = rows
        self._read: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        if name not in self._read:
            self._read[name] = self._store.numeric_view(0, self._rows, (name,))[name]
        return self._read[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._store.columns)

    def __len__(self) -> int:
        return len(self._store.columns)
