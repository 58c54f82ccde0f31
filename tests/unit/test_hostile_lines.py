"""Property test: random lines made of fragments of real lines never break the tool.

Issue #9 acceptance. Every parser of ``formats/_registry.py`` and the Extractor end to end
(with each ``--format``, live and batch paths) get random lines built from fragments of
the real corpus (real lines cut at spaces, ``|``, ``=``, ``,`` and brackets) mixed with
digits of every Unicode category, huge and non-finite numbers, long whitespace runs,
brackets, ``|``, ``=``, NULs, control characters and invalid UTF-8 (tests/support/hostile.py).
Asserted:

- a parser never raises, and never needs its own catch-all (``parser error``): a bug
  hidden behind the catch-all would still cost the line;
- every line is counted once (the counts by kind add up to the lines fed), no line needs
  the Extractor's last-resort guard either, and the store stays consistent.

What these lines cost per byte is timed in tests/integration/test_hostile_lines_timing.py.

The lines come from a seeded generator (the same lines every run); a failure names the
batch's seed and the line.
"""

from __future__ import annotations

import importlib
import random
from collections.abc import Iterator
from pathlib import Path

from hostile import random_line

from sparseety_tui.core.extraction._extractor import Extractor
from sparseety_tui.core.figures._costmodel import DEFAULT_SHAPE
from sparseety_tui.core.figures._totals import compute_totals
from sparseety_tui.events import LineKind
from sparseety_tui.formats import _registry as registry
from sparseety_tui.ingest.batch import ingest_file
from sparseety_tui.sources import iter_lines

EVENT_TYPES = {"request", "token", "stats", "error", "meta", "expert_count"}
#: Reasons that say a line needed a catch-all: a parser's (``ServerLogParser._failed``)
#: or the Extractor's (``_run_lines``). Neither may be what handled a line here.
CAUGHT = ("parser error", "not merged", "event completed here not merged")
#: Batches of random lines (1 to 24 lines each) for the parsers, and for the Extractor.
PARSER_BATCHES = 2000
EXTRACTOR_BATCHES = 150


def batches(count: int) -> Iterator[tuple[int, list[bytes]]]:
    for seed in range(count):
        rng = random.Random(seed)
        yield seed, [random_line(rng) for _ in range(rng.randint(1, 24))]


def known_kinds(name: str) -> set[str]:
    """The shared kinds, and the family's own (``KINDS`` of its package, when it has one)."""
    module = importlib.import_module(registry.FAMILIES[name].__class__.__module__)
    shared = {value for key, value in vars(LineKind).items() if key.isupper()}
    return shared | set(getattr(module, "KINDS", ()))


def test_parsers_never_raise_on_fragments_of_real_lines() -> None:
    for seed, lines in batches(PARSER_BATCHES):
        for name, family in registry.FAMILIES.items():
            parser = family.new_parser()
            kinds = known_kinds(name)
            for line in lines:
                where = f"{name} parser, batch {seed}, line {line[:300]!r}"
                kind, event = parser.parse(line)
                assert kind in kinds, where
                if kind == LineKind.UNPARSED:
                    assert parser.last_reason, where
                    reason = parser.last_reason
                    assert not reason.startswith(CAUGHT), f"{reason}: {where}"
                assert event is None or event[0] in EVENT_TYPES, where
            parser.finish()
            assert all(event[0] in EVENT_TYPES for event in parser.pending)
            family.sniff(lines)


def assert_every_line_counted_once(extractor: Extractor, lines: list[bytes], where: str) -> None:
    (state,) = extractor.files
    assert state.lines_total == len(lines), where
    assert sum(state.by_kind.values()) == len(lines), f"{state.by_kind}: {where}"
    caught = [d for d in state.diagnostics if d.reason.startswith(CAUGHT)]
    assert not caught, f"{caught[0]}: {where}"
    store = extractor.store
    sizes = {len(column) for column in store.columns.values()}
    assert sizes | {len(store.offset), len(store.length)} == {len(store.ids)}, where


def test_extractor_counts_every_line_once_with_each_format(tmp_path: Path) -> None:
    path = tmp_path / "hostile.log"
    for seed, lines in batches(EXTRACTOR_BATCHES):
        path.write_bytes(b"\n".join(lines) + b"\n")
        for name in registry.FAMILIES:
            where = f"--format {name}, batch {seed}"
            batch = Extractor(forced_format=name)
            ingest_file(batch, str(path))
            assert_every_line_counted_once(batch, lines, where)
            live = Extractor(forced_format=name)
            file = live.add_file(str(path))
            live.feed(file, iter_lines(str(path)))
            live.finish_file(file)
            assert_every_line_counted_once(live, lines, where)
            assert live.files[0].by_kind == batch.files[0].by_kind, where
            compute_totals(live.freeze(), DEFAULT_SHAPE)  # the numbers it took are usable
