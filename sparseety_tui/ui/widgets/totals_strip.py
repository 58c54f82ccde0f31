"""The running-totals strip: requests, tokens, tokens/s, skips by kind, latency, errors.

Every number comes from ``core.figures.compute_totals`` (the same function ``summary``
uses; its typed ``Totals``), computed by the ingest worker; this widget only lays the items out, packing them
into as many lines as the width needs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual.widget import Widget

from sparseety_tui.core.figures import (
    ErrorTotals,
    RequestTotals,
    SkipKind,
    SkippedTotals,
    Totals,
    worst_imbalance,
)
from sparseety_tui.ui.fmt import fmt_count, fmt_seconds
from sparseety_tui.ui.safe_text import escape
from sparseety_tui.ui.widgets.fit import fit_height
from sparseety_tui.ui.widgets.sparkline import sparkline

Item = list[tuple[str, str]]  # (text, component class suffix) pieces of one item

#: The skip kinds the strip shows: (label, which figures of ``Totals.skipped``).
SKIP_KINDS: tuple[tuple[str, Callable[[SkippedTotals], SkipKind]], ...] = (
    ("cached", lambda s: s.cached_tokens),
    ("evicted", lambda s: s.evicted_kv_positions),
    ("masked", lambda s: s.masked_kv_positions),
    ("dropped", lambda s: s.dropped_expert_slots),
)


def pct(ratio: float | None) -> str:
    return "—" if ratio is None else f"{ratio * 100:.1f}%"


def secs(value: float | None) -> str:
    return "—" if value is None else fmt_seconds(float(value))


def count(value: float | None) -> str:
    return "—" if value is None else fmt_count(int(value))


def skip_item(req: RequestTotals) -> Item:
    """The skip ratio, marked "≥" while some request's cache use is unknown, and over
    how many requests when not all of them could be costed (summary_view says the same)."""
    ratio = req.skip_ratio
    mark = "≥" if ratio is not None and req.with_cache_unknown else ""
    item: Item = [("skip ", "label"), (mark + pct(ratio), "skip")]
    covered, total = req.with_effective_compute, req.count
    if ratio is not None and covered < total:
        item.append((f" ({fmt_count(covered)} of {fmt_count(total)} req)", "dim"))
    return item


def totals_items(
    totals: Totals | None,
    rate: Sequence[float],
    unparsed: int,
    show_rate: bool = True,
    partial: bool = False,
) -> list[Item]:
    """``partial``: a big file's older part is still being read, so every total is over
    the part read so far (its newest lines): said, so they are not taken for the file's."""
    if totals is None:
        return [[("reading…", "dim")]]
    req = totals.requests
    states = req.by_state
    items: list[Item] = []
    state_bits = " ".join(
        f"{label} {fmt_count(states[name])}"
        for name, label in (
            ("running", "running"),
            ("finished", "finished"),
            ("end_unlogged", "ended unlogged"),
            ("failed", "failed"),
            ("aborted", "aborted"),
        )
        if states.get(name)
    )
    items.append(
        [("requests ", "label"), (fmt_count(req.count), "value")]
        + ([(f" ({state_bits})", "dim")] if state_bits and len(states) > 1 else [])
        + ([(" so far: older part loading", "warn")] if partial else [])
    )
    items.append([("prompt ", "label"), (count(req.prompt_tokens), "value")])
    items.append([("compl ", "label"), (count(req.completion_tokens), "value")])
    items.append([("cached ", "label"), (count(req.cached_tokens), "value")])
    if show_rate:
        if rate:
            items.append(
                [
                    ("tok/s ", "label"),
                    (sparkline(rate, 12), "spark"),
                    (f" {rate[-1]:,.0f}", "value"),
                ]
            )
        else:
            items.append([("tok/s ", "label"), ("—", "value")])
    items.append(skip_item(req))
    for label, kind in SKIP_KINDS:
        items.append([(f"{label} ", "label"), (pct(kind(totals.skipped).ratio), label)])
    lat, ttft = totals.latency_s, totals.ttft_s
    items.append([("lat p50/95 ", "label"), (f"{secs(lat.p50)}/{secs(lat.p95)}", "value")])
    items.append([("ttft p50/95 ", "label"), (f"{secs(ttft.p50)}/{secs(ttft.p95)}", "value")])
    experts = totals.experts
    if experts is not None:
        worst, models = worst_imbalance(experts)
        item = [
            ("experts max/mean ", "label"),
            ("—" if worst is None else f"{worst:.2f}×", "value"),
        ]
        if models > 1:  # each model's own, the worst of them: never models added together
            item.append((f" (worst of {models} models)", "dim"))
        items.append(item)
    items.append([("unparsed ", "label"), (fmt_count(unparsed), "warn" if unparsed else "value")])
    items.extend(error_items(totals.errors))
    return items


#: Error classes that get an item of their own when the logs have any (the rest are
#: in ``errors``); 5xx always shows, as errors do.
_OWN_ITEMS = (("oom", "oom"), ("retraction", "retract"), ("engine_dead", "dead"))


def error_items(errors: ErrorTotals | None) -> list[Item]:
    """``errors 760 · 5xx 2,104``, then OOM, retractions and dead engines when there are
    any (the strip wraps them onto another line when the width runs out). ``errors``
    counts every class but 5xx; an unknown count (no totals yet) is "—", never 0."""
    if errors is None:
        return [[("errors ", "label"), ("—", "value")]]
    by_kind = errors.by_kind
    http = by_kind.get("http_5xx", 0)
    others = errors.count - http
    items: list[Item] = [
        [
            ("errors ", "label"),
            (fmt_count(others), "error" if others else "value"),
            (" · ", "dim"),
            ("5xx ", "label"),
            (fmt_count(http), "error" if http else "value"),
        ]
    ]
    for kind, label in _OWN_ITEMS:
        if by_kind.get(kind):
            items.append([(f"{label} ", "label"), (fmt_count(by_kind[kind]), "error")])
    return items


