"""Lines of the programs around a server. systemd's lines about the server's unit, read
through journald: a crash is an error, the unit's bookkeeping is `other`, and journald's
withheld messages say why they are unparsed (the real `journalctl` outputs in
tests/data/real_logs). pytest's lines in a CI tail are `other`."""

from __future__ import annotations

from pathlib import Path

from sparseety_tui.formats import FALLBACK
from sparseety_tui.formats import _registry as registry
from sparseety_tui.formats._generic import unit_line
from sparseety_tui.formats._wrappers import WITHHELD_REASON

DATA = Path(__file__).resolve().parent.parent / "data" / "real_logs"
ENV_UNIT = DATA / "vllm_0.15.1_journald_systemd_env_prefix_restart_startup_clawd.log"


def test_unit_lines() -> None:
    assert unit_line(
        b"vllm-assistant.service: Main process exited, code=exited, status=1/FAILURE"
    ) == (True, "vllm-assistant.service: Main process exited, code=exited, status=1/FAILURE")
    assert unit_line(b"vllm.service: Main process exited, code=killed, status=9/KILL")
    assert unit_line(b"vllm.service: Main process exited, code=exited, status=0/SUCCESS") == (
        False,
        "vllm.service: Main process exited, code=exited, status=0/SUCCESS",
    )
    for other in (
        b"vllm-assistant.service: Failed with result 'exit-code'.",
        b"vllm-assistant.service: Scheduled restart job, restart counter is at 1.",
        b"Started vllm-assistant.service - vLLM OpenAI Server (assistant).",
    ):
        found = unit_line(other)
        assert found is not None and found[0] is False
    assert unit_line(b"INFO 07-08 07:17:34 [api_server.py:1] serving model.service") is None
    assert unit_line(b"see my.service: docs") is None


def test_a_crash_loop_under_journald() -> None:
    lines = ENV_UNIT.read_bytes().split(b"\n")[:-1]
    family = registry.detect(lines[: registry.SNIFF_LINES])
    assert family is not None and family.name == "vllm"
    parser = family.new_parser()
    kinds, reasons, errors = [], [], []
    for line in lines:
        kind, _ = parser.parse(line)
        kinds.append(kind)
        if kind == "unparsed":
            reasons.append(parser.last_reason)
        errors += [e for e in parser.pending if e[0] == "error"]
        parser.pending.clear()
    parser.finish()
    errors += [e for e in parser.pending if e[0] == "error"]
    # Lines 104-108 (systemd[1]): the exit is one error, the rest of the unit's lines other.
    assert kinds[103:108] == ["error", "other", "other", "other", "other"]
    messages = [e[1].get("message") for e in errors]
    assert "vllm-assistant.service: Main process exited, code=exited, status=1/FAILURE" in messages
    # Lines 133-137 and two more are journald's `[111B blob data]`: unparsed, saying why.
    assert kinds.count("unparsed") == 7 and set(reasons) == {WITHHELD_REASON}


def test_the_fallback_reads_unit_lines_too() -> None:
    parser = FALLBACK.new_parser()
    assert parser.parse(b"vllm.service: Main process exited, code=dumped, status=11/SEGV")[0] == (
        "error"
    )
    assert parser.parse(b"Started vllm.service - vLLM.")[0] == "other"
    assert parser.parse(b"[120B blob data]")[0] == "unparsed"
    assert parser.last_reason == WITHHELD_REASON


def test_pytest_lines() -> None:
    from sparseety_tui.formats._cilines import is_pytest_line

    for line in (
        b"FAILED",
        b"PASSED [ 50%]",
        b"tests/entrypoints/test_chat.py::test_chat[qwen] FAILED",
        b"FAILED tests/test_x.py::test_y - RuntimeError: boom",
        b"==== short test summary info ====",
        b"==== 1 failed, 2 passed in 3.21s ====",
        b"collected 12 items",
    ):
        assert is_pytest_line(line), line
    for line in (b"FAILED to load the model", b"INFO hello", b"== not a banner"):
        assert not is_pytest_line(line), line


def test_a_ci_tail_of_a_traceback_and_pytest() -> None:
    parser = FALLBACK.new_parser()
    kinds = [
        parser.parse(line)[0]
        for line in (
            b"Traceback (most recent call last):",
            b'  File "/app/x.py", line 1, in f',
            b"RuntimeError: Engine core initialization failed.",
            b"FAILED",
            b"==== 1 failed in 3.21s ====",
        )
    ]
    assert kinds == ["traceback", "traceback", "traceback", "other", "other"]


def test_a_unit_failure_in_a_server_log_has_its_time() -> None:
    from sparseety_tui.formats import vllm

    parser = vllm.FAMILY.new_parser()
    parser.parse(
        b"2024-06-10T06:13:20+00:00 vllm.service: Main process exited, code=exited, "
        b"status=1/FAILURE"
    )
    parser.parse(b"INFO 06-10 06:13:21 [api_server.py:1] vLLM API server version 0.15.1")
    parser.finish()
    [error] = [e[1] for e in parser.pending if e[0] == "error"]
    assert error.get("ts") == 1718000000.0
