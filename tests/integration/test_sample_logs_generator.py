"""scripts/make_sample_logs.py, run as a process, rewrites the torch-free files of
sample_logs/ byte for byte (what the files hold is checked in
tests/unit/test_sample_logs.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from sample_helpers import ROOT, SAMPLES

# -- the generator -------------------------------------------------------------------


def test_generator_rewrites_the_torch_free_files_byte_for_byte(tmp_path: Path) -> None:
    script = ROOT / "scripts" / "make_sample_logs.py"
    done = subprocess.run(
        [sys.executable, str(script), "--no-model", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    for name in ("two_records.jsonl", "count_only_500.jsonl", "kv_lines.log"):
        assert (tmp_path / name).read_bytes() == (SAMPLES / name).read_bytes(), name
