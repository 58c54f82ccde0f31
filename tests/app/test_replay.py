"""Replay (`tail --replay`, `demo`): lines come at their log times, pause, step, seek, speed;
the logs are read in place and never written; the app's keys drive the clock."""

from __future__ import annotations

import hashlib
import math
import time
from dataclasses import replace
from pathlib import Path

import orjson
import pytest
from apphelpers import REPO, async_test, settle

from sparseety_tui.core.extraction._extractor import Extractor
from sparseety_tui.core.figures._costmodel import DEFAULT_SHAPE
from sparseety_tui.core.figures._document import Totals
from sparseety_tui.core.figures._totals import compute_totals
from sparseety_tui.core.tokens._tokens import TokenCounter
from sparseety_tui.ingest.batch import Options, ingest_paths
from sparseety_tui.ingest.replay import (
    ReplayError,
    line_time,
    open_replay,
    play_times,
    sample_paths,
)
from sparseety_tui.ingest.snapshot import LiveOptions
from sparseety_tui.ingest.worker import IngestWorker
from sparseety_tui.ui.app import AppConfig, SparseetyApp

T0 = 1796040000.0  # 2026-11-30T12:00:00Z


class FakeWall:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def write_log(path: Path, n: int = 20, gap: float = 6.0) -> Path:
    """``n`` request records ``gap`` log seconds apart, one line without a time after each
    fifth (it plays with the line before it)."""
    lines = []
    for i in range(n):
        record = {
            "request_id": f"r{i:02d}",
            "prompt_tokens": 10 + i,
            "completion_tokens": 5,
            "latency_s": 0.5,
            "ts": T0 + gap * i,
        }
        lines.append(orjson.dumps(record))
        if i % 5 == 4:
            lines.append(b'{"request_id": "u%d", "prompt_tokens": 3}' % i)
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def released_ids(source: object) -> list[str]:
    ids = []
    for _path, batch in source.poll_all():  # type: ignore[attr-defined]
        for segment in batch.segments:
            for chunk in segment.lines:
                ids += [orjson.loads(line)["request_id"] for line in chunk.data.splitlines()]
    return ids


@pytest.mark.parametrize(
    "lines",
    [
        # vLLM: no year in the stamp (the parser infers it from the file's mtime), local zone
        [
            b"INFO 02-22 06:35:18 [logger.py:43] Received request cmpl-a: prompt: 'hi', "
            b"params: SamplingParams(n=1, max_tokens=8), prompt_token_ids: [1, 2, 3], lora_request: None.",
            b"INFO 02-22 06:35:20 [logger.py:43] Received request cmpl-b: prompt: 'yo', "
            b"params: SamplingParams(n=1, max_tokens=8), prompt_token_ids: [4, 5], lora_request: None.",
        ],
        # SGLang: a stamp with a year but no zone (the host's)
        [
            b"[2026-02-22 06:35:18] Receive: obj=GenerateReqInput(rid='a', text='hi')",
            b"[2026-02-22 06:35:20] Receive: obj=GenerateReqInput(rid='b', text='yo')",
        ],
    ],
    ids=["vllm", "sglang"],
)
def test_replay_times_are_the_parsers_times(tmp_path: Path, lines: list[bytes]) -> None:
    """The replay bar's clock and ``--from`` read a line's stamp as its format's parser
    does (the table's times): a vLLM stamp played in the year 2000 made the bar show
    2000-02-22 and an absolute ``--from`` miss every line."""
    import os

    log = tmp_path / "server.log"
    log.write_bytes(b"\n".join(lines) + b"\n")
    march = 1772323200.0  # 2026-03-01T00:00:00Z: the year is the mtime's
    os.utime(log, (march, march))
    extractor = ingest_paths(Options(), [str(log)])
    store = extractor.store
    parsed = sorted(float(store.get("received_ts", row)) for row in range(len(store)))
    assert len(parsed) == 2 and parsed[0] > 1.7e9
    source = open_replay([str(log)])
    assert list(source.files[0].times) == parsed


