"""Real-terminal tests: the app in tmux, driven by keys, read back with capture-pane.

Robust on a slow shared machine: every check polls the screen until a generous deadline;
no fixed sleep is ever an assertion. Skipped when tmux is not installed.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from waiting import wait_for

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux not installed")

DEADLINE_S = 20.0
WIDTH, HEIGHT = 120, 40


class Tmux:
    def __init__(self, socket: str) -> None:
        self.socket = socket

    def run(self, *args: str) -> str:
        out = subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=False
        )
        return out.stdout

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", "app")

    def keys(self, *keys: str) -> None:
        for key in keys:
            self.run("send-keys", "-t", "app", key)

    def type(self, text: str) -> None:
        self.run("send-keys", "-t", "app", "-l", text)

    def wait_for(
        self, predicate: Callable[[str], bool], what: str, deadline: float = DEADLINE_S
    ) -> str:
        screen = ""

        def showing() -> str | None:
            nonlocal screen
            screen = self.screen()
            return screen if predicate(screen) else None

        try:
            return wait_for(showing, deadline, what, every=0.1)
        except AssertionError as exc:
            raise AssertionError(f"{exc}; screen was:\n{screen}") from None


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Tmux]:
    t = Tmux(f"sparseety-test-{os.getpid()}-{time.monotonic_ns()}")
    yield t
    t.run("kill-server")


def start_tail(
    tmux: Tmux, tmp_path: Path, log: Path, *extra: str, size: tuple[int, int] = (WIDTH, HEIGHT)
) -> Path:
    """``tail LOG EXTRA...`` in a new tmux session; the path its exit status is written to."""
    return start_sized(tmux, tmp_path, size, "tail", str(log), *extra)


def start_sized(tmux: Tmux, tmp_path: Path, size: tuple[int, int], *args: str) -> Path:
    """The app with ``args`` at terminal ``size``; the path its exit status is written to."""
    status = tmp_path / "exit-status"
    # COLUMNS/LINES from the test runner's environment would pin the app's size.
    command = (
        f"env -u COLUMNS -u LINES {sys.executable} -m sparseety_tui {' '.join(args)}; "
        # Written whole, then renamed: a reader never sees the file created but still empty.
        f"echo $? > {status}.tmp; mv {status}.tmp {status}; sleep 60"
    )
    tmux.run(
        "new-session", "-d", "-s", "app", "-x", str(size[0]), "-y", str(size[1]),
        "-e", "TERM=xterm-256color", "-e", "TEXTUAL_ANIMATIONS=none",
        command,
    )  # fmt: skip
    return status


def exit_status(status: Path) -> str:
    """The app's exit status, once the shell has written it (fails after DEADLINE_S)."""
    wait_for(status.exists, DEADLINE_S, "the app to exit", every=0.1)
    return status.read_text().strip()


def request(rid: str, **extra: object) -> str:
    data = {
        "request_id": rid,
        "model": "demo-moe",
        "prompt": "Why is the sky blue?",
        "completion": "Rayleigh scattering makes short wavelengths dominate.",
        "prompt_tokens": 6,
        "completion_tokens": 8,
        "cached_tokens": 3,
        "latency_s": 0.8,
        "ttft_s": 0.05,
        "ts": "2026-11-30T12:00:00Z",
        "sparse": {"topk_experts": 2, "total_experts": 8},
        **extra,
    }
    return json.dumps(data, ensure_ascii=False) + "\n"


def append(path: Path, text: str) -> None:
    # Another process appends, as a serving system would.
    subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; open(sys.argv[1], 'a').write(sys.argv[2])",
            str(path),
            text,
        ],
        check=True,
    )


def test_tail_follows_drills_filters_and_quits(tmux: Tmux, tmp_path: Path) -> None:
    log = tmp_path / "server.jsonl"
    log.write_text(request("first-0001"))
    status = start_tail(tmux, tmp_path, log)
    tmux.wait_for(lambda s: "first-0001" in s, "the existing request")
    append(log, request("live-0002") + request("live-0003", completion="blue light bends"))
    tmux.wait_for(lambda s: "live-0002" in s and "live-0003" in s, "appended requests")

    tmux.keys("g")
    # Type only once the prompt is open: under load, keys sent earlier reach the table.
    tmux.wait_for(lambda s: "go to request id" in s, "the go-to prompt")
    tmux.type("live-0002")
    tmux.keys("Enter")
    tmux.wait_for(lambda s: "at live-0002" in s, "the cursor on live-0002")
    tmux.keys("Enter")
    screen = tmux.wait_for(lambda s: "Rayleigh scattering" in s, "the completion text")
    assert "cached" in screen and "evicted" in screen and "legend" in screen
    tmux.keys("Escape")
    tmux.wait_for(lambda s: "FOLLOW" in s or "scroll" in s, "the main screen")

    tmux.keys("/")
    tmux.wait_for(lambda s: "filter: words" in s, "the filter prompt")
    tmux.type("live-0003")
    tmux.keys("Enter")
    tmux.wait_for(lambda s: "filter live-0003 (1/3)" in s, "the filter status")
    screen = tmux.screen()
    assert "live-0002" not in screen.split("filter")[0]

    tmux.keys("q")
    assert exit_status(status) == "0"


