"""`plot` and `compare --plot`: valid images, not blank, axes labelled, trends' numbers."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from compare_helpers import trace_records, write_trace

from sparseety_tui.cli.main import run
from sparseety_tui.cli.plot import PlotSide, plot_data
from sparseety_tui.core.figures._costmodel import DEFAULT_SHAPE
from sparseety_tui.core.figures._trends import compute_trends
from sparseety_tui.core.query._selection import Selection
from sparseety_tui.ingest.batch import Options, ingest_paths

SVG = "{http://www.w3.org/2000/svg}"


def svg_texts(path: Path) -> list[str]:
    root = ET.parse(path).getroot()
    return ["".join(t.itertext()).strip() for t in root.iter(f"{SVG}text")]


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    return write_trace(tmp_path / "run.jsonl", trace_records(n=300, topk=2))


def test_png_is_a_valid_image_and_not_blank(trace: Path, tmp_path: Path) -> None:
    import matplotlib.image as mpimg
    import numpy as np

    out = tmp_path / "report.png"
    assert run(["plot", str(trace), "-o", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    pixels = mpimg.imread(out)[..., :3]
    assert pixels.shape[0] > 500 and pixels.shape[1] > 800
    ink = (pixels < 0.9).any(axis=2)
    assert 0.02 < ink.mean() < 0.6  # lines, text and the stacked area; mostly paper
    # The palette's first colour (Okabe-Ito blue, #0072B2) is drawn: data, not only axes.
    blue = (np.abs(pixels - np.array([0x00, 0x72, 0xB2]) / 255).max(axis=2) < 0.05).sum()
    assert blue > 500


def test_svg_axes_and_header_say_what_is_drawn(trace: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.svg"
    assert run(["plot", str(trace), "-o", str(out)]) == 0
    texts = svg_texts(out)
    for label in ("latency", "TTFT", "tokens", "requests", "cache hit rate", "errors & HTTP 5xx"):
        assert label in texts, label
    for unit in ("s", "tok/s", "req/s", "%", "/min"):
        assert unit in texts, unit
    assert texts.count("time (UTC)") == 2  # the bottom row's x axes
    header = next(t for t in texts if "run.jsonl" in t)
    assert "2026-11-30 12:0" in header and "UTC" in header
    assert "compute: effective vs skipped (stacked)" in texts


def test_pdf_is_written(trace: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.pdf"
    assert run(["plot", str(trace), "-o", str(out)]) == 0
    assert out.read_bytes()[:5] == b"%PDF-"


def test_series_are_the_trends_screens(trace: Path) -> None:
    extractor = ingest_paths(Options(), [str(trace)])
    data = plot_data([PlotSide(None, (str(trace),), extractor, DEFAULT_SHAPE, Selection())])
    trends = compute_trends(extractor)
    latency = next(p for p in data["panels"] if p["key"] == "latency")
    p95 = next(line for line in latency["lines"] if line["name"] == "p95")
    assert p95["y"] == list(trends.get("latency").lines[1].values)
    assert p95["x"] == list(trends.minutes)
    compute = next(p for p in data["panels"] if p["key"] == "compute")
    effective = next(line for line in compute["lines"] if line["name"] == "effective")
    # Every request has an end: the minutes add up to summary's total.
    from sparseety_tui.core.figures._totals import compute_totals

    total = compute_totals(extractor, DEFAULT_SHAPE).requests.effective_compute_tokens
    assert sum(v for v in effective["y"] if v) * 60 == pytest.approx(total, abs=0.05)


def test_compare_plot_overlays_both_sides(tmp_path: Path) -> None:
    dense = write_trace(tmp_path / "dense.jsonl", trace_records(topk=8))
    sparse = write_trace(tmp_path / "sparse.jsonl", trace_records(topk=2))
    out = tmp_path / "cmp.svg"
    assert run(["compare", str(dense), str(sparse), "--json", "--plot", str(out)]) == 0
    texts = svg_texts(out)
    assert any(t.startswith("baseline: ") and "dense.jsonl" in t for t in texts)
    assert any("candidate: " in t and "sparse.jsonl" in t for t in texts)
    assert "p50 (baseline)" in texts and "p50 (candidate)" in texts
    assert texts.count("minutes from the side's first minute") == 2
    # Matched by id: each pair's latency and compute on both sides, drawn first.
    assert "latency of each matched request" in texts
    assert "effective compute of each matched request" in texts
    assert texts.count("matched request (by baseline latency)") == 2


def test_compare_tui_with_plot_writes_the_plot_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--tui returned before the --plot it had checked was drawn."""
    from sparseety_tui.cli import compare

    shown: list[object] = []
    monkeypatch.setattr(compare, "run_tui", lambda _a, _o, compared: shown.append(compared) or 0)
    dense = write_trace(tmp_path / "dense.jsonl", trace_records(topk=8))
    sparse = write_trace(tmp_path / "sparse.jsonl", trace_records(topk=2))
    out = tmp_path / "cmp.svg"
    assert run(["compare", str(dense), str(sparse), "--tui", "--plot", str(out)]) == 0
    assert len(shown) == 1 and "latency of each matched request" in svg_texts(out)


def test_unknown_image_kind_is_an_error_before_reading(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from sparseety_tui.cli.main import main

    with pytest.raises(SystemExit) as stop:
        main(["plot", str(tmp_path / "missing.jsonl"), "-o", str(tmp_path / "x.gif")])
    assert stop.value.code == 2
    error = capsys.readouterr().err
    assert "must end in .png, .svg, .pdf" in error and "missing" not in error.split("-o")[0]


def test_a_window_is_in_the_header(trace: Path, tmp_path: Path) -> None:
    out = tmp_path / "w.svg"
    args = ["plot", str(trace), "-o", str(out), "--since", "2026-11-30T12:01"]
    assert run([*args, "--until", "2026-11-30T12:03"]) == 0
    header = next(t for t in svg_texts(out) if "run.jsonl" in t)
    assert "2026-11-30 12:01–12:03 UTC (2 min)" in header
    assert "window 2026-11-30T12:01..2026-11-30T12:03" in header


def test_a_log_without_times_still_draws_and_says_so(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    out = tmp_path / "e.svg"
    assert run(["plot", str(empty), "-o", str(out)]) == 0
    texts = svg_texts(out)
    assert any("empty.jsonl" in t and "no times" in t for t in texts)
    assert "not in these logs" in texts


def test_without_matplotlib_plot_is_one_line_before_reading(
    trace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import sys

    from sparseety_tui.cli.main import main

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if the plot extra were absent
    for argv in (
        ["plot", str(trace), "-o", str(tmp_path / "p.png")],
        ["compare", str(trace), str(trace), "--plot", str(tmp_path / "c.png")],
    ):
        with pytest.raises(SystemExit) as exit_:
            main(argv)
        assert exit_.value.code == 2
        out, err = capsys.readouterr()
        assert err.strip() == (
            "sparseety-tui: error: plots need matplotlib: pip install 'sparseety-tui[plot]'"
        )
        assert out == ""  # nothing was read or reported before
