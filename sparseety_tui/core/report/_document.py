"""The ``summary --json`` document as types: the totals (``core.figures.Totals``) with
what ``summary`` adds around them (files, the window and filter it was narrowed to, the
tokenizer and cost model), and one ``to_json`` giving the document ``summary --json``
prints, key for key."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sparseety_tui.core.figures import SlowTotals, TimingTotals, Totals, from_json
from sparseety_tui.core.query import NOT_FILTERED, TimeWindow, WindowRows
from sparseety_tui.formats import utc_text

SCHEMA_VERSION = 1

#: What a window leaves whole: lines are counted per file; heat is aggregated over every
#: request, not kept per request; errors are listed whole (``errors_in`` counts the
#: window's).
NOT_WINDOWED = ("files", "experts", "dropped_experts", "head_skips", "errors")
#: The time a request is placed in a window by.
REQUEST_TIME = "received, else finished"
_UTC = "%Y-%m-%dT%H:%M:%SZ"


@dataclass(frozen=True, slots=True)
class WindowBound:
    """One side of a ``--since``/``--until`` window: as given, and resolved (None: a
    relative bound with no time in the data)."""

    text: str
    utc: str | None
    epoch: float | None

    @classmethod
    def of(cls, text: str, ts: float | None) -> WindowBound:
        utc = utc_text(ts, _UTC) if ts is not None else None
        return cls(text, utc, None if ts is None else round(ts, 3))

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "utc": self.utc, "epoch": self.epoch}


@dataclass(frozen=True, slots=True)
class WindowAnchor:
    """The newest time in the logs read, which relative bounds count from."""

    utc: str | None
    epoch: float

    def to_json(self) -> dict[str, Any]:
        return {"utc": self.utc, "epoch": self.epoch, "is": "newest time in the logs read"}


@dataclass(frozen=True, slots=True)
class SummaryWindow:
    """``window``: the window resolved (``anchor``: the newest log time relative bounds
    count from), how the requests split, whether the engine figures hold every stats
    line in it, and the errors in it."""

    since: WindowBound | None
    until: WindowBound | None
    anchor: WindowAnchor | None
    requests_in: int
    requests_outside: int
    requests_without_time: int
    engine_complete: bool
    errors_in: int

    @classmethod
    def of(
        cls, window: TimeWindow, rows: WindowRows, engine_complete: bool, errors_in: int
    ) -> SummaryWindow:
        spec = window.spec
        since = spec.since if spec else None
        until = spec.until if spec else None
        anchor = window.anchor
        return cls(
            since=None if since is None else WindowBound.of(since.text, window.since),
            until=None if until is None else WindowBound.of(until.text, window.until),
            anchor=None
            if anchor is None
            else WindowAnchor(utc_text(anchor, _UTC), round(anchor, 3)),
            requests_in=int(len(rows.rows)),
            requests_outside=rows.outside,
            requests_without_time=rows.without_time,
            engine_complete=engine_complete,
            errors_in=errors_in,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "since": None if self.since is None else self.since.to_json(),
            "until": None if self.until is None else self.until.to_json(),
            "anchor": None if self.anchor is None else self.anchor.to_json(),
            "requests_in": self.requests_in,
            "requests_outside": self.requests_outside,
            "requests_without_time": self.requests_without_time,
            "request_time": REQUEST_TIME,
            "not_windowed": list(NOT_WINDOWED),
            "engine_complete": self.engine_complete,
            "errors_in": self.errors_in,
        }


@dataclass(frozen=True, slots=True)
class SummaryFilter:
    """``filter``: the ``--filter`` expression and the requests it kept of all."""

    expression: str
    requests: int
    of: int

    def to_json(self) -> dict[str, Any]:
        return {
            "expression": self.expression,
            "requests": self.requests,
            "of": self.of,
            "not_filtered": list(NOT_FILTERED),
        }


@dataclass(frozen=True, slots=True)
class SummaryDocument:
    """The ``summary --json`` document. ``files``: each file's report as JSON (its
    lines by kind, samples of what was not parsed, its tokenizer)."""

    files: tuple[Mapping[str, Any], ...]
    totals: Totals
    window: SummaryWindow | None
    filter: SummaryFilter | None
    tokenizer: str
    tokenizer_source: str
    cost_model: str
    #: Where the requests' time went (``timing``) and what made the slowest slow
    #: (``slow``): the document's last keys, so that a document without them reads the
    #: same up to there (core.figures).
    timing: TimingTotals | None = None
    slow: SlowTotals | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SummaryDocument:
        """The document whose ``to_json`` is ``data``: read back after a step that works
        on the JSON alone (redaction), so that what shows it reads attributes too."""
        window, found = data.get("window"), data.get("filter")
        timing, slow = data.get("timing"), data.get("slow")
        return cls(
            files=tuple(data["files"]),
            totals=Totals.from_json(data),
            window=None if window is None else from_json(SummaryWindow, window),
            filter=None if found is None else from_json(SummaryFilter, found),
            tokenizer=data["tokenizer"],
            tokenizer_source=data["tokenizer_source"],
            cost_model=data["cost_model"],
            timing=None if timing is None else TimingTotals.from_json(timing),
            slow=None if slow is None else from_json(SlowTotals, slow),
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "files": [dict(f) for f in self.files],
            **self.totals.to_json(),
        }
        if self.window is not None:
            out["window"] = self.window.to_json()
        if self.filter is not None:
            out["filter"] = self.filter.to_json()
        out["tokenizer"] = self.tokenizer
        out["tokenizer_source"] = self.tokenizer_source
        out["cost_model"] = self.cost_model
        if self.timing is not None:
            out["timing"] = self.timing.to_json()
        if self.slow is not None:
            out["slow"] = self.slow.to_json()
        return out
