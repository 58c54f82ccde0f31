"""Real-terminal tests: the app in tmux, driven by keys, read back with capture-pane.

Robust on a slow shared machine: every check polls the screen until a generous deadline;
no fixed sleep is ever an assertion. Skipped when tmux is not installed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

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
        end = time.monotonic() + deadline
        screen = ""
        while time.monotonic() < end:
            screen = self.screen()
            if predicate(screen):
                return screen
            time.sleep(0.1)
        raise AssertionError(f"timed out waiting for {what}; screen was:\n{screen}")


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Tmux]:
    t = Tmux(f"sparseety-test-{os.getpid()}-{time.monotonic_ns()}")
    yield t
    t.run("kill-server")


def start_tail(tmux: Tmux, tmp_path: Path, log: Path, *extra: str) -> Path:
    status = tmp_path / "exit-status"
    # COLUMNS/LINES from the test runner's environment would pin the app's size.
    command = (
        f"env -u COLUMNS -u LINES {sys.executable} -m sparseety_tui tail {log} "
        f"{' '.join(extra)}; "
        # Written whole, then renamed: a reader never sees the file created but still empty.
        f"echo $? > {status}.tmp; mv {status}.tmp {status}; sleep 60"
    )
    env = {"TERM": "xterm-256color", "TEXTUAL_ANIMATIONS": "none"}
    tmux.run(
        "new-session",
        "-d",
        "-s",
        "app",
        "-x",
        str(WIDTH),
        "-y",
        str(HEIGHT),
        *[arg for k, v in env.items() for arg in ("-e", f"{k}={v}")],
        command,
    )
    return status


def exit_status(status: Path) -> str:
    """The app's exit status, once the shell has written it (fails after DEADLINE_S)."""
    end = time.monotonic() + DEADLINE_S
    while not status.exists():
        assert time.monotonic() < end, f"the app did not exit within {DEADLINE_S} s"
        time.sleep(0.1)
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
#: Three servers that log to files of one name: a vLLM and two SGLang servers, each
#: with requests and engine stats (real excerpts).
THREE_SERVERS = {
    "a": "vllm_0.8_v0_cpu_received_added_metrics_uvicorn_17954.log",
    "b": "sglang_docsci_20250630_native_api_prefill_token_field_expert_pt.log",
    "c": "sglang_docsci_20241231_v0.4.1_native_api_meta_info.log",
}


def start_sized(tmux: Tmux, paths: list[Path], width: int, height: int) -> None:
    command = (
        f"env -u COLUMNS -u LINES {sys.executable} -m sparseety_tui tail "
        f"{' '.join(str(p) for p in paths)}; sleep 60"
    )
    env = {"TERM": "xterm-256color", "TEXTUAL_ANIMATIONS": "none"}
    tmux.run(
        "new-session",
        "-d",
        "-s",
        "app",
        "-x",
        str(width),
        "-y",
        str(height),
        *[arg for k, v in env.items() for arg in ("-e", f"{k}={v}")],
        command,
    )


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
    start_sized(tmux, paths, *size)
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
