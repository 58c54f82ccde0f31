"""The interfaces of formats/_base.py: which parsers a split reader may use, and what they
answer at a range's edges."""

from __future__ import annotations

import pytest

from sparseety_tui.formats import BoundaryNotes, RangeAware
from sparseety_tui.formats import _registry as registry


@pytest.mark.parametrize("name", ["vllm", "sglang"])
def test_server_log_parsers_are_range_aware(name: str) -> None:
    parser = registry.family_by_name(name).new_parser()
    assert isinstance(parser, RangeAware)
    assert not parser.tracebacks.active


@pytest.mark.parametrize("name", ["trace", "kv"])
def test_stateless_parsers_are_not_range_aware(name: str) -> None:
    # Their files are split at any line start; nothing is carried across lines.
    assert not isinstance(registry.family_by_name(name).new_parser(), RangeAware)


def test_vllm_range_notes_the_year_it_inferred_and_replays_it() -> None:
    family = registry.family_by_name("vllm")
    parser = family.new_parser(reference_time=1_767_225_600.0)  # 2026-01-01 UTC
    assert isinstance(parser, RangeAware)
    notes = parser.begin_range((2025, 12))
    assert isinstance(notes, BoundaryNotes)
    parser.parse(b"INFO 01-02 10:00:00 [logger.py:43] Received request r1: prompt: 'a'")
    parser.finish()
    assert notes.year_probe == ("stamp", b"01-02 10:00:00", None)
    assert notes.year_after_probe == (2026, 1) == parser.year_state()
    assert notes.first_inserted == ["r1"]
    assert parser.recent_ids() == (["r1"], 1)
    probe = family.new_parser(reference_time=1_767_225_600.0)
    assert isinstance(probe, RangeAware)
    assert probe.replay_year_probe(notes.year_probe, (2025, 12)) == (2026, 1)
    assert probe.replay_year_probe(notes.year_probe, (2024, 12)) == (2025, 1)


def test_sglang_carries_nothing_but_its_tracebacks() -> None:
    parser = registry.family_by_name("sglang").new_parser()
    assert isinstance(parser, RangeAware)
    assert parser.begin_range((2025, 12)) is None
    parser.parse(b"[2026-01-02 10:00:00 TP0] Traceback (most recent call last):")
    assert parser.tracebacks.active
    assert parser.year_state() is None
    assert parser.recent_ids() is None
    assert parser.replay_year_probe(("wrap", b"2026-01-02T10:00:00Z"), (None, 0)) is None


def test_every_family_declares_its_fast_paths() -> None:
    # The Extractor reads these attributes directly: None means "no such fast path".
    for family in registry.FAMILIES.values():
        assert family.scan_requests is None or callable(family.scan_requests)
    assert callable(registry.family_by_name("trace").decode_simple_block)
    for name in ("kv", "vllm", "sglang"):
        family = registry.family_by_name(name)
        assert family.decode_simple_block is None
        assert family.scan_requests is None