def test_line_times_from_records_and_server_stamps() -> None:
    assert line_time(b'{"ts": "2026-11-30T12:00:01Z"}') == T0 + 1
    assert line_time(b'{"received_ts": 1796040002.5, "x": 1}') == T0 + 2.5
    # A server line's stamp without a zone is the host's local time, as its parser reads it.
    local = time.mktime((2026, 11, 30, 12, 0, 3, 0, 0, -1)) + 0.25
    assert line_time(b"INFO 2026-11-30 12:00:03,250 started") == local
    vllm = line_time(b"INFO 11-30 12:00:04 [engine.py:1] Avg prompt throughput")
    assert vllm is not None and line_time(b"INFO 11-30 12:00:05 [x]") == vllm + 1
    assert line_time(b"no time here") is None
    assert line_time(b'{"request_id": "a"}') is None
    # Lines are never reordered: an earlier stamp plays with the line before it.
    assert list(play_times([None, 5.0, None, 3.0, 9.0]) or ()) == [5.0, 5.0, 5.0, 5.0, 9.0]
    assert list(play_times([math.nan, 2.0]) or ()) == [2.0, 2.0]  # NaN: no time
    assert play_times([None, None]) is None


def test_lines_come_at_their_log_time_at_the_speed_asked(tmp_path: Path) -> None:
    log = write_log(tmp_path / "run.jsonl")
    before = hashlib.sha256(log.read_bytes()).hexdigest(), log.stat().st_mtime_ns
    wall = FakeWall()
    source = open_replay([str(log)], speed=10, clock=wall)
    assert source.origin == T0 and source.end == T0 + 6 * 19
    assert released_ids(source) == ["r00"]
    wall.now += 1.2  # 12 log seconds at x10
    assert released_ids(source) == ["r01", "r02"]
    assert released_ids(source) == []  # nothing new until the clock moves
    # The next line is due 0.6 s of wall time later (r03 at +18 s, clock at +12 s).
    assert source.clock.wall_until(T0 + 18) == pytest.approx(0.6)
    source.clock.set_speed(20)
    assert source.clock.wall_until(T0 + 18) == pytest.approx(0.3)
    wall.now += 0.3
    assert released_ids(source) == ["r03"]
    # Pause: the wall moves on, the log does not.
    assert source.clock.toggle() is True
    wall.now += 100
    assert released_ids(source) == []
    assert source.clock.wall_until(T0 + 24) is None
    # Step: the next line(s), by their time; the untimed line plays with the one before.
    assert source.step() == T0 + 24
    assert released_ids(source) == ["r04", "u4"]
    # Seek forward: everything up to the target at once.
    source.seek(T0 + 6 * 9)
    assert released_ids(source) == ["r05", "r06", "r07", "r08", "r09", "u9"]
    status = source.status()
    assert status["paused"] and status["lines"] == 12 and status["of"] == 24
    assert (hashlib.sha256(log.read_bytes()).hexdigest(), log.stat().st_mtime_ns) == before


def test_from_plays_history_at_once_and_chunks_carry_true_offsets(tmp_path: Path) -> None:
    log = write_log(tmp_path / "run.jsonl")
    data = log.read_bytes()
    wall = FakeWall()
    source = open_replay([str(log)], speed=1, start=T0 + 30, clock=wall)
    ((_path, batch),) = source.poll_all()
    chunk = batch.segments[0].lines[0]
    assert chunk.offset == 0 and data.startswith(chunk.data)
    assert chunk.data.count(b"\n") == 7  # r00..r05, u4
    wall.now += 6
    ((_path, batch),) = source.poll_all()
    chunk = batch.segments[0].lines[0]
    assert data[chunk.offset : chunk.offset + len(chunk.data)] == chunk.data
    assert orjson.loads(chunk.data)["request_id"] == "r06"


def test_rewound_source_starts_again_at_the_time(tmp_path: Path) -> None:
    log = write_log(tmp_path / "run.jsonl")
    wall = FakeWall()
    source = open_replay([str(log)], speed=5, clock=wall)
    source.seek(source.end)
    assert len(released_ids(source)) == 24
    again = source.rewound(T0 + 12)
    assert again.clock.speed == 5
    assert released_ids(again) == ["r00", "r01", "r02"]


def test_untimed_file_plays_a_line_a_second_and_each_aligns(tmp_path: Path) -> None:
    timed = write_log(tmp_path / "a.jsonl", n=3)
    plain = tmp_path / "b.log"
    plain.write_bytes(b"one\ntwo\nthree\n")
    wall = FakeWall()
    source = open_replay([str(timed), str(plain)], speed=1, clock=wall)
    first = {path: batch.segments[0].lines[0].data for path, batch in source.poll_all()}
    assert first[str(plain)] == b"one\n"
    wall.now += 1
    later = {path: batch.segments[0].lines[0].data for path, batch in source.poll_all()}
    assert later == {str(plain): b"two\n"}
    with pytest.raises(ReplayError):
        open_replay([str(timed)], speed=0)
    # align="each": files of different days start together, at the newest one's start.
    later = tmp_path / "c.jsonl"
    later.write_bytes(
        b'{"request_id": "c0", "ts": %d}\n{"request_id": "c1", "ts": %d}\n'
        % (T0 + 86400, T0 + 86402)
    )
    both = open_replay([str(timed), str(later)], speed=1, align="each", clock=wall)
    assert both.origin == T0 + 86400
    assert sorted(released_ids(both)) == ["c0", "r00"]
    wall.now += 2
    assert released_ids(both) == ["c1"]  # r01 is 6 s after r00


