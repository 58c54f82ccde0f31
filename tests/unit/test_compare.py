"""`compare`: matching, each side equal to `summary` on it, deltas, paired intervals."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from cli_helpers import summary_json
from compare_helpers import BASE_TS, trace_records, write_trace

from sparseety_tui.cli.main import run
from sparseety_tui.core.compare._bootstrap import Statistic, paired_intervals
from sparseety_tui.core.compare._matching import match_requests, pair_keys


def compare_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    assert run(["compare", "--json", *args]) == 0
    document: dict[str, Any] = orjson.loads(capsys.readouterr().out)
    return document


#: Where each figure is in `summary --json` (written out here, not taken from the code).
SUMMARY_PATHS = {
    "requests": ("requests", "count"),
    "logical_tokens": ("requests", "logical_tokens"),
    "effective_compute_tokens": ("requests", "effective_compute_tokens"),
    "sparse_skipped_tokens": ("requests", "sparse_skipped_tokens"),
    "skipped_cached_tokens": ("skipped", "cached_tokens", "value"),
    "skipped_inactive_expert_slots": ("skipped", "inactive_expert_slots", "value"),
    "skip_ratio": ("requests", "skip_ratio"),
    "compute_vs_nominal": ("skipped", "compute_vs_nominal"),
    "latency_p50_s": ("latency_s", "p50"),
    "latency_p95_s": ("latency_s", "p95"),
    "latency_p99_s": ("latency_s", "p99"),
    "ttft_p50_s": ("ttft_s", "p50"),
    "ttft_p99_s": ("ttft_s", "p99"),
    "cache_hit_rate": ("requests", "cache_hit_rate"),
    "errors": ("errors", "count"),
}


def _at(doc: dict[str, Any], path: tuple[str, ...]) -> Any:
    for key in path:
        doc = doc[key]
    return doc


@pytest.fixture
def dense_sparse(tmp_path: Path) -> tuple[Path, Path]:
    dense = write_trace(tmp_path / "dense.jsonl", trace_records(topk=8))
    sparse = write_trace(tmp_path / "sparse.jsonl", trace_records(topk=2))
    return dense, sparse


def test_dense_vs_sparse_matches_by_id_and_each_side_is_its_summary(
    capsys: pytest.CaptureFixture[str], dense_sparse: tuple[Path, Path]
) -> None:
    dense, sparse = dense_sparse
    doc = compare_json(capsys, str(dense), str(sparse))
    assert doc["match_by"] == "request_id"
    assert (doc["matched"], doc["only_baseline"], doc["only_candidate"]) == (200, 0, 0)
    for side, path in (("baseline", dense), ("candidate", sparse)):
        alone = summary_json(capsys, str(path))
        figures = doc[side]["figures"]
        for name, where in SUMMARY_PATHS.items():
            assert figures[name] == _at(alone, where), (side, name)
        layers = alone["experts"]["layers"] if alone["experts"] else []
        for layer, value in zip(
            layers, alone["experts"]["imbalance_max_over_mean"] if layers else []
        ):
            assert figures[f"expert_imbalance_layer_{layer}"] == value
    base_sum = summary_json(capsys, str(dense))["requests"]["effective_compute_tokens"]
    cand_sum = summary_json(capsys, str(sparse))["requests"]["effective_compute_tokens"]
    effective = doc["delta"]["effective_compute_tokens"]
    assert effective["abs"] < 0
    assert effective["abs"] == pytest.approx(cand_sum - base_sum, abs=0.01)
    assert effective["rel"] == pytest.approx((cand_sum - base_sum) / base_sum, abs=1e-6)
    # Every request was matched, so the paired total is the whole delta, and the interval
    # of a change every request shares is far from 0.
    assert effective["paired"]["pairs"] == 200
    assert effective["paired"]["abs"] == pytest.approx(effective["abs"], abs=0.01)
    lo, hi = effective["ci95"]
    assert lo <= effective["abs"] <= hi < 0
    # Sparse routing skips 6 of 8 experts: the inactive slots go up, never down.
    assert doc["delta"]["skipped_inactive_expert_slots"]["abs"] > 0
    assert set(doc) >= {
        "baseline",
        "candidate",
        "match_by",
        "matched",
        "only_baseline",
        "only_candidate",
        "delta",
        "regressions",
    }


def test_known_latency_shift_is_inside_the_interval_and_identical_sides_give_zero(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    base = write_trace(tmp_path / "base.jsonl", trace_records(topk=2))
    shifted = write_trace(tmp_path / "shift.jsonl", trace_records(topk=2, latency_shift=0.1))
    doc = compare_json(capsys, str(base), str(shifted))
    for q in ("p50", "p95", "p99"):
        lo, hi = doc["delta"][f"latency_{q}_s"]["ci95"]
        assert lo <= 0.1 <= hi, q
        assert doc["delta"][f"latency_{q}_s"]["abs"] == pytest.approx(0.1, abs=1e-5)
    # Every matched request got slower: each is a regression, latency the worst part.
    assert doc["regressions_total"] == 200
    first = doc["regressions"][0]
    assert first["worst"] == "latency"
    assert first["baseline_id"] == first["candidate_id"]
    assert first["latency_s"]["abs"] == pytest.approx(0.1, abs=1e-5)
    same = compare_json(capsys, str(base), str(base))
    for name, entry in same["delta"].items():
        if "ci95" in entry:
            lo, hi = entry["ci95"]
            assert lo <= 0 <= hi, name
        assert entry["abs"] in (0, None), name
    assert same["regressions"] == [] and same["regressions_total"] == 0


def test_with_unmatched_requests_the_interval_is_the_pairs_not_the_sides(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same workload, the candidate cut to 40 of 50 requests: the sides' delta is the 10
    missing requests, the pairs' delta is 0. The interval is the pairs': it belongs beside
    ``paired.abs``, never beside ``abs`` (where [0, 0] read as "−24 %, beyond noise")."""
    records = trace_records(n=50)
    base = write_trace(tmp_path / "base.jsonl", records)
    cand = write_trace(tmp_path / "cand.jsonl", records[:40])
    doc = compare_json(capsys, str(base), str(cand))
    assert (doc["matched"], doc["only_baseline"]) == (40, 10)
    logical = doc["delta"]["logical_tokens"]
    assert logical["abs"] < 0 and "ci95" not in logical
    assert logical["paired"]["abs"] == 0 and logical["paired"]["ci95"] == [0, 0]


