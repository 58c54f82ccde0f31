"""Running `serve` for tests: in-process (uvicorn in a thread, the real app and a real
socket) or as the CLI process a user starts; and a small HTTP client (imported by test
modules of any tier: pyproject.toml puts tests/support on sys.path). Whatever is started
is stopped in a ``finally``."""

from __future__ import annotations

import http.client
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import orjson
import uvicorn
from waiting import wait_for

from sparseety_tui.cli.serve import bind
from sparseety_tui.ingest.batch import Options, make_shape
from sparseety_tui.ingest.snapshot import LiveOptions
from sparseety_tui.serve.app import build_app
from sparseety_tui.serve.followed import FollowedLogs
from sparseety_tui.serve.settings import ServeSettings


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return orjson.loads(self.body)


@dataclass
class Server:
    host: str
    port: int
    followed: FollowedLogs | None = None
    headers: dict[str, str] = field(default_factory=dict)

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
        timeout: float = 30.0,
    ) -> Answer:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            conn.request(method, path, body=body, headers={**self.headers, **(headers or {})})
            response = conn.getresponse()
            data = response.read()
            return Answer(response.status, {k.lower(): v for k, v in response.getheaders()}, data)
        finally:
            conn.close()

    def get(self, path: str, **kw: Any) -> Answer:
        return self.request("GET", path, **kw)

    def post(self, path: str, body: bytes, content_type: str = "application/json") -> Answer:
        return self.request("POST", path, body=body, headers={"Content-Type": content_type})


@contextmanager
def serving(
    paths: Sequence[str] = (),
    settings: ServeSettings | None = None,
    options: Options | None = None,
    token: bytes | None = None,
) -> Iterator[Server]:
    """The app of ``serve`` on a free loopback port, following ``paths`` from their start."""
    settings = settings or ServeSettings(port=0)
    options = options or Options()
    live = LiveOptions(paths=tuple(paths), start="start", track_rate=False)
    followed = FollowedLogs(live, options, make_shape(options))
    app = build_app(followed, settings, options, token)
    sock = bind(settings)
    server = uvicorn.Server(
        uvicorn.Config(
            app, log_level="warning", access_log=False, server_header=False, lifespan="off"
        )
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    followed.start()
    thread.start()
    try:
        wait_for(lambda: server.started, what="the server to start")
        assert followed.drain(20), "the logs were not read"
        yield Server(*sock.getsockname()[:2], followed=followed)
    finally:
        server.should_exit = True
        thread.join(10)
        followed.stop()
        sock.close()


_LISTENING = re.compile(rb"serving http://\[?([0-9a-f.:]+)\]?:(\d+)")


@contextmanager
def serve_process(args: Sequence[str], cwd: str | None = None) -> Iterator[Server]:
    """``sparseety-tui serve ARGS --port 0`` as its own process (the CLI a user runs)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "sparseety_tui", "serve", *args, "--port", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        match = _LISTENING.search(line)
        assert match, f"serve did not start: {line!r}"
        yield Server(match.group(1).decode(), int(match.group(2)))
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        if proc.stderr is not None:
            proc.stderr.close()