def test_hostile_text_is_shown_literally(tmux: Tmux, tmp_path: Path) -> None:
    log = tmp_path / "evil.jsonl"
    prompt = (
        "[bold red]boom[/] \x1b[2J\x1b]0;pwned\x07 rtl:\u202eabc\u202c "
        "zw:a\u200bb 中文 😀 tail-marker"
    )
    log.write_text(request("evil-1", prompt=prompt, completion="[link=http://x]y[/link] ok"))
    start_tail(tmux, tmp_path, log, "--request", "evil-1")
    screen = tmux.wait_for(lambda s: "tail-marker" in s, "the hostile prompt")
    assert "[bold red]boom[/]" in screen
    assert "\\x1b[2J" in screen and "\\x1b]0;pwned\\x07" in screen
    assert "⟨U+202E⟩" in screen and "⟨U+200B⟩" in screen
    assert "[link=http://x]y[/link]" in screen
    assert "中文" in screen
    # The screen was not cleared or retitled: the header is still there.
    assert "request evil-1" in screen
    title = tmux.run("display-message", "-p", "-t", "app", "#{pane_title}")
    assert "pwned" not in title
    tmux.keys("q")


def sglang_stats(second: int, new_tokens: int, running: int, throughput: float) -> str:
    return (
        f"[2025-10-01 21:25:{second:02d} TP0] Prefill batch. #new-seq: 1, #new-token: "
        f"{new_tokens}, #cached-token: 32, token usage: 0.01, #running-req: {running}, "
        f"#queue-req: 0\n"
        f"[2025-10-01 21:25:{second:02d} TP0] Decode batch. #running-req: {running}, "
        f"#token: 200, token usage: 0.02, gen throughput (token/s): {throughput:.2f}, "
        f"#queue-req: 0\n"
    )


def sglang_finish(rid: str, prompt: int, completion: int, cached: int) -> str:
    return (
        f"[2025-10-01 21:25:40] Finish: obj=GenerateReqInput(text='hi', rid='{rid}'), "
        f"out={{'text': ' done', 'meta_info': {{'id': '{rid}', 'finish_reason': "
        f"{{'type': 'stop'}}, 'prompt_tokens': {prompt}, 'completion_tokens': {completion}, "
        f"'cached_tokens': {cached}, 'e2e_latency': 0.75}}}}\n"
    )


def engine_rows(screen: str) -> str:
    """The engine panel's sparkline rows (label, bars, value) as one string."""
    return "\n".join(
        line.split("▏", 1)[-1]
        for line in screen.splitlines()
        if "gen tok/s" in line or "running" in line
    )


def test_sglang_log_requests_and_engine_panel(tmux: Tmux, tmp_path: Path) -> None:
    log = tmp_path / "sglang_server.log"
    log.write_text(
        "[2025-10-01 21:25:00] server_args=ServerArgs(model_path='m', log_requests=True)\n"
        + sglang_stats(1, 100, 1, 10.0)
        + sglang_finish("sg-req-01", prompt=131, completion=42, cached=96)
    )
    status = start_tail(tmux, tmp_path, log)
    screen = tmux.wait_for(lambda s: "sg-req-01" in s, "the SGLang request")
    row = next(line for line in screen.splitlines() if "sg-req-01" in line)
    assert "131" in row and "42" in row and "96" in row  # prompt, completion, cached
    # The whole file read (4 lines): the panel shows all of it, not a first part.
    screen = tmux.wait_for(
        lambda s: "Engine" in s and "gen tok/s" in s and "· 4 lines" in s, "the engine panel"
    )
    before = engine_rows(screen)
    # The server keeps working: stats lines arrive, the panel must move.
    for second in range(2, 12):
        append(log, sglang_stats(second, 50 * second, second % 4 + 1, 20.0 * second))
    append(log, sglang_finish("sg-req-02", prompt=64, completion=8, cached=0))
    tmux.wait_for(
        lambda s: "sg-req-02" in s and "· 25 lines" in s and engine_rows(s) != before,
        "the engine panel to move and the second request",
    )
    tmux.keys("q")
    assert exit_status(status) == "0"