def test_interval_of_a_noisy_shift_holds_the_shift_and_is_seeded() -> None:
    import numpy as np

    rng = np.random.default_rng(3)
    base = rng.lognormal(0.0, 0.5, 400)
    cand = base + 0.1 + rng.normal(0.0, 0.05, 400)
    stats = {
        "p50": Statistic("quantile", "latency_s", q=0.5),
        "sum": Statistic("sum", "latency_s"),
    }
    b, c = {"latency_s": base}, {"latency_s": cand}
    ci = paired_intervals(stats, b, c, 500, seed=7)
    lo, hi = ci["p50"]  # type: ignore[misc]
    assert lo <= 0.1 <= hi
    assert hi - lo < 0.1  # an interval, not everything
    total_lo, total_hi = ci["sum"]  # type: ignore[misc]
    assert total_lo <= 40.0 <= total_hi  # 400 pairs x 0.1 s
    assert paired_intervals(stats, b, c, 500, seed=7) == ci
    assert paired_intervals(stats, b, c, 500, seed=8) != ci


def test_quantile_by_counts_is_the_nearest_rank_of_the_resample() -> None:
    import numpy as np

    from sparseety_tui.core.compare._bootstrap import BLOCK, _quantiles
    from sparseety_tui.core.figures._totals import sorted_quantiles

    rng = np.random.default_rng(5)
    values = rng.normal(size=50)
    order = np.argsort(values, kind="stable")
    idx = rng.integers(0, 50, size=(30, 50))
    counts = np.stack([np.bincount(row, minlength=51) for row in idx]).astype(np.int32)
    padded = np.concatenate([order, np.full(BLOCK - 50, 50)])  # to the last column, 0
    got = _quantiles(counts, (padded, values[order]), [0.95])[0]
    for row, value in zip(idx, got):
        # sorted_quantiles rounds to 5 decimals
        assert value == pytest.approx(sorted_quantiles(values[row].copy()).p95, abs=1e-5)


