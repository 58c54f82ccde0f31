"""`serve`'s settings, parsed in-process: refused binds and token files are one-line
errors, its help shows a curl per route, ``--workers`` is ``--worker``. The server itself
(loopback, tokens, hostile bodies) is in tests/integration/test_serve_security.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparseety_tui.cli.errors import CliError
from sparseety_tui.cli.main import run


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["--host", "0.0.0.0", "--allow-remote"], "needs --token-file"),
        (["--host", "example.org", "--allow-remote"], "needs --token-file"),
        (["--workers", "0"], "--workers must be at least 1"),
        (["--max-body", "0"], "--max-body must be at least 1 byte"),
    ],
)
def test_refused_settings_are_one_line_errors(args: list[str], reason: str) -> None:
    """``main`` prints a CliError as one line and exits 2 (as the test above shows)."""
    with pytest.raises(CliError, match=reason) as refused:
        run(["serve", *args])
    assert "\n" not in str(refused.value)


def test_token_file_is_checked(tmp_path: Path, token_file: Path) -> None:
    short = tmp_path / "short"
    short.write_text("abc")
    short.chmod(0o600)
    with pytest.raises(CliError, match="at least 16 characters"):
        run(["serve", "--token-file", str(short)])
    token_file.chmod(0o644)
    with pytest.raises(CliError, match="readable by group or others"):
        run(["serve", "--token-file", str(token_file)])
    with pytest.raises(CliError, match="No such file"):
        run(["serve", "--token-file", str(tmp_path / "missing")])


def test_help_shows_a_curl_per_route(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        run(["serve", "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    for route in ("/health", "/extract", "/summary", "/requests", "/metrics", "/openapi.json"):
        assert f"curl -s http://127.0.0.1:8765{route}" in out or (
            f"curl -s -X POST http://127.0.0.1:8765{route}" in out
            or f"curl -s 'http://127.0.0.1:8765{route}?" in out
        ), route
    assert "--workers N, --worker N" in out


def test_worker_is_workers() -> None:
    from sparseety_tui.cli.main import build_parser
    from sparseety_tui.cli.serve_args import settings_of

    args = build_parser().parse_args(["serve", "--worker", "3"])
    assert settings_of(args).workers == 3