def test_a_finished_replay_gives_the_batch_totals(tmp_path: Path) -> None:
    log = write_log(tmp_path / "run.jsonl")
    source = open_replay([str(log)], speed=1)
    source.seek(source.end)
    worker = IngestWorker(
        Extractor(tokens=TokenCounter()),
        DEFAULT_SHAPE,
        LiveOptions(paths=(str(log),), start="start", track_rate=False),
        source=source,
    )
    worker.start()
    try:
        assert worker.drain(10)
        state = worker.snapshot.state
        assert state is not None
        live = compute_totals(state, DEFAULT_SHAPE)
    finally:
        worker.stop()
    batch = compute_totals(ingest_paths(Options(), [str(log)]), DEFAULT_SHAPE)
    assert live.requests == batch.requests and live.latency_s == batch.latency_s


def test_demo_plays_the_top_level_sample_logs_only() -> None:
    paths = sample_paths(REPO / "sample_logs")
    assert paths and all(Path(p).parent == REPO / "sample_logs" for p in paths)
    assert all(p.endswith((".jsonl", ".log")) for p in paths)
    with pytest.raises(ReplayError, match="sample logs not found"):
        sample_paths(REPO / "no-such-dir")


def replay_app(log: Path, speed: float = 1.0) -> SparseetyApp:
    source = open_replay([str(log)], speed=speed)
    source.clock.pause()
    config = AppConfig(
        live=LiveOptions(paths=(str(log),), start="start", track_rate=False), replay=source
    )
    return SparseetyApp(config)


@async_test
async def test_app_keys_pause_step_seek_and_speed(tmp_path: Path) -> None:
    log = write_log(tmp_path / "run.jsonl")
    app = replay_app(log)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        assert app.replay is not None
        assert len(app.worker.snapshot.state.store) == 1  # paused at the first line
        await pilot.press("full_stop")
        await settle(pilot)
        assert len(app.worker.snapshot.state.store) == 2
        await pilot.press("right_square_bracket")  # +1 min: r02..r11 (+u4, u9)
        await settle(pilot)
        assert len(app.worker.snapshot.state.store) == 14
        bar = app.main_screen.replay_bar
        app._show_replay()
        assert "12:01:06 UTC" in bar._text and "paused" in bar._text
        await pilot.press("greater_than_sign")
        assert app.replay.clock.speed == 2
        await pilot.press("left_square_bracket")  # back 1 min: a new worker, read again
        await settle(pilot)
        assert app.replay.clock.now() == T0 + 6
        assert len(app.worker.snapshot.state.store) == 2
        assert app.replay.clock.speed == 2 and app.replay.clock.paused
        await pilot.press("J")
        await pilot.pause()
        await pilot.press(*"12:01:30", "enter")  # seek to a time, as --from reads it
        await settle(pilot)
        assert app.replay.clock.now() == T0 + 90
        assert len(app.worker.snapshot.state.store) == 19  # r00..r15, u4, u9, u14
        await pilot.press("J")
        await pilot.pause()
        await pilot.press(*"nonsense", "enter")
        await settle(pilot)
        assert app.replay.clock.now() == T0 + 90  # a bad time changes nothing
        await pilot.press("P")
        assert not app.replay.clock.paused


