"""Multi-engine servers: engine stats are fleet figures (issue #10, item 1), and the stats
fields that were parsed and dropped reach ``summary --json`` (item 6).

Each log is built here from real line shapes (log-formats.md, tests/data/real_logs) and read
through the CLI, as a user would."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from sparseety_tui.cli.main import run
from sparseety_tui.core.figures._fleet import fleet_points, fold
from sparseety_tui.core.store._series import EngineSeries
from sparseety_tui.events import StatsPayload

VLLM = (
    "(APIServer pid=1) INFO 07-29 06:22:{s:02d} [loggers.py:310] Engine {e:03d}: Avg prompt "
    "throughput: {p} tokens/s, Avg generation throughput: {g} tokens/s, Running: {run} reqs, "
    "Waiting: {wait} reqs, GPU KV cache usage: {kv}%, Prefix cache hit rate: {hit}%"
)
SGL_PREFILL = (
    "[2026-01-05 10:00:{s:02d} {ranks}] Prefill batch, #new-seq: 2, #new-token: {new}, "
    "#cached-token: {cached}, token usage: 0.31, #running-req: 5, #queue-req: 1, "
    "input throughput (token/s): {tput}, cuda graph: False"
)
SGL_DECODE = (
    "[2026-01-05 10:00:{s:02d} {ranks}] Decode batch, #running-req: {run}, #token: 11179, "
    "token usage: {kv}, cuda graph: True, gen throughput (token/s): {gen}, #queue-req: {q}"
)


def summary(capsys: pytest.CaptureFixture[str], tmp_path: Path, lines: list[str]) -> Any:
    path = tmp_path / "server.log"
    path.write_text("\n".join(lines) + "\n")
    assert run(["summary", "--json", str(path)]) == 0
    doc = orjson.loads(capsys.readouterr().out)
    by_kind = doc["files"][0]["lines"]["by_kind"]
    assert sum(by_kind.values()) == len(lines)  # every line counted once
    return doc["engine"]


def test_vllm_data_parallel_engines_are_summed_and_ratios_averaged(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    lines = []
    for s in (0, 10):  # two intervals, each engine one line
        lines.append(VLLM.format(s=s, e=0, p=10.0, g=983.0, run=41, wait=112, kv=40.0, hit=10.0))
        lines.append(VLLM.format(s=s, e=1, p=20.0, g=983.0, run=41, wait=113, kv=50.0, hit=30.0))
    engine = summary(capsys, tmp_path, lines)
    assert engine["engines"] == 2
    assert engine["stats_lines"] == 4
    assert set(engine["by_engine"]) == {"0", "1"}
    mean = engine["mean"]
    assert mean["running"] == 82  # 41 + 41, not their average
    assert mean["waiting"] == 225
    assert mean["generation_throughput"] == 1966
    assert mean["prompt_throughput"] == 30
    assert mean["kv_usage"] == 0.45  # averaged over engines
    assert mean["prefix_cache_hit_rate"] == 0.2
    last = engine["last"]
    assert (last["running"], last["waiting"], last["kv_usage"]) == (82, 225, 0.45)
    [minute] = engine["per_minute_mean"]
    assert (minute["engines"], minute["running"], minute["kv_usage"]) == (2, 82, 0.45)
    one = engine["by_engine"]["1"]
    assert one["mean"]["waiting"] == 113 and one["last"]["engine"] == "1"
    assert one["stats_lines"] == 2
    assert engine["replicated_reports_folded"] == 0


def test_engine_missing_from_a_minute_is_not_counted_in_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    lines = [
        VLLM.format(s=0, e=0, p=0.0, g=1.0, run=4, wait=0, kv=10.0, hit=0.0),
        VLLM.format(s=0, e=1, p=0.0, g=1.0, run=6, wait=0, kv=30.0, hit=0.0),
        VLLM.format(s=0, e=0, p=0.0, g=1.0, run=4, wait=0, kv=10.0, hit=0.0).replace(
            "06:22:00", "06:23:00"
        ),
    ]
    engine = summary(capsys, tmp_path, lines)
    first, second = engine["per_minute_mean"]
    assert (first["engines"], first["running"], first["kv_usage"]) == (2, 10, 0.2)
    assert (second["engines"], second["running"], second["kv_usage"]) == (1, 4, 0.1)


def test_attention_context_parallel_ranks_log_one_batch_counted_once(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    lines = []
    for s, new in ((0, 8192), (1, 8192), (2, 4000)):
        for cp in range(8):  # every ATTN_CP rank logs the same batch, its own throughput timer
            ranks = f"ATTN_CP{cp} TP{cp}"
            lines.append(SGL_PREFILL.format(s=s, ranks=ranks, new=new, cached=0, tput=900 + cp))
    for cp in range(8):
        lines.append(
            SGL_DECODE.format(s=3, ranks=f"ATTN_CP{cp} TP{cp}", run=5, kv=0.3, gen=99, q=0)
        )
    engine = summary(capsys, tmp_path, lines)
    assert engine["engines"] == 1
    assert engine["prefill_tokens"]["new"] == 8192 + 8192 + 4000  # not 8 times that
    assert engine["replicated_reports_folded"] == 4 * 7
    assert list(engine["by_engine"]) == ["ATTN_CP0 TP0"]  # the rank that stands for it
    assert engine["mean"]["running"] == 5
    assert engine["mean"]["prompt_throughput"] == 900  # rank 0's own figures, not a mix
    assert engine["last"]["generation_throughput"] == 99


def test_dp_attention_ranks_schedule_different_requests_and_are_summed(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    lines = [
        SGL_PREFILL.format(s=0, ranks="DP0 TP0 EP0", new=100, cached=50, tput=10.0),
        SGL_PREFILL.format(s=0, ranks="DP1 TP1 EP1", new=300, cached=50, tput=30.0),
        SGL_DECODE.format(s=1, ranks="DP0 TP0 EP0", run=43, kv=0.2, gen=385.0, q=1),
        SGL_DECODE.format(s=1, ranks="DP1 TP1 EP1", run=43, kv=0.4, gen=384.94, q=2),
    ]
    engine = summary(capsys, tmp_path, lines)
    assert engine["engines"] == 2 and set(engine["by_engine"]) == {"DP0", "DP1"}
    assert engine["prefill_tokens"] == {"new": 400, "cached": 100, "cached_ratio": 0.2}
    assert engine["last"]["running"] == 86 and engine["last"]["queued"] == 3
    assert engine["last"]["generation_throughput"] == 769.94
    assert engine["last"]["kv_usage"] == pytest.approx(0.3)
    assert engine["replicated_reports_folded"] == 0


def test_aggregated_lines_are_not_added_to_per_engine_lines(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    per_engine = [
        VLLM.format(s=0, e=0, p=0.0, g=100.0, run=3, wait=1, kv=10.0, hit=0.0),
        VLLM.format(s=0, e=1, p=0.0, g=100.0, run=5, wait=1, kv=30.0, hit=0.0),
    ]
    aggregated = VLLM.format(s=0, e=0, p=0.0, g=200.0, run=8, wait=2, kv=20.0, hit=0.0).replace(
        "Engine 000:", "2 Engines Aggregated:"
    )
    engine = summary(capsys, tmp_path, [*per_engine, aggregated])
    assert engine["engines"] == 2 and engine["mean"]["running"] == 8
    assert engine["aggregated_reports_skipped"] == 1 and "all" not in engine["by_engine"]
    only = summary(capsys, tmp_path, [aggregated])
    assert only["engines"] == 2  # the line says it sums two engines
    assert only["mean"]["running"] == 8 and only["aggregated_reports_skipped"] == 0


def test_dropped_vllm_fields_reach_the_summary(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    line = (
        "(APIServer pid=1) INFO 07-29 06:22:{s:02d} [loggers.py:310] Engine 000: Avg prompt "
        "throughput: 657.5 tokens/s, Avg generation throughput: 1.1 tokens/s, Running: 1 reqs, "
        "Waiting: 4 reqs, Deferred: 2 reqs, Preemptions: {pre}, GPU KV cache usage: 22.0%, "
        "Prefix cache hit rate: 72.2%, Corrupted: 1 reqs, External prefix cache hit rate: "
        "12.5%, MM cache hit rate: {mm}%"
    )
    engine = summary(
        capsys, tmp_path, [line.format(s=0, pre=3, mm=75.0), line.format(s=10, pre=1, mm=25.0)]
    )
    mean = engine["mean"]
    assert mean["mm_cache_hit_rate"] == 0.5
    assert mean["external_prefix_cache_hit_rate"] == 0.125
    assert (mean["deferred"], mean["waiting"]) == (2, 4)
    assert engine["last"]["mm_cache_hit_rate"] == 0.25 and engine["last"]["preemptions"] == 1
    assert engine["totals"] == {"preemptions": 4, "corrupted": 2}
    assert engine["per_minute_mean"][0]["preemptions"] == 2


def test_sglang_pd_fields_reach_the_summary(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    lines = [
        # prefill node, sglang #11648 shape
        "[2025-10-15 14:44:32 DP14 TP14 EP14] Prefill batch. #new-seq: 2, #new-token: 68, "
        "#cached-token: 0, token usage: 0.01, #unbootstrapped-req: 3, #queue-req: 0, "
        "#transferring-req: 1, input throughput (token/s): 1326.00, ",
        # decode node, sglang #6017 shape with the queues of scheduler_metrics_mixin.py
        "[2025-10-15 14:44:33 DP8 TP8] Decode batch. #running-req: 43, #token: 0, token usage: "
        "0.00, pre-allocated usage: 0.25, #prealloc-req: 4, #transfer-req: 2, #retracted-req: 1, "
        "cuda graph: True, gen throughput (token/s): 385.00, #queue-req: 0",
        # before ~Oct 2025 the prefill queues were #prealloc-req / #inflight-req
        "[2025-06-06 20:31:47 DP9 TP9] Prefill batch. #new-seq: 1, #new-token: 5, "
        "#cached-token: 0, token usage: 0.01, #prealloc-req: 6, #inflight-req: 7, "
        "input throughput (token/s): 10.00",
    ]
    engine = summary(capsys, tmp_path, lines)
    by = engine["by_engine"]
    assert (by["DP14"]["last"]["bootstrap_queue"], by["DP14"]["last"]["transferring"]) == (3, 1)
    decode = by["DP8"]["last"]
    assert (decode["prealloc_queue"], decode["transfer_queue"], decode["retracted"]) == (4, 2, 1)
    assert decode["preallocated_usage"] == 0.25
    assert (by["DP9"]["last"]["bootstrap_queue"], by["DP9"]["last"]["transferring"]) == (6, 7)
    assert engine["mean"]["bootstrap_queue"] == 9  # summed over the two prefill engines


def test_fold() -> None:
    assert fold("DP3 TP3 EP3") == "DP3"
    assert fold("ATTN_CP3 TP3") == fold("ATTN_CP0 TP0") == fold("TP0") == fold("CP2 TP2")
    assert fold("DP0 ATTN_CP1 TP1") == "DP0"
    assert fold("0") == "0" and fold("all") == "all" and fold("") == ""
    assert fold("XY1 TP1") == "XY1"  # an unknown rank name is kept: never merged on a guess


def test_copy_is_not_changed_by_later_lines() -> None:
    series = EngineSeries()
    point: StatsPayload = {"ts": 60.0, "engine": "0", "running": 2, "kv_usage": 0.5}
    series.add(point)
    copy = series.copy()
    series.add({**point, "running": 4})  # type: ignore[typeddict-item]
    series.add({**point, "ts": 120.0})  # type: ignore[typeddict-item]
    assert copy.labels["0"].per_minute[60][:4].tolist() == [0, 0, 0, 0]  # no throughput
    assert copy.labels["0"].sums["running"] == [2.0, 1] and copy.count == 1
    assert sorted(copy.labels["0"].per_minute) == [60]
    assert series.labels["0"].sums["running"] == [8.0, 3]
    minute = series.labels["0"].per_minute[60]
    running = 2 * 4  # the slot of "running" in MINUTE_FIELDS
    assert minute[running : running + 2].tolist() == [6.0, 2.0]
    assert copy.labels["0"].per_minute[60][running : running + 2].tolist() == [2.0, 1.0]


def test_fleet_points_follow_each_engine_once() -> None:
    points: list[StatsPayload] = [
        {"engine": "DP0 TP0", "running": 2},
        {"engine": "DP1 TP1", "running": 3},
        {"engine": "DP1 TP2", "running": 3},  # a replica of DP1: nothing changes
        {"engine": "DP0 TP0", "running": 4},
    ]
    followed = fleet_points(points)
    assert [p["running"] for p in followed.fleet] == [2, 5, 7]
    # the rows under the sparklines follow the same ranks
    assert followed.engines == {"DP0": {"running": 4}, "DP1": {"running": 3}}


def test_fleet_points_keep_an_engines_stats_beside_its_acceptance_line() -> None:
    points: list[StatsPayload] = [
        {"phase": "engine", "running": 5, "kv_usage": 0.5},
        {"phase": "spec", "spec_accept_rate": 0.8},
    ]
    followed = fleet_points(points)
    assert followed.fleet[-1] == {"running": 5, "kv_usage": 0.5, "spec_accept_rate": 0.8}
    assert list(followed.engines) == ["unlabelled"]


def test_two_servers_logs_are_two_engines_each(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Two servers each log `Engine 000` (and SGLang `TP0`): given together, each log's
    engines are its own, summed into the fleet, not one engine averaged."""
    a, b = tmp_path / "a.log", tmp_path / "b.log"
    a.write_text(VLLM.format(s=0, e=0, p=10.0, g=100.0, run=4, wait=1, kv=20.0, hit=0.0) + "\n")
    b.write_text(VLLM.format(s=1, e=0, p=30.0, g=300.0, run=6, wait=3, kv=40.0, hit=0.0) + "\n")
    assert run(["summary", "--json", str(a), str(b)]) == 0
    engine = orjson.loads(capsys.readouterr().out)["engine"]
    assert engine["engines"] == 2
    assert set(engine["by_engine"]) == {f"0 ({a})", f"0 ({b})"}
    assert (engine["last"]["running"], engine["last"]["waiting"]) == (10, 4)
    assert engine["last"]["kv_usage"] == pytest.approx(0.3)
    assert "source" not in engine["by_engine"][f"0 ({a})"]["last"]
    c, d = tmp_path / "c.log", tmp_path / "d.log"
    c.write_text(SGL_DECODE.format(s=0, ranks="TP0", run=3, kv=0.2, gen=50.0, q=0) + "\n")
    d.write_text(SGL_DECODE.format(s=0, ranks="TP0", run=5, kv=0.4, gen=70.0, q=1) + "\n")
    assert run(["summary", "--json", str(c), str(d)]) == 0
    engine = orjson.loads(capsys.readouterr().out)["engine"]
    assert (engine["engines"], engine["replicated_reports_folded"]) == (2, 0)
    assert engine["last"]["running"] == 8
