"""Pilot tests of the splits: the file column, the engine panel per log, the expert heatmap
one model at a time (``m``), and the split key (``x`` / ``X``)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

from apphelpers import async_test, make_app, settle

from sparseety_tui.ingest.worker import ENGINE_POINTS
from sparseety_tui.ui.widgets.engine_panel import EnginePanel, warning_counts
from sparseety_tui.ui.widgets.heatmap import Heatmap
from sparseety_tui.ui.widgets.request_table import RequestTable
from sparseety_tui.ui.widgets.totals_strip import TotalsStrip

REAL = Path("tests/data/real_logs")
VLLM_DP = REAL / "vllm_0.14_dp8_engine000_001_mm_cache_waiting_36748.log"
SGLANG_CACHE = REAL / "sglang_0.3_prefill_cache_hit_rate_chunked_2255.log"
SGLANG_PD = REAL / "sglang_oct2025_pd_prefill_unbootstrapped_transferring_dp_tp_ep_11648.log"
WIDE = (160, 48)


def header(app: Any) -> str:
    return "".join(s.text for s in app.main_screen.query_one(RequestTable).render_line(0))


def row_text(app: Any, y: int) -> str:
    return "".join(s.text for s in app.main_screen.query_one(RequestTable).render_line(y))


def panel(app: Any) -> str:
    return str(app.main_screen.query_one(EnginePanel).render().plain)


def strip(app: Any) -> str:
    return str(app.main_screen.query_one(TotalsStrip).render().plain)


def heatmap(app: Any) -> Heatmap:
    return app.main_screen.query_one("#experts-heatmap", Heatmap)


@async_test
async def test_file_column_names_logs_of_the_same_name_apart(tmp_path: Path) -> None:
    data = Path("tests/app/data/kv.log").read_bytes()
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "server.log").write_bytes(
            data.replace(b"req_id=", b"req_id=" + name.encode())
        )
    paths = (str(tmp_path / "a" / "server.log"), str(tmp_path / "b" / "server.log"))
    app = make_app(paths=paths)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert " file " in header(app)
        rows = [row_text(app, y) for y in range(1, 20)]
        assert any("a/server.log" in row for row in rows) or any(
            "b/server.log" in row for row in rows
        )
        table = app.main_screen.query_one(RequestTable)
        names = {table._file_names[f] for f in range(len(table._file_names))}
        assert names == {"a/server.log", "b/server.log"}
    one = make_app(paths=paths[:1])
    async with one.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert " file " not in header(one)  # one log: nothing to tell apart


@async_test
async def test_engine_panel_keeps_each_log_its_own_engines() -> None:
    # A real vLLM data-parallel log and two real SGLang logs tailed together: summed into
    # one fleet line they read as one server ramping up. Each log's engines, under its name.
    app = make_app(paths=(str(VLLM_DP), str(SGLANG_CACHE), str(SGLANG_PD)))
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        text = panel(app)
        lines = text.splitlines()
        assert "fleet of" not in text
        assert "engines of 3 logs" in lines[0]
        for log in (VLLM_DP, SGLANG_CACHE, SGLANG_PD):
            assert any(line.startswith(log.name[:20]) for line in lines), log.name
        vllm_at = next(i for i, line in enumerate(lines) if line.startswith(VLLM_DP.name[:20]))
        assert lines[vllm_at + 1].startswith("0 ") and lines[vllm_at + 2].startswith("1 ")
        assert "running 51" in lines[vllm_at + 1]  # engine 0's own last line, not a sum
        sglang_at = next(
            i for i, line in enumerate(lines) if line.startswith(SGLANG_CACHE.name[:20])
        )
        assert "queue 155" in lines[sglang_at + 1]  # SGLang's #queue-req
        assert "prefix 49" in lines[sglang_at + 1] or "prefix 48" in lines[sglang_at + 1]


@async_test
async def test_engine_panel_shows_summarys_cache_share_and_the_true_line_count(
    tmp_path: Path,
) -> None:
    # The real SGLang 0.3 batch line, 3 x ENGINE_POINTS times: the panel keeps only the
    # last ENGINE_POINTS for its sparklines, and must still count every line.
    line = next(raw for raw in SGLANG_CACHE.read_text().splitlines() if "Prefill batch" in raw)
    lines = [
        line.replace("10:28:25", f"10:{30 + i // 60:02d}:{i % 60:02d}")
        for i in range(3 * ENGINE_POINTS)
    ]
    path = tmp_path / "sglang.log"
    path.write_text("\n".join(lines) + "\n")
    app = make_app(paths=(str(path),))
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        text = panel(app)
        assert f"{3 * ENGINE_POINTS:,} stats lines" in text.splitlines()[0]
        # 2,048 new and 2,048 cached tokens a batch, "cache hit rate: 0.00%" in the line
        assert "prefix cached 50.0% of prefill" in text
        assert "prefix hit" not in text
        queue = next(row for row in text.splitlines() if row.startswith("queue"))
        assert queue.endswith(" 30")


def test_warning_counts_come_from_the_error_log(tmp_path: Path) -> None:
    """The panel's warnings are the error log's retraction/OOM counts of what was read."""
    from sparseety_tui.core.extraction._extractor import Extractor
    from sparseety_tui.ingest.batch import ingest_file

    log = tmp_path / "sglang.log"
    log.write_text(
        "[2026-03-02 14:44:12 TP0] KV cache pool is full. Retract requests. "
        "#retracted_reqs: 1, #new_token_ratio: 0.9998 -> 1.0000\n"
        "[2026-03-02 14:44:13 TP0] Decode out of memory happened. #retracted_reqs: 2, "
        "#new_token_ratio: 0.5000 -> 1.0000\n"
        "[2026-03-02 14:44:14 TP0] torch.OutOfMemoryError: CUDA out of memory. Tried to "
        "allocate 2.00 GiB.\n"
    )
    extractor = Extractor()
    ingest_file(extractor, str(log))
    counts = warning_counts(extractor.freeze())
    assert counts == {"retraction": 2, "oom": 1, "engine_dead": 0}
    assert warning_counts(None) == {}


def _trace(tmp_path: Path) -> Path:
    lines = []
    for model, experts, requests in (("m-8e", 8, 8), ("m-64e", 64, 8)):
        ids = itertools.cycle(range(experts))
        for n in range(requests):
            routing = [[[next(ids), next(ids)]] for _ in range(4)]
            record = {
                "request_id": f"{model}-{n}",
                "model": model,
                "prompt_tokens": 2,
                "completion_tokens": 2,
                "latency_s": 1.0,
                "sparse": {"moe_layers": [0], "routing": routing},
            }
            lines.append(json.dumps(record))
    path = tmp_path / "models.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


@async_test
async def test_m_cycles_the_heatmaps_model_and_x_splits_the_totals(tmp_path: Path) -> None:
    app = make_app(paths=(str(_trace(tmp_path)),))
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        assert heatmap(app).title.startswith("Expert load: m-64e (1/2, m: next)")
        assert "64 experts" in heatmap(app).render().plain
        await pilot.press("m")
        await settle(pilot)
        assert heatmap(app).title.startswith("Expert load: m-8e (2/2")
        shown = heatmap(app).render().plain
        assert "8 experts" in shown and "max/mean 1.00" in shown
        assert "experts max/mean 1.00× (worst of 2 models)" in strip(app)
        await pilot.press("x")  # by model: the first model's own figures lead the strip
        await settle(pilot)
        assert strip(app).startswith("model m-64e 1/2  requests 8  prompt 16")
        assert heatmap(app).title.startswith("Expert load: m-64e")  # follows the split
        await pilot.press("X")
        await settle(pilot)
        assert strip(app).startswith("model m-8e 2/2  requests 8  prompt 16")
        await pilot.press("x")  # by file: one log
        await settle(pilot)
        assert strip(app).startswith("file models.jsonl 1/1  requests 16")
        await pilot.press("x")  # by engine: this trace has no engine stats
        await settle(pilot)
        assert strip(app).startswith("split by engine: none")
        await pilot.press("x")
        await settle(pilot)
        assert strip(app).startswith("requests 16")


@async_test
async def test_split_by_engine_shows_one_engine_in_strip_and_panel() -> None:
    app = make_app(paths=(str(VLLM_DP), str(SGLANG_CACHE)))
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        for _ in range(3):
            await pilot.press("x")
        await settle(pilot)
        first = strip(app)
        assert first.startswith("engine 0 (")
        assert "1/3" in first.splitlines()[0]
        text = panel(app)
        assert text.startswith("Engine engine 0")
        assert "running" in text  # the engine's own sparklines
        await pilot.press("X", "X")
        await settle(pilot)
        assert strip(app).startswith("engine TP0 (") and "queue 155" in strip(app)
        assert "prefix cached 49.4% of prefill" in panel(app)


@async_test
async def test_split_by_file_shows_that_logs_engines_and_line_count() -> None:
    app = make_app(paths=(str(VLLM_DP), str(SGLANG_CACHE)))
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        together = panel(app).splitlines()[0]
        await pilot.press("x", "x")  # model, then file
        await settle(pilot)
        assert strip(app).startswith("file sglang_0.3")  # the files by path: sglang_ < vllm_
        text = panel(app)
        first = text.splitlines()[0]
        assert first.startswith(f"Engine file {SGLANG_CACHE.name}  ")  # its short name
        assert "7 stats lines" in first and first != together  # that log's 7, not all
        assert "queue" in text and "prefix cached 49.4% of prefill" in text
        await pilot.press("X")
        await settle(pilot)
        text = panel(app)
        assert text.startswith(f"Engine file {VLLM_DP.name}  ")
        assert "fleet of 2" in text  # the vLLM server's two data-parallel engines
        assert "queue" not in text