def test_one_logs_two_windows_agree_with_summary_since_until(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    first = trace_records(n=120, topk=8, seed=2, id_prefix="a")
    second = trace_records(n=120, topk=2, seed=2, id_prefix="b", start=BASE_TS + 600)
    log = write_trace(tmp_path / "run.jsonl", first + second)
    a, b, c = "2026-11-30T12:00", "2026-11-30T12:09", "2026-11-30T12:30"
    doc = compare_json(
        capsys, str(log), "--baseline-window", f"{a}..{b}", "--candidate-window", f"{b}..{c}"
    )
    for side, (since, until) in (("baseline", (a, b)), ("candidate", (b, c))):
        alone = summary_json(capsys, str(log), "--since", since, "--until", until)
        for name, where in SUMMARY_PATHS.items():
            if name == "errors":
                assert doc[side]["figures"][name] == alone["window"]["errors_in"]
                continue
            assert doc[side]["figures"][name] == _at(alone, where), (side, name)
        assert doc[side]["requests"] == alone["requests"]["count"] > 0
    # Ids differ and the records carry no prompt: nothing to pair on.
    assert doc["match_by"] == "workload" and doc["matched"] == 0


def test_match_by_prompt_when_ids_differ(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    base = write_trace(tmp_path / "a.jsonl", trace_records(n=50, id_prefix="x", with_prompt=True))
    records = trace_records(n=50, topk=2, id_prefix="y", with_prompt=True)[:40]
    cand = write_trace(tmp_path / "b.jsonl", records)
    doc = compare_json(capsys, str(base), str(cand))
    assert doc["match_by"] == "prompt"
    assert (doc["matched"], doc["only_baseline"], doc["only_candidate"]) == (40, 10, 0)
    out = orjson.dumps(doc).decode()
    assert "prompt number" not in out  # prompts are matched by digest, never printed
    if doc["regressions"]:
        assert doc["regressions"][0]["baseline_id"].startswith("x-")
        assert doc["regressions"][0]["candidate_id"].startswith("y-")


def test_pair_keys_pairs_repeats_in_order_and_never_none() -> None:
    left, right = pair_keys(["a", "b", "a", None, "c"], ["a", None, "a", "a", "b"])
    assert list(zip(left, right)) == [(0, 0), (1, 4), (2, 2)]
    called = []
    match = match_requests(["p", "q"], ["q", "r"], lambda: called.append(1) or ([], []))
    assert match.by == "request_id" and match.matched == 1 and not called


def test_bad_arguments_are_one_line_errors(tmp_path: Path) -> None:
    log = write_trace(tmp_path / "one.jsonl", trace_records(n=5))
    assert run_main(["compare", str(log)]) == 2
    assert run_main(["compare", str(log), "--baseline-window", "nonsense..10m"]) == 2


def run_main(argv: list[str]) -> int:
    from sparseety_tui.cli.main import main

    with pytest.raises(SystemExit) as stop:
        main(argv)
    code = stop.value.code
    return int(code) if isinstance(code, int) else 1


SAMPLES = Path(__file__).resolve().parents[2] / "sample_logs"


def test_the_sample_comparison_top8_vs_top2(capsys: pytest.CaptureFixture[str]) -> None:
    dense = str(SAMPLES / "compare" / "dense_topk8.jsonl")
    sparse = str(SAMPLES / "compare" / "sparse_topk2.jsonl")
    doc = compare_json(capsys, dense, sparse)
    assert (doc["match_by"], doc["matched"]) == ("request_id", 16)
    for side, path in (("baseline", dense), ("candidate", sparse)):
        alone = summary_json(capsys, path)
        for name, where in SUMMARY_PATHS.items():
            assert doc[side]["figures"][name] == _at(alone, where), (side, name)
        layers, imbalance = alone["experts"]["layers"], alone["experts"]["imbalance_max_over_mean"]
        assert layers == [1, 2, 3]  # the tiny model's MoE layers, from the routing
        for layer, value in zip(layers, imbalance):
            assert doc[side]["figures"][f"expert_imbalance_layer_{layer}"] == value
    # All 8 experts run: every layer's load is even; top-2 routing is not.
    assert all(doc["baseline"]["figures"][f"expert_imbalance_layer_{n}"] == 1 for n in (1, 2, 3))
    assert all(doc["delta"][f"expert_imbalance_layer_{n}"]["abs"] > 0 for n in (1, 2, 3))
    assert doc["delta"]["effective_compute_tokens"]["abs"] < 0
    assert doc["delta"]["latency_p50_s"]["abs"] < 0


def test_directory_mode_reads_only_top_level_files(capsys: pytest.CaptureFixture[str]) -> None:
    document = summary_json(capsys, str(SAMPLES))
    read = [Path(f["path"]) for f in document["files"]]
    assert read and all(path.parent == SAMPLES for path in read)  # not sample_logs/compare/
    assert len(read) == len([p for p in SAMPLES.iterdir() if p.suffix in (".jsonl", ".log")])


def test_match_by_prompt_over_many_records_and_repeated_prompts(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Thousands of records (read in bulk, by the native scanner when built): each
    prompt's lines are re-read for its digest; a prompt sent twice pairs in order."""
    for name, prefix, shift in (("a", "x", 0.0), ("b", "y", 0.1)):
        records = [
            {
                "request_id": f"{prefix}-{i}",
                "prompt": f"question {i % 2500}",  # every prompt twice
                "prompt_tokens": 10,
                "completion_tokens": 5,
                "latency_s": round(0.5 + i / 10000 + shift, 4),
            }
            for i in range(5000)
        ]
        write_trace(tmp_path / f"{name}.jsonl", records)
    doc = compare_json(capsys, str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"))
    assert (doc["match_by"], doc["matched"]) == ("prompt", 5000)
    first = doc["regressions"][0]
    # x-i pairs with y-i: the k-th sending of a prompt with the k-th.
    assert first["baseline_id"][2:] == first["candidate_id"][2:]
    assert first["latency_s"]["abs"] == pytest.approx(0.1, abs=1e-4)


def test_rich_report_shows_both_sides_regressions_and_ids_literally(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "240")  # no line wrapped inside a path
    base = trace_records(n=30, topk=2)
    cand = trace_records(n=30, topk=2, latency_shift=0.2)
    for records in (base, cand):
        records[0]["request_id"] = "evil\x1b[31m-id"
    a = write_trace(tmp_path / "a.jsonl", base)
    b = write_trace(tmp_path / "b.jsonl", cand)
    assert run(["compare", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert f"baseline: {a}" in out and f"candidate: {b}" in out
    assert "matched 30 by request id" in out
    assert "Regressions (20 of 30" in out
    assert "latency_p95_s" in out and "effective_compute_tokens" in out
    assert "\x1b[31m" not in out and "evil\\x1b[31m-id" in out