class TotalsStrip(Widget):
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "totals-strip--label",
        "totals-strip--value",
        "totals-strip--dim",
        "totals-strip--spark",
        "totals-strip--skip",
        "totals-strip--warn",
        "totals-strip--error",
        "totals-strip--cached",
        "totals-strip--evicted",
        "totals-strip--masked",
        "totals-strip--dropped",
    }

    DEFAULT_CSS = """
    TotalsStrip { padding: 0 1; background: $panel; }
    TotalsStrip > .totals-strip--label { color: $foreground 60%; }
    TotalsStrip > .totals-strip--value { text-style: bold; }
    TotalsStrip > .totals-strip--dim { color: $foreground 60%; }
    TotalsStrip > .totals-strip--spark { color: $secondary; }
    TotalsStrip > .totals-strip--skip { text-style: bold; color: $accent; }
    TotalsStrip > .totals-strip--warn { text-style: bold; color: $warning; }
    TotalsStrip > .totals-strip--error { text-style: bold; color: $error; }
    TotalsStrip > .totals-strip--cached { text-style: bold; color: $success; }
    TotalsStrip > .totals-strip--evicted { text-style: bold; color: $error; }
    TotalsStrip > .totals-strip--masked { text-style: bold; color: $warning; }
    TotalsStrip > .totals-strip--dropped { text-style: bold; color: $accent; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._items: list[Item] = totals_items(None, (), 0)
        self._fit()

    def set_items(self, items: list[Item]) -> None:
        if items != self._items:
            self._items = items
            self._fit()
            self.refresh()

    def on_resize(self) -> None:
        self._fit()  # another width packs the items into another number of lines

    def _fit(self) -> None:
        # As many rows as lines (see widgets/fit.py for why not ``height: auto``).
        fit_height(self, len(self._lines(max(20, self.size.width))))

    def _lines(self, width: int) -> list[list[Item]]:
        lines: list[list[Item]] = [[]]
        used = 0
        for item in self._items:
            size = sum(len(text) for text, _ in item)
            if lines[-1] and used + 2 + size > width:
                lines.append([])
                used = 0
            used += size + (2 if lines[-1] else 0)
            lines[-1].append(item)
        return lines

    def render(self) -> Text:
        styles: dict[str, Style] = {}
        out = Text(no_wrap=True, overflow="crop", end="")
        for n, line in enumerate(self._lines(max(20, self.size.width))):
            if n:
                out.append("\n")
            for i, item in enumerate(line):
                if i:
                    out.append("  ")
                for text, cls in item:
                    if cls not in styles:
                        styles[cls] = self.get_component_rich_style(f"totals-strip--{cls}")
                    out.append(text, styles[cls])
        return out


def split_groups(totals: Totals | None, split: str, paths: Sequence[str] = ()) -> list[str]:
    """The group names of a split (``core.figures.SPLITS``), in the order the key cycles;
    by file, every followed path (``paths``), with requests or not (engine stats only)."""
    if totals is None or split == "none":
        return []
    if split == "engine":
        return list(totals.engine.by_engine) if totals.engine is not None else []
    names = [group.name for group in totals.splits.of(split)]
    return sorted(set(names) | set(paths)) if split == "file" else names


def split_items(
    totals: Totals | None, split: str, index: int, short: Mapping[str, str]
) -> list[Item]:
    """The split's selected group as totals items, first in the strip: its name, which
    of how many (``X``: next), and its own figures; ``short``: a path's short name."""
    names = split_groups(totals, split, list(short))
    if totals is None or not names:
        return [] if split == "none" else [[(f"split by {split}: ", "label"), ("none", "dim")]]
    index %= len(names)
    name = names[index]
    shown = short.get(name, name) if split == "file" else name
    if split == "engine":  # "TP0 (/long/path/b/server.log)": the log's short name
        for path, brief in short.items():
            if name.endswith(f" ({path})"):
                shown = f"{name[: -len(path) - 3]} ({brief})"
                break
    items: list[Item] = [
        [(f"{split} ", "label"), (escape(shown), "value"), (f" {index + 1}/{len(names)}", "dim")]
    ]
    if split == "engine" and totals.engine is not None:
        engine = totals.engine.by_engine[name]
        last = engine.last
        items.append([("stats lines ", "label"), (fmt_count(engine.stats_lines), "value")])
        for label, key in (("running ", "running"), ("queue ", "queued"), ("waiting ", "waiting")):
            if last.get(key) is not None:
                items.append([(label, "label"), (count(last[key]), "value")])
        if last.get("kv_usage") is not None:
            items.append([("KV ", "label"), (pct(last["kv_usage"]), "value")])
        return items
    group = next((g for g in totals.splits.of(split) if g.name == name), None)
    if group is None:  # a log with no request (engine stats only)
        items.append([("requests ", "label"), ("0", "value")])
        return items
    items.append([("requests ", "label"), (fmt_count(group.requests), "value")])
    items.append([("prompt ", "label"), (count(group.prompt_tokens), "value")])
    items.append([("compl ", "label"), (count(group.completion_tokens), "value")])
    items.append([("lat p50 ", "label"), (secs(group.latency_p50_s), "value")])
    if group.failed:
        items.append([("failed ", "label"), (fmt_count(group.failed), "error")])
    return items
