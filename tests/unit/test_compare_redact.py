"""``--redact`` on ``compare`` (JSON, report, TUI) and ``plot``: ids and file names are
text that leaves the tool (issue #14 names both commands)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import orjson
import pytest
from compare_helpers import EMAIL, sides, trace_records, write_trace

from sparseety_tui.cli.main import run


def test_compare_json_redacts_ids_and_counts_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, cand = sides(tmp_path)
    assert run(["compare", "--json", base, cand]) == 0
    plain = orjson.loads(capsys.readouterr().out)
    assert plain["regressions"] and EMAIL in plain["regressions"][0]["baseline_id"]
    assert run(["compare", "--json", "--redact", base, cand]) == 0
    out = capsys.readouterr().out
    assert EMAIL not in out
    redacted = orjson.loads(out)
    assert redacted["regressions"][0]["baseline_id"].startswith("[email:")
    assert redacted["redaction"]["rules"]["email"] > 0
    # the figures are the same: only text changed
    assert redacted["delta"] == plain["delta"] and redacted["matched"] == plain["matched"]


def test_compare_report_redacts_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, cand = sides(tmp_path)
    assert run(["compare", "--redact", base, cand]) == 0
    out, err = capsys.readouterr()
    assert EMAIL not in out and "[email:" in out
    assert "redacted: email" in err


def svg_text(path: Path) -> str:
    root = ET.parse(path).getroot()
    return " ".join("".join(t.itertext()) for t in root.iter("{http://www.w3.org/2000/svg}text"))


def test_plot_redacts_file_names_in_the_figure(tmp_path: Path) -> None:
    log = write_trace(tmp_path / f"{EMAIL}.jsonl", trace_records(n=50))
    plain, redacted = tmp_path / "plain.svg", tmp_path / "redacted.svg"
    assert run(["plot", str(log), "-o", str(plain)]) == 0
    assert run(["plot", "--redact", str(log), "-o", str(redacted)]) == 0
    assert EMAIL in svg_text(plain)
    text = svg_text(redacted)
    assert EMAIL not in text and "REDACTED" in text