REAL_LOGS = Path(__file__).resolve().parents[1] / "data" / "real_logs"


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_trends_screen_on_a_real_sglang_log(
    tmux: Tmux, tmp_path: Path, size: tuple[int, int]
) -> None:
    """T opens the per-minute plots of a real SGLang log (5 minutes of stats lines), every
    line fits the terminal, a plot with no data says so, PgDn/End reach the engine plots
    and esc goes back to the table."""
    width, height = size
    log = REAL_LOGS / "sglang_docsci_20250630_native_api_prefill_token_field_expert_pt.log"
    status = start_tail(tmux, tmp_path, log)
    tmux.run("resize-window", "-t", "app", "-x", str(width), "-y", str(height))
    tmux.wait_for(lambda s: "Filter" in s and len(s.splitlines()[0]) <= width, "the table")
    tmux.keys("T")
    screen = tmux.wait_for(
        lambda s: "Trends per minute (UTC)  2025-06-30 02:28 – 02:32  5 min" in s, "the trends"
    )
    lines = screen.splitlines()
    assert len(lines) <= height and all(len(line) <= width for line in lines)
    assert "latency (s)" in screen and "no data in these minutes" in screen  # none timed
    if width >= 140:  # two plots side by side
        assert any("latency (s)" in line and "TTFT (s)" in line for line in lines)
    tmux.keys("NPage")
    tmux.wait_for(lambda s: "tokens (tok/s)" in s, "a page down")
    # the cache plot says where its figures come from: the engine's prefill token counts
    tmux.wait_for(
        lambda s: "engine cached / (cached + new)" in s or tmux.keys("NPage") is not None,
        "the cache hit rate plot",
    )
    tmux.keys("End")
    # the first minute's mean KV usage is the top of the KV plot's axis
    screen = tmux.wait_for(
        lambda s: "KV cache usage" in s and "0.17% ┤" in s[s.index("KV cache usage") :],
        "the KV plot at the bottom",
    )
    kv = screen[screen.index("KV cache usage") :]
    assert any(0x2800 < ord(ch) < 0x2900 for ch in kv)  # drawn in braille
    tmux.keys("Escape")
    tmux.wait_for(lambda s: "Trends per minute" not in s and "Filter" in s, "the table again")
    tmux.keys("q")
    assert exit_status(status) == "0"


# -- NO_COLOR (issue #11 item 8) ---------------------------------------------------------


