"""The CLI under hostile or broken inputs (issue #9, items 7-9): paths that are not regular
files, output shown literally, and one-line errors instead of tracebacks.

Most tests run the CLI as a subprocess, as a user does, with a timeout: a hang fails the
test instead of stalling the suite.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import orjson
import pytest
from waiting import wait_for

from sparseety_tui.cli.tui import tail_inputs
from sparseety_tui.core.text._literal import JSON_ESCAPED
from sparseety_tui.ingest.batch import InputError
from sparseety_tui.sources import iter_chunks, iter_lines

SAMPLE = Path(__file__).parents[2] / "sample_logs" / "kv_lines.log"
INT32_MAX = 2**31 - 1


def cli(
    *args: str,
    timeout: float = 120,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """The CLI in a subprocess; output as bytes, since it is checked byte by byte."""
    return subprocess.run(
        [sys.executable, "-m", "sparseety_tui", *args],
        capture_output=True,
        stdin=subprocess.DEVNULL,
        timeout=timeout,
        cwd=cwd,
        env={**os.environ, **(env or {})},
    )


def stderr_lines(result: subprocess.CompletedProcess[bytes], code: int) -> list[str]:
    """stderr as lines, after checking the exit status and that there is no traceback."""
    err = result.stderr.decode("utf-8", "replace")
    assert result.returncode == code, err
    assert "Traceback" not in err, err
    return err.splitlines()


def one_line_error(result: subprocess.CompletedProcess[bytes], *needles: str) -> str:
    """The one line of an exit-2 error, which must hold every needle."""
    lines = stderr_lines(result, 2)
    assert len(lines) == 1, lines
    assert lines[0].startswith("sparseety-tui: error: "), lines
    for needle in needles:
        assert needle in lines[0], lines
    return lines[0]


def trace_line(**fields: Any) -> bytes:
    return orjson.dumps(fields) + b"\n"


# -- item 7: one path for expanding inputs; nothing that is not a regular file is read -----


def test_summary_skips_what_is_not_a_regular_file_in_a_directory(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(SAMPLE, logs / "a.log")
    os.mkfifo(logs / "fifo.log")
    (logs / "zero.log").symlink_to("/dev/zero")
    expected_skips = [
        f"sparseety-tui: skipped '{logs}/fifo.log': not a regular file (a FIFO)",
        f"sparseety-tui: skipped '{logs}/zero.log': not a regular file (a character device)",
    ]
    for jobs in ("1", "2"):
        result = cli("summary", "--json", "--jobs", jobs, str(logs), timeout=60)
        assert stderr_lines(result, 1) == expected_skips  # partial batch: exit 1
        doc = orjson.loads(result.stdout)
        assert [f["path"] for f in doc["files"]] == [str(logs / "a.log")]
        assert doc["files"][0]["lines"]["total"] == SAMPLE.read_bytes().count(b"\n")
    # The same expansion for extract (a directory batch: failed.log) and tail (the
    # follower shows on screen what it cannot read, without blocking on it).
    out = tmp_path / "out"
    result = cli("extract", str(logs), "-o", str(out), timeout=60)
    assert stderr_lines(result, 1)[-1].startswith("1 done, 0 already done, 2 failed")
    assert (out / "failed.log").read_text().splitlines() == [
        f"{logs}/fifo.log\tnot a regular file (a FIFO)",
        f"{logs}/zero.log\tnot a regular file (a character device)",
    ]
    assert tail_inputs([str(logs)])[0] == tuple(
        str(logs / n) for n in ("a.log", "fifo.log", "zero.log")
    )


def test_a_named_path_is_classified_alike_by_every_command(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.log"
    os.mkfifo(fifo)
    reason = f"cannot read '{fifo}': not a regular file (a FIFO)"
    for command in (("summary",), ("summary", "--json"), ("extract",)):
        one_line_error(cli(*command, str(fifo), timeout=60), reason)
    with pytest.raises(InputError, match=r"not a regular file \(a FIFO\)"):
        tail_inputs([str(fifo)])
    # tail follows a path that does not exist yet (README: "files that appear later").
    assert tail_inputs([str(tmp_path / "later.log")])[0] == (str(tmp_path / "later.log"),)


def _runs_within(seconds: float, work: Callable[[], object]) -> BaseException | None:
    """Run ``work`` in a thread; the exception it raised (None if none). Fails the test if
    it is still running after ``seconds`` (then it is left behind, as a daemon)."""
    outcome: list[BaseException | None] = []

    def target() -> None:
        try:
            work()
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    return outcome[0] if outcome else pytest.fail(f"still running after {seconds} s")


def test_no_reader_blocks_on_a_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.log"
    os.mkfifo(fifo)
    readers: Iterable[Callable[[Path], Iterable[object]]] = (iter_lines, iter_chunks)
    try:
        for reader in readers:
            error = _runs_within(10, lambda reader=reader: list(reader(fifo)))
            assert isinstance(error, OSError) and "not a regular file" in str(error)
    finally:  # a reader stuck in open() is released by a writer coming
        with contextlib.suppress(OSError):
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))


# -- item 8: everything the CLI prints is literal ------------------------------------------

HOSTILE_NAME = "evil\x1b]0;pwned\x07\x9b\u202eX.log"
RAW_CONTROLS = ("\x1b", "\x07", "\x9b", "\u202e")


def test_the_text_report_and_errors_show_hostile_names_literally(tmp_path: Path) -> None:
    shutil.copy(SAMPLE, tmp_path / HOSTILE_NAME)
    wide = {"COLUMNS": "250"}  # one table row per file, unwrapped
    result = cli("summary", HOSTILE_NAME, cwd=tmp_path, env=wide)
    out = result.stdout.decode()
    assert result.returncode == 0 and not any(c in out for c in RAW_CONTROLS)
    assert "evil\\x1b]0;pwned\\x07\\x9b⟨U+202E⟩X.log" in out
    assert "kv.request 60" in out  # the rest of the report is there
    # Error messages, argparse's among them (after its usage lines), go through the same rule.
    bad_option = cli("summary", HOSTILE_NAME, f"--x{HOSTILE_NAME}", cwd=tmp_path)
    line = stderr_lines(bad_option, 2)[-1]
    assert "unrecognized arguments: --xevil\\x1b]0;pwned\\x07" in line
    assert not any(c in bad_option.stderr.decode() for c in RAW_CONTROLS)
    line = one_line_error(cli("summary", "missing" + HOSTILE_NAME, cwd=tmp_path))
    assert not any(c in line for c in RAW_CONTROLS) and "no such file" in line


def test_json_outputs_spell_out_c1_bidi_and_invisible_characters(tmp_path: Path) -> None:
    request_id = "r\x9b1\u202e\u2066x\u200b\x7f"
    model = "m\x9d\ufeff\u061c\u2028\x9c"
    prompt = "hello \u202ddlrow\u202c \ufe0f"
    path = tmp_path / "c1.jsonl"
    path.write_bytes(trace_line(request_id=request_id, model=model, prompt=prompt, prompt_tokens=3))
    extract = cli("extract", "--text", str(path))
    summary = cli("summary", "--json", str(path))
    for result in (extract, summary):
        assert result.returncode == 0, result.stderr
        raw = [chr(code) for code in JSON_ESCAPED if chr(code).encode() in result.stdout]
        assert raw == []
    row = orjson.loads(extract.stdout)
    assert (row["request_id"], row["model"], row["prompt"]) == (request_id, model, prompt)
    assert "\\u202e" in extract.stdout.decode()
    assert orjson.loads(summary.stdout)["models"] == [model]


# -- item 9: one line, never a traceback -----------------------------------------------------


def _children(pid: int) -> list[int]:
    """Processes whose parent is ``pid`` (from /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                after_name = f.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if int(after_name[1]) == pid:
            found.append(int(entry))
    return found


def _cpu_ticks(pid: int) -> int:
    """The CPU time ``pid`` has used (user and system, in clock ticks; 0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            after_name = f.read().rsplit(b")", 1)[1].split()
    except OSError:
        return 0
    return int(after_name[11]) + int(after_name[12])


def _kv_log(path: Path, n: int) -> None:
    line = (
        b"2025-04-01 10:00:%02d INFO:sglang.srt.server:Request completed | req_id=r%08d | "
        b"prompt_tokens=%d | completion_tokens=%d | latency=2.12s | hit_cache=False | model=Q\n"
    )
    path.write_bytes(b"".join(line % (i % 60, i, 100 + i % 900, 1 + i % 300) for i in range(n)))


def test_ctrl_c_during_a_parallel_summary_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "requests.log"
    _kv_log(path, 300_000)  # key=value lines: split between workers at any line
    code = (
        "import sys; import sparseety_tui.ingest.parallel as p; p.PARALLEL_MIN_BYTES = 1; "
        "from sparseety_tui.cli.main import main; main(sys.argv[1:])"
    )
    for _run in range(3):
        proc = subprocess.Popen(
            [sys.executable, "-c", code, "summary", "--jobs", "2", str(path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # its own process group, as a shell gives a job
        )
        try:
            # Interrupted while the workers read their ranges: both have run on a CPU.
            wait_for(
                lambda proc=proc: (
                    proc.poll() is not None
                    or sum(_cpu_ticks(child) > 0 for child in _children(proc.pid)) >= 2
                ),
                60,
                "two worker processes at work",
            )
            assert proc.poll() is None, "summary ended before it could be interrupted"
            os.killpg(proc.pid, signal.SIGINT)  # Ctrl+C: the whole foreground group
            _out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        assert (proc.returncode, err.decode()) == (130, "sparseety-tui: interrupted\n")


def test_a_bad_tokenizer_is_one_line_at_tail_start(tmp_path: Path) -> None:
    bad = tmp_path / "tokenizer.json"
    bad.write_text("{}")
    # Before, tail started the UI and failed only when a request was opened.
    one_line_error(cli("tail", "--tokenizer", str(bad), str(SAMPLE), timeout=60), "cannot load")


def test_extract_output_paths(tmp_path: Path) -> None:
    log = tmp_path / "in.log"
    shutil.copy(SAMPLE, log)
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(SAMPLE, logs / "a.log")
    existing = tmp_path / "existing.jsonl"
    existing.write_text("old\n")
    one_line_error(
        cli("extract", str(log), "-o", str(tmp_path / "nodir" / "x.jsonl")),
        f"cannot write '{tmp_path}/nodir/x.jsonl': no such directory '{tmp_path}/nodir'",
    )
    one_line_error(
        cli("extract", str(logs), "-o", str(existing)),
        f"cannot write into '{existing}': not a directory",
    )
    one_line_error(cli("extract", str(log), "-o", str(logs)), "it is a directory")
    assert existing.read_text() == "old\n" and os.listdir(logs) == ["a.log"]
    # A regular file that is not an input is replaced (atomically), as `> file` would.
    assert cli("extract", str(log), "-o", str(existing)).returncode == 0
    assert len(existing.read_bytes().splitlines()) == 60
    # A symlink's target is written; the link stays a link.
    link = tmp_path / "link.jsonl"
    link.symlink_to(existing)
    existing.write_text("")
    assert cli("extract", str(log), "-o", str(link)).returncode == 0
    assert link.is_symlink() and len(existing.read_bytes().splitlines()) == 60
    # A FIFO (or /dev/null) is written to, never replaced by a file.
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE)
    try:
        assert cli("extract", str(log), "-o", str(fifo), timeout=60).returncode == 0
        received, _ = reader.communicate(timeout=10)
    finally:
        if reader.poll() is None:
            reader.kill()
            reader.wait()
    assert len(received.splitlines()) == 60 and fifo.is_fifo()


def test_summary_of_a_directory_with_a_file_it_cannot_read(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(SAMPLE, logs / "a.log")
    # A regular file whose read fails, even for root: its own memory at address 0 (EIO).
    (logs / "b.log").symlink_to("/proc/self/mem")
    expected = [f"sparseety-tui: skipped '{logs}/b.log': input/output error"]
    if os.geteuid() != 0:  # root reads a mode-000 file anyway
        shutil.copy(SAMPLE, logs / "c.log")
        (logs / "c.log").chmod(0)
        expected.append(f"sparseety-tui: skipped '{logs}/c.log': permission denied")
    result = cli("summary", "--json", str(logs))
    assert stderr_lines(result, 1) == expected
    assert [f["path"] for f in orjson.loads(result.stdout)["files"]] == [str(logs / "a.log")]
    one_line_error(cli("summary", "/proc/self/mem"), "'/proc/self/mem': input/output error")


def test_a_file_name_that_is_not_utf8(tmp_path: Path) -> None:
    name = os.fsdecode(b"caf\xe9.log")
    shutil.copy(SAMPLE, tmp_path / name)
    summary = cli("summary", "--json", name, cwd=tmp_path)
    assert summary.returncode == 0, summary.stderr
    assert orjson.loads(summary.stdout)["files"][0]["path"] == "caf\\xe9.log"
    extract = cli("extract", name, cwd=tmp_path)
    assert extract.returncode == 0, extract.stderr
    rows = [orjson.loads(line) for line in extract.stdout.splitlines()]
    assert len(rows) == 60 and {r["source"]["file"] for r in rows} == {"caf\\xe9.log"}
    text = cli("summary", name, cwd=tmp_path, env={"COLUMNS": "250"})
    assert text.returncode == 0 and "caf\\xe9.log" in text.stdout.decode()
    # A directory batch logs a failure under such a name (failed.log is UTF-8).
    os.mkfifo(tmp_path / os.fsdecode(b"f\xff.log"))
    batch = cli("extract", ".", "-o", "out", cwd=tmp_path, timeout=60)
    assert stderr_lines(batch, 1)[-1].startswith("1 done, 0 already done, 1 failed")
    failed = (tmp_path / "out" / "failed.log").read_text(encoding="utf-8")
    assert failed == "./f\\xff.log\tnot a regular file (a FIFO)\n"


def test_int32_max_counts_and_experts(tmp_path: Path) -> None:
    m = INT32_MAX
    path = tmp_path / "big.jsonl"
    sparse = {"topk_experts": m, "total_experts": m}
    path.write_bytes(
        trace_line(
            request_id="a",
            prompt_tokens=m,
            completion_tokens=m,
            sparse={**sparse, "skipped_attention_heads": m},
        )
        + trace_line(request_id="b", prompt_tokens=m, completion_tokens=m, sparse=sparse)
    )
    summary = cli("summary", "--json", str(path))
    assert summary.returncode == 0, summary.stderr
    skipped = orjson.loads(summary.stdout)["skipped"]
    # Heads: (2 * m) tokens x 32 layers x 32 heads: exact, over the one request that
    # logged its head skips ("b" said nothing of heads: not counted as none skipped).
    # Expert slots: x m experts, beyond what float64 holds exactly: unknown, and so is
    # the ratio.
    tokens = 2 * m
    assert skipped["skipped_head_slots"] == {
        "value": tokens * 32 * 32,
        "of": tokens * 32 * 32,
        "ratio": 1.0,
    }
    assert skipped["inactive_expert_slots"] == {"value": 0, "of": None, "ratio": None}
    extract = cli("extract", str(path))
    assert extract.returncode == 0, extract.stderr
    rows = [orjson.loads(line) for line in extract.stdout.splitlines()]
    assert [r["logical_tokens"] for r in rows] == [tokens, tokens]
