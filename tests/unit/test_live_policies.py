"""The live worker's policies, each fed events and clock values as arguments: no thread,
no sleep (publish pacing, heavy-work scheduling, tok/s, backfill, rotation, upkeep)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from sparseety_tui.core.extraction import Extractor
from sparseety_tui.core.figures import DEFAULT_SHAPE, Totals, compute_totals
from sparseety_tui.core.query import ViewQuery, parse_filter
from sparseety_tui.ingest._backfill import Backfills, size_text, tail_cut
from sparseety_tui.ingest._pacing import PublishPacer
from sparseety_tui.ingest._rate import RATE_QUIET_S, RateSampler
from sparseety_tui.ingest._rotation import Incarnations, Lines, file_statuses, interleave
from sparseety_tui.ingest._schedule import HeavySchedule
from sparseety_tui.ingest._upkeep import (
    IDLE_WAIT_S,
    QUIET_FLUSH_S,
    MemoryTrim,
    QuietFiles,
    idle_wait,
)
from sparseety_tui.ingest.heavy import HeavyJob, HeavyResult
from sparseety_tui.sources import FollowBatch, LineSegment, RawLine, SourceEvent


def _record(i: int) -> bytes:
    return json.dumps({"request_id": f"r{i:04d}", "prompt_tokens": 10}).encode() + b"\n"


def _raw(i: int, offset: int = 0) -> RawLine:
    data = _record(i)
    return RawLine(offset, len(data), data.rstrip(b"\n"), False)


# -- publish pacing ------------------------------------------------------------------------


def test_the_first_snapshot_goes_out_at_once_and_nothing_new_publishes_nothing() -> None:
    pacer = PublishPacer(gap_s=0.05)
    assert pacer.should_publish((1,), news=False, now=10.0)
    pacer.published(10.0)
    assert not pacer.should_publish((1,), news=False, now=20.0)  # the same content
    assert not pacer.deferred


def test_news_within_the_gap_is_deferred_until_the_gap_has_passed() -> None:
    pacer = PublishPacer(gap_s=0.05)
    assert pacer.should_publish((1,), news=False, now=10.0)
    pacer.published(10.0)
    assert not pacer.should_publish((2,), news=False, now=10.02)
    assert pacer.deferred
    assert pacer.wait_s(10.02) == pytest.approx(0.03)
    assert pacer.should_publish((2,), news=False, now=10.05)
    pacer.published(10.05)
    assert not pacer.deferred and pacer.wait_s(10.05) == pytest.approx(0.05)


def test_a_result_deferred_is_published_later_even_with_the_same_key() -> None:
    pacer = PublishPacer(gap_s=0.05)
    assert pacer.should_publish((1,), news=False, now=0.0)
    pacer.published(0.0)
    assert not pacer.should_publish((1,), news=True, now=0.01)  # a result, too soon
    # The next pass sees no new result and the same key: the deferred one still goes out.
    assert pacer.should_publish((1,), news=False, now=0.06)
    pacer.published(0.06)
    assert not pacer.should_publish((1,), news=False, now=1.0)


def test_the_gap_counts_from_when_the_read_began_not_from_the_publish() -> None:
    # A pass began reading at 10.0 and published at 10.03 (the read took 0.03 s): the next
    # read is due at 10.05, not at 10.08, so the cycle stays one gap however long reads take.
    pacer = PublishPacer(gap_s=0.05)
    assert pacer.should_publish((1,), news=False, now=10.03)
    pacer.published(10.0)
    assert pacer.wait_s(10.03) == pytest.approx(0.02)
    assert pacer.should_publish((2,), news=False, now=10.05)
    # A read longer than the gap: the next one is due at once.
    pacer.published(10.05)
    assert pacer.wait_s(10.12) == 0.0
    assert pacer.should_publish((3,), news=False, now=10.12)


def test_the_gap_can_be_changed_between_passes() -> None:
    pacer = PublishPacer(gap_s=0.05)
    pacer.published(0.0)
    pacer.gap_s = 0.1
    assert not pacer.should_publish((1,), news=False, now=0.07)
    assert pacer.should_publish((1,), news=False, now=0.1)


# -- heavy-work scheduling -----------------------------------------------------------------


def _result(
    rows: int,
    totals: bool = True,
    query: ViewQuery | None = None,
    cost: float = 0.0,
    error: str | None = None,
) -> HeavyResult:
    extractor = Extractor()
    file = extractor.add_file("x.jsonl")
    extractor.feed(file, [_raw(i) for i in range(rows)])
    job = HeavyJob(extractor.freeze(), DEFAULT_SHAPE, totals=totals, query=query)
    return HeavyResult(job, totals=_EMPTY if totals else None, totals_cost=cost, error=error)


def test_totals_are_due_when_rows_change_and_throttled_by_their_cost() -> None:
    schedule = HeavySchedule(interval_s=0.5, duty=8.0)
    query = schedule.view_query  # arrival order: no view to compute
    assert schedule.due(query, 0, -1, 0.0, busy=False, backfilling=False) == (False, False)
    assert schedule.due(query, 3, 7, 0.0, busy=False, backfilling=False) == (True, False)
    assert schedule.due(query, 3, 7, 0.0, busy=True, backfilling=False) == (False, False)
    schedule.submitted(0.0, totals=True, view=False)
    result = _result(3, cost=0.25)  # 8 x 0.25 s: the next totals after 2 s, not 0.5 s
    schedule.apply(result)
    version = result.job.state.version
    assert schedule.totals_current(query, 3, version)
    assert schedule.due(query, 5, version + 1, 1.0, busy=False, backfilling=False)[0] is False
    assert schedule.due(query, 5, version + 1, 2.0, busy=False, backfilling=False)[0] is True
    assert schedule.pending(query, 5, version + 1, backfilling=False)
    schedule.due_now()  # a backfill finished: due at the next pass, throttle or not
    schedule.submitted(2.0, totals=True, view=False)
    schedule.due_now()
    assert schedule.due(query, 5, version + 1, 2.01, busy=False, backfilling=False)[0]


def test_a_new_filter_is_due_at_once_and_back_to_arrival_order_costs_nothing() -> None:
    schedule = HeavySchedule(interval_s=10.0)
    schedule.submitted(0.0, totals=True, view=True)
    schedule.apply(_result(3))
    version = schedule.fed_version
    narrow = ViewQuery(text="prompt>5", clauses=parse_filter("prompt>5"))
    assert schedule.due(narrow, 3, version, 0.1, busy=False, backfilling=False) == (True, True)
    assert not schedule.view_current(narrow, 3, version, backfilling=False)
    schedule.apply(_result(3, query=narrow))
    assert schedule.view_query is narrow
    plain = ViewQuery()
    assert schedule.arrival_order(plain, 3, backfilling=False)
    assert schedule.view is None and schedule.view_query is plain
    # With a backfilled older part, store order is not log order: a view is needed.
    assert not HeavySchedule(1.0).arrival_order(plain, 3, backfilling=True)
    assert HeavySchedule.needs_view(plain, backfilling=True)


def test_a_failed_computation_is_a_problem_until_one_succeeds() -> None:
    schedule = HeavySchedule(interval_s=1.0)
    schedule.apply(_result(2, error="ValueError: boom"))
    assert schedule.problem == "totals/view computation failed: ValueError: boom"
    assert schedule.totals is None
    schedule.apply(_result(2))
    assert schedule.problem is None and schedule.totals is not None


# -- tok/s ---------------------------------------------------------------------------------


_EMPTY = compute_totals(Extractor(), DEFAULT_SHAPE)


def _totals(tokens: int) -> Totals:
    """Totals whose requests report ``tokens`` prompt tokens and no completion."""
    return replace(_EMPTY, requests=replace(_EMPTY.requests, prompt_tokens=tokens))


def test_tokens_per_second_come_from_totals_at_their_submission_times() -> None:
    rate = RateSampler()
    for at, tokens in ((0.0, 0), (2.0, 1000), (3.0, 1500)):
        rate.submitted(at, (0,))
        rate.totals_came(_totals(tokens), narrows=False)
    assert list(rate.points) == [500.0, 500.0]


def test_history_read_between_samples_is_not_a_rate() -> None:
    rate = RateSampler()
    rate.sample(0.0, (1,), _totals(0))
    rate.sample(1.0, (2,), _totals(10_000_000))  # an older part came in: no sample
    rate.sample(2.0, (2,), _totals(10_000_100))
    assert list(rate.points) == [100.0]


def test_totals_of_a_filter_restart_the_count() -> None:
    rate = RateSampler()
    rate.sample(0.0, (), _totals(0))
    rate.sample(1.0, (), _totals(10), narrows=True)
    rate.sample(2.0, (), _totals(50))
    assert not rate.points


def test_a_quiet_spell_shows_zero_once() -> None:
    rate = RateSampler()
    rate.sample(0.0, (), _totals(0))
    rate.sample(1.0, (), _totals(100))
    assert rate.quiet_due() == 1.0 + RATE_QUIET_S
    assert not rate.sample_quiet(1.0 + RATE_QUIET_S / 2, (), _totals(100), narrows=False)
    assert rate.sample_quiet(1.0 + RATE_QUIET_S, (), _totals(100), narrows=False)
    assert list(rate.points) == [100.0, 0.0]
    assert rate.quiet_due() is None  # 0 shown: nothing more due
    assert not rate.sample_quiet(10.0, (), _totals(100), narrows=False)


def test_no_rate_without_tracking() -> None:
    rate = RateSampler(track=False)
    rate.sample(0.0, (), _totals(0))
    rate.sample(1.0, (), _totals(100))
    assert not rate.points and rate.quiet_due() is None


# -- upkeep --------------------------------------------------------------------------------


def test_quiet_files_are_due_once_after_the_quiet_spell() -> None:
    quiet = QuietFiles()
    quiet.fed(0, 10.0)
    quiet.fed(1, 10.5)
    assert quiet.next_due() == 10.0 + QUIET_FLUSH_S
    assert quiet.due(10.0 + QUIET_FLUSH_S) == [0]
    assert quiet.due(10.0 + QUIET_FLUSH_S) == []
    assert quiet.due(10.5 + QUIET_FLUSH_S) == [1]
    assert quiet.next_due() is None


def test_memory_is_trimmed_once_per_change_and_not_more_often_than_the_interval() -> None:
    calls: list[int] = []
    trim = MemoryTrim(interval_s=2.0, release=lambda: calls.append(1))
    assert not trim.run(0.0, version=0)  # nothing changed since the start
    assert trim.run(0.0, version=1)
    assert trim.next_due(1) is None
    assert not trim.run(1.0, version=2)  # too soon
    assert trim.next_due(2) == pytest.approx(2.0, abs=0.01)
    assert trim.run(2.5, version=2)
    assert len(calls) == 2


def test_the_idle_wait_is_until_the_next_thing_due() -> None:
    assert idle_wait([None, None], now=5.0, needs_polling=False) is None
    assert idle_wait([None], now=5.0, needs_polling=True) == IDLE_WAIT_S
    assert idle_wait([5.2, None, 7.0], now=5.0, needs_polling=False) == pytest.approx(0.2)
    assert idle_wait([4.0], now=5.0, needs_polling=False) == 0.01
    assert idle_wait([60.0], now=5.0, needs_polling=False) == IDLE_WAIT_S


# -- backfill ------------------------------------------------------------------------------


def test_a_big_files_tail_starts_at_a_line_and_its_older_part_is_read_in_steps(
    tmp_path: Path,
) -> None:
    path = tmp_path / "big.jsonl"
    path.write_bytes(b"".join(_record(i) for i in range(200)))
    size = path.stat().st_size
    assert tail_cut(str(path), big_file_bytes=size, tail_window_bytes=100) is None
    assert tail_cut(str(tmp_path / "gone.jsonl"), 0, 100) is None
    found = tail_cut(str(path), big_file_bytes=size // 2, tail_window_bytes=size // 4)
    assert found is not None
    cut, whole = found
    assert whole == size and path.read_bytes()[cut - 1 : cut] == b"\n"
    assert size - size // 4 <= cut < size

    extractor = Extractor()
    backfills = Backfills()
    assert not backfills.any and backfills.settled
    backfill = backfills.add(str(path), extractor.add_file(str(path)), cut)
    assert backfills.of(str(path)) is backfill and backfills.files == {backfill.file}
    steps = 0
    while (stepped := backfills.step(extractor)) is not None:
        assert stepped is backfill
        steps += 1
    assert steps >= 2 and backfill.finished and backfill.done == cut and backfills.settled
    lines_before_cut = path.read_bytes()[:cut].count(b"\n")
    assert extractor.files[backfill.file].lines_total == lines_before_cut
    assert size_text(512) == "512 B" and size_text(3 * 1024 * 1024) == "3.0 MB"


# -- rotation ------------------------------------------------------------------------------


def test_events_apply_between_the_lines_they_came_between() -> None:
    rotated = SourceEvent("rotated", "p", "file rotated, reopened", generation=2, line_index=2)
    closed = SourceEvent("closed", "p", "closed", generation=2, line_index=3)
    batch = FollowBatch(
        "p",
        segments=[LineSegment(1, [_raw(0), _raw(1)]), LineSegment(2, [_raw(2)])],
        events=[rotated, closed],
    )
    items = list(interleave(batch))
    assert [type(item).__name__ for item in items] == [
        "Lines",
        "SourceEvent",
        "Lines",
        "SourceEvent",
    ]
    first, _, second, _ = items
    assert isinstance(first, Lines) and first.generation == 1 and len(first.lines) == 2
    assert isinstance(second, Lines) and second.generation == 2 and len(second.lines) == 1
    assert items[1] is rotated and items[3] is closed


def test_an_event_inside_a_segment_cuts_its_lines_there() -> None:
    event = SourceEvent("truncated", "p", "file truncated", generation=1, line_index=1)
    batch = FollowBatch("p", segments=[LineSegment(1, [_raw(0), _raw(1)])], events=[event])
    items = list(interleave(batch))
    assert [len(i.lines) if isinstance(i, Lines) else i.kind for i in items] == [1, "truncated", 1]


def test_each_incarnation_reads_into_its_own_file(tmp_path: Path) -> None:
    path = str(tmp_path / "server.jsonl")
    extractor = Extractor()
    incarnations = Incarnations(extractor)
    first = incarnations.follow(path)
    older = extractor.add_file(path)  # a backfilled older part of the first incarnation
    assert path in incarnations
    assert incarnations.file_for(path, 0, "missing") == first
    assert incarnations.file_for(path, 1, "new", older) == first
    extractor.feed(first, [_raw(0)])
    rotated = SourceEvent("rotated", path, "file rotated, reopened", generation=2)
    assert incarnations.apply(path, rotated, older)  # shown on the status line
    second = incarnations.file_for(path, 2, "new", older)
    assert second not in (first, older) and incarnations.parts(path) == [first, second]
    assert extractor.files[first].superseded and extractor.files[older].superseded
    assert not incarnations.apply(path, SourceEvent("opened", path, "opened", generation=2))
    extractor.feed(second, [_raw(1), _raw(2)])
    state = extractor.freeze()
    (status,) = file_statuses(state, incarnations, Backfills(), {path: 0})
    assert status.parts == (first, second) and status.incarnations == (1, 2)
    assert status.lines == 3