@async_test
async def test_a_backward_seek_keeps_details_redacted(tmp_path: Path) -> None:
    """A backward seek starts a new worker and a new detail cache: under --redact the new
    cache redacts too (it was a plain one, and details opened after it showed the text)."""
    from sparseety_tui.core.redact._policy import RedactSettings, make_redactor

    records = [
        {"request_id": f"r{i}", "prompt": f"mail ann{i}@example.com", "completion": "ok",
         "prompt_tokens": 4, "completion_tokens": 1, "ts": T0 + 6 * i}
        for i in range(20)
    ]  # fmt: skip
    log = tmp_path / "run.jsonl"
    log.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    source = open_replay([str(log)])
    source.clock.pause()
    redactor = make_redactor(RedactSettings(mode="on"), b"k" * 32)
    live = LiveOptions(paths=(str(log),), start="start", track_rate=False)
    app = SparseetyApp(AppConfig(live=live, replay=source, redactor=redactor))
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        await pilot.press("right_square_bracket")  # +1 min
        await settle(pilot)
        await pilot.press("left_square_bracket")  # back: a new worker and detail cache
        await settle(pilot)
        state = app.worker.snapshot.state
        assert state is not None and len(state.store) >= 1
        detail = app.details.get(state, 0)
        shown = "".join(t.text for t in detail.tokens)
        assert "example.com" not in shown and "[email:" in shown


@async_test
async def test_replay_keys_do_nothing_without_a_replay(tmp_path: Path) -> None:
    log = write_log(tmp_path / "run.jsonl")
    app = SparseetyApp(AppConfig(live=LiveOptions(paths=(str(log),), start="start")))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert app.check_action("replay_step", ()) is False
        await pilot.press("full_stop", "P")
        await settle(pilot)
        assert len(app.worker.snapshot.state.store) == 24


def test_tail_replay_options_from_the_command_line(tmp_path: Path) -> None:
    from sparseety_tui.cli.main import build_parser
    from sparseety_tui.cli.tui import replay_source
    from sparseety_tui.ingest.batch import InputError

    log = write_log(tmp_path / "run.jsonl")
    parse = build_parser().parse_args
    source = replay_source(parse(["tail", str(log), "--replay", "--from", "12:00:30"]), (str(log),))
    assert source.clock.now() == pytest.approx(T0 + 30, abs=0.5)
    # Relative: back from the logs' end (12:01:54), not from the clock.
    source = replay_source(parse(["tail", str(log), "--replay", "--from", "1m"]), (str(log),))
    assert source.clock.now() == pytest.approx(T0 + 114 - 60, abs=0.5)
    with pytest.raises(InputError, match="speed"):
        replay_source(parse(["tail", str(log), "--replay", "--speed", "0"]), (str(log),))
    with pytest.raises(InputError, match="not a finished file"):
        replay_source(
            parse(["tail", str(tmp_path / "gone.jsonl"), "--replay"]),
            (str(tmp_path / "gone.jsonl"),),
        )


def test_tokens_per_second_of_a_replay_are_per_log_second(tmp_path: Path) -> None:
    log = write_log(tmp_path / "run.jsonl")
    speed = [10.0]
    worker = IngestWorker(
        Extractor(tokens=TokenCounter()),
        DEFAULT_SHAPE,
        LiveOptions(paths=(str(log),), start="start"),
        source=open_replay([str(log)], speed=10),
        log_seconds_per_second=lambda: speed[0],
    )
    empty = compute_totals(Extractor(), DEFAULT_SHAPE)

    def totals_of(tokens: int) -> Totals:
        return replace(empty, requests=replace(empty.requests, prompt_tokens=tokens))

    for at, tokens in ((0.0, 0), (1.0, 1000), (2.0, 1500)):
        worker.rate.sample(at, (), totals_of(tokens))
    # 1,000 tokens in a wall second at x10 are 100 tokens a second of the log.
    assert list(worker.rate.points) == [100.0, 50.0]
    speed[0] = 0.0  # paused: the log's time stands still, no rate to show
    worker.rate.sample(3.0, (), totals_of(1500))
    assert list(worker.rate.points) == [100.0, 50.0]


async def _replay_midway(pilot: object) -> None:
    await settle(pilot)
    await pilot.press("J")  # type: ignore[attr-defined]
    await pilot.pause()  # type: ignore[attr-defined]
    await pilot.press(*"2026-11-30T12:00:06Z", "enter")  # type: ignore[attr-defined]
    await settle(pilot)


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_replay_screen(snap_compare: object, size: tuple[int, int]) -> None:
    """The main screen of a replay paused midway: the replay bar says where and how."""
    paths = ("tests/app/data/trace.jsonl",)  # relative: the same on every machine
    source = open_replay(paths, speed=10)
    source.clock.pause()
    config = AppConfig(
        live=LiveOptions(paths=paths, start="start", track_rate=False), replay=source, theme="dark"
    )
    app = SparseetyApp(config)
    assert snap_compare(app, terminal_size=size, run_before=_replay_midway)  # type: ignore[operator]