def sgr_cells(captured: str) -> Iterator[tuple[str, object, object, bool]]:
    """(character, foreground, background, reverse) per cell of a ``capture-pane -e``
    capture. A colour is None (the terminal's default) or a tuple naming it: ("256", n),
    ("rgb", r, g, b), ("16", n). tmux writes each cell's codes as a change from the cell
    before it, the last one of the line above included: the state carries over lines."""
    fg: object = None
    bg: object = None
    reverse = False
    line = captured.replace("\n", "")
    i = 0
    while i < len(line):
        if line.startswith("\x1b[", i):
            end = line.index("m", i)
            params = [int(p) if p else 0 for p in line[i + 2 : end].split(";")]
            i = end + 1
            j = 0
            while j < len(params):
                p = params[j]
                if p == 0:
                    fg = bg = None
                    reverse = False
                elif p == 7:
                    reverse = True
                elif p == 27:
                    reverse = False
                elif p in (38, 48):
                    if params[j + 1] == 5:
                        colour: object = ("256", params[j + 2])
                        j += 2
                    else:
                        colour = ("rgb", *params[j + 2 : j + 5])
                        j += 4
                    if p == 38:
                        fg = colour
                    else:
                        bg = colour
                elif p == 39:
                    fg = None
                elif p == 49:
                    bg = None
                elif 30 <= p <= 37 or 90 <= p <= 97:
                    fg = ("16", p % 10 + (8 if p >= 90 else 0))
                elif 40 <= p <= 47 or 100 <= p <= 107:
                    bg = ("16", p % 10 + (8 if p >= 100 else 0))
                j += 1
            continue
        yield line[i], fg, bg, reverse
        i += 1


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
def test_no_color_keeps_terminal_colours_and_marks_the_cursor(
    tmux: Tmux, tmp_path: Path, size: tuple[int, int]
) -> None:
    log = tmp_path / "server.jsonl"
    log.write_text(
        "".join(request(f"req-{i:04d}") for i in range(30)) + request("req-0030", state="failed")
    )
    status = tmp_path / "exit-status"
    command = (
        f"env -u COLUMNS -u LINES {sys.executable} -m sparseety_tui tail {log}; "
        f"echo $? > {status}.tmp; mv {status}.tmp {status}; sleep 60"
    )
    env = {"TERM": "xterm-256color", "TEXTUAL_ANIMATIONS": "none", "NO_COLOR": "1"}
    width, height = size
    tmux.run(
        "new-session",
        *("-d", "-s", "app", "-x", str(width), "-y", str(height)),
        *[arg for k, v in env.items() for arg in ("-e", f"{k}={v}")],
        command,
    )
    tmux.wait_for(lambda s: "req-0030" in s and "FOLLOW" in s, "the requests")
    captured = tmux.run("capture-pane", "-p", "-e", "-N", "-t", "app")  # -N: every cell
    cells = list(sgr_cells(captured))
    assert len(cells) > width * height // 2  # the whole screen was read
    # Before: every row was foreground 16 on background 16 (black on black).
    same = [c for c in cells if c[1] is not None and c[1] == c[2]]
    assert not same, f"{len(same)} cells drawn in one colour on itself"
    # NO_COLOR means the terminal's own colours: no colour is set at all.
    assert all(fg is None and bg is None for _, fg, bg, _ in cells)
    # The cursor row stays visible: reverse video where colour marked it.
    reversed_text = "".join(ch for ch, _, _, rev in cells if rev)
    assert "req-0030" in reversed_text
    tmux.keys("q")
    assert exit_status(status) == "0"


COUNTS_LOG = Path(__file__).resolve().parents[2] / "sample_logs" / "count_only_500.jsonl"


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_time_window_changes_the_totals(
    tmux: Tmux, tmp_path: Path, size: tuple[int, int], capsys: pytest.CaptureFixture[str]
) -> None:
    """``t`` sets a time window; the totals strip then counts the window's requests, the
    number ``summary --since`` gives (issue #11 item 2)."""
    from sparseety_tui.cli.main import run

    assert run(["summary", "--json", "--since", "2m", str(COUNTS_LOG)]) == 0
    windowed = json.loads(capsys.readouterr().out)
    assert run(["summary", "--json", str(COUNTS_LOG)]) == 0
    whole = json.loads(capsys.readouterr().out)
    n, total = windowed["requests"]["count"], whole["requests"]["count"]
    assert 0 < n < total

    status = start_tail(tmux, tmp_path, COUNTS_LOG)
    tmux.run("resize-window", "-t", "app", "-x", str(size[0]), "-y", str(size[1]))
    tmux.wait_for(lambda s: f"requests {total:,}" in s, "the whole file's totals")
    tmux.keys("t")
    tmux.wait_for(lambda s: "time window: 10m" in s, "the time window prompt")
    tmux.type("2m")
    tmux.keys("Enter")
    screen = tmux.wait_for(lambda s: f"requests {n:,}" in s, "the window's totals")
    assert "totals of window since 2m" in screen
    assert max(len(line) for line in screen.splitlines()) <= size[0]
    # Empty: all time again (the prompt opens on the window it edits).
    tmux.keys("t")
    tmux.wait_for(
        lambda s: any(line.strip() == "2m" for line in s.splitlines()), "the prompt on 2m"
    )
    tmux.keys("C-u", "Enter")
    tmux.wait_for(lambda s: f"requests {total:,}" in s, "the whole file's totals again")
    tmux.keys("q")
    assert exit_status(status) == "0"


# -- keys typed in one burst under CPU load (issue #11 item 6) ---------------------------------


@pytest.fixture
def cpu_load() -> Iterator[None]:
    """Two CPU-bound processes for the length of a test (the host an on-call user is on)."""
    spin = [sys.executable, "-c", "while True: pass"]
    procs = [subprocess.Popen(spin) for _ in range(2)]
    try:
        yield
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def mixed_models_log(path: Path) -> Path:
    path.write_text(
        "".join(
            request(f"req-{i:04d}", model="qwen3-30b" if i % 2 else "llama-3-8b", latency_s=i)
            for i in range(1, 21)
        )
    )
    return path


