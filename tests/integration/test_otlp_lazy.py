"""Reading a file of OpenTelemetry spans needs no protobuf: ``summary`` of the OTLP/JSON
sample runs in a fresh process without importing protobuf or OpenTelemetry (only the
receivers' protobuf bodies need the ``otlp`` extra)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "otlp" / "vllm_spans.jsonl"


def test_summary_of_spans_imports_no_protobuf() -> None:
    code = (
        "import sys, io, contextlib, json\n"
        "from sparseety_tui.cli.main import run\n"
        "out = io.TextIOWrapper(io.BytesIO(), encoding='utf-8')\n"
        "with contextlib.redirect_stdout(out):\n"
        f"    code = run(['summary', '--json', {str(SAMPLE)!r}])\n"
        "out.flush()\n"
        "heavy = sorted({m.split('.')[0] for m in sys.modules} & {'google', 'opentelemetry', 'grpc'})\n"
        "document = json.loads(out.buffer.getvalue())\n"
        "print(json.dumps({'code': code, 'heavy': heavy, 'summary': document}))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["code"] == 0
    assert report["heavy"] == []
    (file,) = report["summary"]["files"]
    assert file["format"] == "otlp"
    assert file["lines"] == {"total": 6, "by_kind": {"otlp.spans": 6}}
