"""The base install does not need torch: no command but `record` imports it, and `record`
without it is a one-line error that says what to install."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )


def test_summary_extract_and_help_never_import_torch() -> None:
    done = _python(
        "import sys, os, contextlib\n"
        "from sparseety_tui.cli.main import run\n"
        "with open(os.devnull, 'w') as null, contextlib.redirect_stdout(null):\n"
        "    run(['summary', '--json', 'sample_logs/moe_trace.jsonl'])\n"
        "    run(['extract', '--text', 'sample_logs/token_stream.jsonl'])\n"
        "    try:\n"
        "        run(['record', '--help'])\n"
        "    except SystemExit:\n"
        "        pass\n"
        "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.')))\n"
        "print('sparseety_tui.capture.hooks' in sys.modules)\n"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[-3:] == ["[]", "False", ""]


def test_record_without_torch_says_which_extra_to_install(tmp_path: Path) -> None:
    prompts = tmp_path / "p.jsonl"
    prompts.write_text('{"prompt": "hi"}\n')
    done = _python(
        "import sys\n"
        "sys.modules['torch'] = None  # as if torch were not installed\n"
        "from sparseety_tui.cli.main import main\n"
        f"main(['record', '--model', {str(tmp_path)!r}, '--prompts', {str(prompts)!r}, "
        f"'-o', {str(tmp_path / 'o.jsonl')!r}])\n"
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert "sparseety-tui[capture]" in done.stderr