SIZES = pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])


@SIZES
def test_pasted_filter_under_load_goes_to_the_prompt(
    tmux: Tmux, tmp_path: Path, size: tuple[int, int], cpu_load: None
) -> None:
    log = mixed_models_log(tmp_path / "server.jsonl")
    status = start_sized(tmux, tmp_path, size, "tail", str(log))
    tmux.wait_for(lambda s: "req-0020" in s, "the requests")
    tmux.type("/qwen")  # ONE send-keys call: the keys arrive in one read
    tmux.wait_for(lambda s: "filter qwen (10/20)" in s, "the filter applied")
    assert not status.exists()  # "q" did not quit
    # Typed after a filter and enter in one call: enter submits, no detail opens.
    tmux.keys("Escape")
    tmux.wait_for(lambda s: "filter qwen" not in s, "the filter cleared")
    tmux.run("send-keys", "-t", "app", "/latency>10", "Enter")
    screen = tmux.wait_for(lambda s: "filter latency>10 (10/20)" in s, "the second filter")
    assert "request id" in screen  # still the table, not a request's detail
    tmux.keys("q")
    assert exit_status(status) == "0"


@SIZES
def test_goto_and_palette_in_one_burst_under_load(
    tmux: Tmux, tmp_path: Path, size: tuple[int, int], cpu_load: None
) -> None:
    log = mixed_models_log(tmp_path / "server.jsonl")
    status = start_sized(tmux, tmp_path, size, "tail", str(log))
    tmux.wait_for(lambda s: "req-0020" in s, "the requests")
    tmux.run("send-keys", "-t", "app", "greq-0003", "Enter")
    tmux.wait_for(lambda s: "at req-0003" in s, "the cursor on req-0003")
    assert not status.exists()
    tmux.run("send-keys", "-t", "app", "C-p", "quit")
    tmux.wait_for(lambda s: "quit" in s and "Quit the application" in s, "the palette search")
    assert not status.exists()  # "q" went to the palette's search, not to the app
    tmux.keys("Escape")
    tmux.wait_for(lambda s: "Quit the application" not in s, "the palette closed")
    tmux.keys("q")
    assert exit_status(status) == "0"


def test_copy_keys_fill_the_tmux_buffer_and_the_command_runs(tmux: Tmux, tmp_path: Path) -> None:
    log = mixed_models_log(tmp_path / "server.jsonl")
    status = start_sized(tmux, tmp_path, (120, 40), "tail", str(log), "--output-dir", str(tmp_path))
    tmux.wait_for(lambda s: "req-0020" in s, "the requests")
    tmux.run("send-keys", "-t", "app", "greq-0007", "Enter")
    tmux.wait_for(lambda s: "at req-0007" in s, "the cursor on req-0007")
    tmux.keys("y")
    tmux.wait_for(lambda s: "copied request id to the" in s, "the copy message")
    assert tmux.run("show-buffer") == "req-0007"
    tmux.type("/qwen latency>5")
    tmux.keys("Enter")
    tmux.wait_for(lambda s: "filter qwen latency>5 (7/20)" in s, "the filter")
    tmux.keys("C")
    tmux.wait_for(lambda s: "copied summary command" in s, "the command copied")
    command = shlex.split(tmux.run("show-buffer"))
    assert command[:4] == ["sparseety-tui", "summary", "--filter", "qwen latency>5"]
    out = subprocess.run(
        [sys.executable, "-m", "sparseety_tui", *command[1:], "--json"],
        capture_output=True, check=True,
    )  # fmt: skip
    assert json.loads(out.stdout)["filter"]["requests"] == 7
    assert not list(tmp_path.glob("sparseety-tui-*.txt"))  # tmux took it: no file
    tmux.keys("q")
    assert exit_status(status) == "0"


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_errors_view_shows_a_traceback_end_and_an_http_500_and_steps(
    tmux: Tmux, tmp_path: Path, size: tuple[int, int]
) -> None:
    # Real SGLang logs: a PD router's HTTP 500 (and KV transfer failures), uvicorn ASGI
    # tracebacks; copied to short names, so that the file column shows them whole.
    pd = tmp_path / "pd.log"
    asgi = tmp_path / "asgi.log"
    shutil.copy(
        REAL_LOGS
        / "sglang_0.5.8_pd_prefill_decode_transfer_failed_mooncake_tp16_2node_slurmv4.log",
        pd,
    )
    shutil.copy(
        REAL_LOGS / "sglang_docsci_20251031_native_api_asgi_traceback_expert_record.log", asgi
    )
    status = start_tail(tmux, tmp_path, pd, str(asgi), size=size)
    tmux.wait_for(lambda s: "errors 5" in s and "5xx 1" in s, "the totals strip's errors")
    tmux.keys("e")
    last_line = "TypeError: BaseReq.__init__() got an unexpected keyword argument 'action'"
    screen = tmux.wait_for(
        lambda s: "Errors 6" in s and last_line in s, "the newest traceback, to its last line"
    )
    assert "asgi.log" in screen and "257" in screen
    tmux.keys("E", "E", "E")  # back to the HTTP 500
    screen = tmux.wait_for(
        # (wrapped at 80 columns: each half whole)
        lambda s: '"POST /generate HTTP/1.1"' in s and "500 Internal Server Error" in s,
        "the HTTP 500 line, read from the file",
    )
    assert "HTTP 500" in screen and "pd.log" in screen
    tmux.keys("e")  # forward again: the first traceback
    tmux.wait_for(lambda s: "asgi.log:162" in s, "the next error, a traceback at line 162")
    tmux.keys("Escape")  # (a key sent right after it would read as alt+key)
    tmux.wait_for(lambda s: "Errors 6" not in s and "errors 5" in s, "the main screen")
    tmux.keys("q")
    assert exit_status(status) == "0"


#: Three servers that log to files of one name: a vLLM and two SGLang servers, each
#: with requests and engine stats (real excerpts).
THREE_SERVERS = {
    "a": "vllm_0.8_v0_cpu_received_added_metrics_uvicorn_17954.log",
    "b": "sglang_docsci_20250630_native_api_prefill_token_field_expert_pt.log",
    "c": "sglang_docsci_20241231_v0.4.1_native_api_meta_info.log",
}


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_three_logs_show_a_file_column_and_three_engines(
    tmux: Tmux, tmp_path: Path, size: tuple[int, int]
) -> None:
    paths = []
    for name, source in THREE_SERVERS.items():
        (tmp_path / name).mkdir()
        path = tmp_path / name / "server.log"
        shutil.copyfile(REAL_LOGS / source, path)
        paths.append(path)
    status = start_sized(tmux, tmp_path, size, "tail", *map(str, paths))
    names = ("a/server.log", "b/server.log", "c/server.log")
    screen = tmux.wait_for(
        lambda s: " file " in s and all(n in s for n in names), "the file column naming each log"
    )
    if size[0] >= 160:
        # The engine panel: each log's name, then its engine's row: never one summed fleet.
        assert "3 engines of 3 logs" in screen
        assert "fleet of" not in screen
    # Split by engine (x: model, file, engine): the strip names the engine, 1 of 3.
    tmux.keys("x", "x", "x")
    tmux.wait_for(lambda s: "engine " in s and " 1/3 " in s, "the first of three engines")
    tmux.keys("X")
    tmux.wait_for(lambda s: " 2/3 " in s, "the second engine")
    tmux.keys("X")
    screen = tmux.wait_for(lambda s: " 3/3 " in s, "the third engine")
    tmux.keys("q")
    assert exit_status(status) == "0"


def test_redacted_tail_shows_the_badge_and_no_secret(tmux: Tmux, tmp_path: Path) -> None:
    """``tail --redact`` in a real terminal: the REDACTED badge, and neither the planted
    email nor the phone number on the table or the request's detail, even beside escapes."""
    key = tmp_path / "redact.key"
    key.write_text("0123456789abcdef" * 4)
    key.chmod(0o600)
    log = tmp_path / "secrets.jsonl"
    prompt = "mail \x1b[2Jann.lee@example.com or call +1 (415) 555-0132 tail-marker"
    log.write_text(request("sec-1", prompt=prompt, user="alice-77"))
    start_tail(tmux, tmp_path, log, "--redact", "--redact-key-file", str(key), "--request", "sec-1")
    screen = tmux.wait_for(lambda s: "tail-marker" in s, "the redacted prompt")
    assert "[email:" in screen and "[REDACTED:phone]" in screen
    assert "ann.lee" not in screen and "555-0132" not in screen and "\\x1b[" in screen
    tmux.keys("Escape")
    screen = tmux.wait_for(lambda s: "REDACTED" in s and "sec-1" in s, "the badge")
    assert "ann.lee" not in screen
    tmux.keys("q")
