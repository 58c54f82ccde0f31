"""The Textual app: wires the ingest worker's snapshots to the screens (20 Hz while data flows).

The app is the one place that owns the ingest worker. Screens get what they need when they
are built (the shape, a snapshot's frozen state, the detail cache) and send messages up
(``ui.messages``): no screen imports this module, and nothing in the UI touches the
writer's store: every row, count and detail comes from a snapshot.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from textual import work
from textual.app import App, SystemCommand
from textual.binding import BindingType
from textual.css.query import NoMatches
from textual.screen import Screen

from sparseety_tui.core.detail import DetailCache
from sparseety_tui.core.extraction import Extractor
from sparseety_tui.core.figures import ModelShape
from sparseety_tui.core.query import (
    PrefixMatches,
    ViewQuery,
    WindowError,
    WindowSpec,
    ambiguous_message,
    parse_bound,
)
from sparseety_tui.core.redact import Redactor, redact_detail
from sparseety_tui.core.text import quote
from sparseety_tui.ingest.batch import Options, make_extractor, make_shape
from sparseety_tui.ingest.replay import ReplaySource
from sparseety_tui.ingest.snapshot import LiveOptions, Snapshot
from sparseety_tui.ingest.worker import MAX_PUBLISH_GAP_S, MIN_PUBLISH_GAP_S, IngestWorker
from sparseety_tui.ui import handoff, keys
from sparseety_tui.ui.messages import (
    HandOff,
    OpenRequest,
    QueryChanged,
    ReplaySeek,
    SnapshotReady,
)
from sparseety_tui.ui.palette import palette_commands
from sparseety_tui.ui.safe_text import redact, set_redactor
from sparseety_tui.ui.screens.detail import DetailScreen
from sparseety_tui.ui.screens.diagnostics import DiagnosticsScreen
from sparseety_tui.ui.screens.errors import ErrorsScreen
from sparseety_tui.ui.screens.help import HelpScreen
from sparseety_tui.ui.screens.main import MainScreen
from sparseety_tui.ui.screens.trends import TrendsScreen
from sparseety_tui.ui.textual_compat import line_filters, set_line_filters
from sparseety_tui.ui.themes import (
    ThemeSet,
    default_theme_name,
    load_themes,
    no_color_filters,
)

#: The worker wakes the UI with a message at every snapshot it publishes, so each one is
#: shown as it comes. A timer also looks every TICK_S while snapshots keep coming (a
#: backstop: a wake-up cannot be lost for long); once nothing changed for ACTIVE_S it stops,
#: and an idle app has no timer at all (no wake-ups while the logs are quiet).
TICK_S = 0.1
ACTIVE_S = 1.0
#: Snapshots are asked for at most once per FRAME_DUTY times what a frame costs the UI
#: thread (its CPU time per snapshot shown, averaged), so drawing takes at most
#: ~1/FRAME_DUTY of a core; within the worker's MIN/MAX_PUBLISH_GAP_S. Lower trades CPU for
#: latency, higher the other way until the gap reaches its cap (bench/tail_latency.py; the
#: values tried are in bench/history/).
FRAME_DUTY = 5.0
#: How often the replay bar shows the replay clock.
REPLAY_BAR_S = 0.25
MIN_REPLAY_SPEED, MAX_REPLAY_SPEED = 1 / 64, 4096.0


@dataclass(frozen=True)
class AppConfig:
    live: LiveOptions
    options: Options = field(default_factory=Options)
    theme: str | None = None  # a --theme name; None: by terminal (see themes.py)
    request_id: str | None = None  # --request: open on this request's detail
    window: WindowSpec | None = None  # --since/--until: the time window to start with
    tick_s: float = TICK_S
    title: str = "sparseety-tui"
    #: --output-dir: screenshots and text that could not be copied (ui/handoff.py).
    output_dir: str | None = None
    #: --redact: everything shown (and so copied, dumped, screenshot) is redacted.
    redactor: Redactor | None = None
    #: tail --replay / demo: the lines come from this replay, not from following the files.
    replay: ReplaySource | None = None
    #: tail --otlp / --otlp-grpc: what the receivers took and refused, read when the
    #: diagnostics screen draws (``receive.ReceiverProcess.status``, safe from any thread).
    receivers: Callable[[], Mapping[str, Any]] | None = None


class SparseetyApp(App[int]):
    CSS_PATH = "app.tcss"
    BINDINGS: ClassVar[list[BindingType]] = list(keys.bindings(keys.GLOBAL + keys.REPLAY))

    def __init__(
        self,
        config: AppConfig,
        *,
        extractor: Extractor | None = None,
        shape: ModelShape | None = None,
        themes: ThemeSet | None = None,
    ) -> None:
        super().__init__()
        if self.no_color:
            set_line_filters(self, no_color_filters(line_filters(self)))
        self.config = config
        self.title = config.title
        self.live_options = config.live
        self.shape = shape if shape is not None else make_shape(config.options)
        self.replay = config.replay
        # The worker owns the Extractor: only its thread writes or reads it.
        self.worker = self._new_worker(extractor)
        # --since/--until: the first query, the same object for the worker and the screen.
        self._first_query = ViewQuery(window=config.window)
        if config.window is not None:
            self.worker.set_query(self._first_query)
        # Redaction goes through the one funnel of shown text (safe_text.escape) and the
        # details built (a secret spans tokens: redacted over the joined text).
        set_redactor(config.redactor)
        self.redactor = config.redactor
        self.details = self._new_details()
        self.themes = themes if themes is not None else load_themes()
        self.theme_name = self.themes.resolve(config.theme or default_theme_name())
        self._shown_version = -1
        self._wake_queued = False  # a SnapshotReady is on its way (one at a time)
        self._frame_cpu = 0.0  # average UI-thread CPU seconds per snapshot shown
        self._frames = 0  # snapshots shown
        self._frame_mark = (time.thread_time(), 0)  # (UI-thread CPU, snapshots) at the last look
        self._pending_request = config.request_id
        self._request_reported = False
        self._request_prefix = PrefixMatches()  # --request as a prefix, once the read settled
        self._objects_frozen = False  # see _freeze_settled_objects

    def _new_worker(self, extractor: Extractor | None = None) -> IngestWorker:
        return IngestWorker(
            extractor if extractor is not None else make_extractor(self.config.options),
            self.shape,
            self.config.live,
            on_wake=self._wake_from_worker,
            source=self.replay,
            log_seconds_per_second=self._replay_speed if self.replay is not None else None,
        )

    def _replay_speed(self) -> float:
        """Log seconds a wall second now (0 while paused): the worker's tok/s per log second."""
        clock = self.replay.clock if self.replay is not None else None
        return 0.0 if clock is None or clock.paused else clock.speed

    def get_default_screen(self) -> Screen[None]:
        return MainScreen(
            self.shape,
            show_rate=self.live_options.track_rate,
            query=self._first_query,
            replay=self.replay is not None,
        )

    def on_mount(self) -> None:
        for theme in self.themes.themes.values():
            self.register_theme(theme)
        self.theme = self.theme_name
        for problem in self.themes.problems:
            self.notify(problem, title="theme not loaded", severity="warning")
        self.worker.start()
        self._last_change = time.monotonic()
        self._timer = self.set_timer(self.config.tick_s, self._tick_loop)
        if self.replay is not None:
            self.set_interval(REPLAY_BAR_S, self._show_replay)

    # -- replay (tail --replay, demo) --------------------------------------------------------

    def _show_replay(self) -> None:
        if self.replay is not None and self.is_running:
            with contextlib.suppress(NoMatches):
                self.main_screen.replay_bar.show(self.replay.status())

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action.startswith("replay_"):
            return self.replay is not None
        return True

    def action_replay_pause(self) -> None:
        assert self.replay is not None
        self.replay.clock.toggle()
        self.replay.wake()
        self._show_replay()

    def action_replay_step(self) -> None:
        assert self.replay is not None
        self.replay.clock.pause()
        self.replay.step()
        self._show_replay()

    def action_replay_speed(self, factor: float) -> None:
        assert self.replay is not None
        speed = min(MAX_REPLAY_SPEED, max(MIN_REPLAY_SPEED, self.replay.clock.speed * factor))
        self.replay.clock.set_speed(speed)
        self.replay.wake()
        self._show_replay()

    def action_replay_seek(self, seconds: float) -> None:
        self.replay_seek_to(self.replay.clock.now() + seconds if self.replay else 0.0)

    def action_replay_jump(self) -> None:
        while len(self.screen_stack) > 1:  # the prompt is the table's
            self.pop_screen()
        self.main_screen.open_seek_prompt()

    def on_replay_seek(self, message: ReplaySeek) -> None:
        """``J``'s time: absolute, a clock time on the logs' last day, or relative to the
        logs' end (``core.query.parse_bound``, as ``--from``)."""
        replay = self.replay
        if replay is None or not message.text.strip():
            return
        try:
            at = parse_bound(message.text.strip()).resolve(replay.end)
        except WindowError as exc:
            self.main_screen.say(f"seek: {exc}", error=True)
            return
        if at is None:
            self.main_screen.say("seek: no time in the logs to count from", error=True)
            return
        self.replay_seek_to(at)

    def replay_seek_to(self, at: float) -> None:
        """Play from log time ``at``: forward, the lines up to it come at once; backward,
        a new worker reads the files again up to ``at`` (lines read cannot be unread)."""
        replay = self.replay
        assert replay is not None
        at = min(max(at, replay.origin), replay.end)
        if at >= replay.clock.now():
            replay.seek(at)
        else:
            old = self.worker
            self.replay = replay.rewound(at)
            self.worker = self._new_worker()
            query = self.main_screen.table.snapshot.query
            old.stop()
            self.details = self._new_details()
            self._shown_version = -1
            self.worker.set_query(query)
            self.worker.start()
            # The screens on top show rows of the old worker's state: back to the table.
            while len(self.screen_stack) > 1:
                self.pop_screen()
        self._show_replay()

    def _new_details(self) -> DetailCache:
        """An empty cache of request details, redacted as they are built under --redact."""
        redactor = self.redactor
        return DetailCache(
            None if redactor is None else lambda detail: redact_detail(detail, redactor)
        )

    def _tick_loop(self) -> None:
        """A one-shot timer re-armed after each tick while snapshots keep coming, so ticks
        never pile up; not re-armed once nothing changed for ACTIVE_S (a wake-up from the
        worker starts it again)."""
        now = time.monotonic()
        if self.tick():
            self._last_change = now
        self._timer.stop()
        if now - self._last_change < ACTIVE_S:
            self._timer = self.set_timer(self.config.tick_s, self._tick_loop)

    def _wake_from_worker(self) -> None:
        # Worker thread: post_message is thread-safe and does not block. One message at a
        # time: while one waits in the queue, the tick it brings shows the newest snapshot.
        # The flag is set before posting: set after, it could land after the message was
        # handled (on this thread's other core) and stay set, and the UI stop showing.
        if not self._wake_queued:
            self._wake_queued = True
            if not self.post_message(SnapshotReady()):
                self._wake_queued = False

    def on_snapshot_ready(self, _message: SnapshotReady) -> None:
        self._wake_queued = False
        self._tick_loop()

    def _pace_frames(self) -> None:
        """Ask the worker for snapshots no more often than FRAME_DUTY x what showing one
        costs this thread (its CPU time over the last ones shown: the table's rows, the
        totals, Textual's compositing and output)."""
        self._frames += 1
        cpu, frames = time.thread_time(), self._frames
        last_cpu, last_frames = self._frame_mark
        if frames - last_frames < 5:
            # (It counted from the last mark before: the mark moved with every frame, so
            # the cost was never measured and the gap stayed at PUBLISH_GAP_S.)
            return
        cost = (cpu - last_cpu) / (frames - last_frames)
        self._frame_mark = (cpu, frames)
        self._frame_cpu = cost if not self._frame_cpu else 0.5 * (self._frame_cpu + cost)
        self.worker.publish_gap_s = min(
            MAX_PUBLISH_GAP_S, max(MIN_PUBLISH_GAP_S, FRAME_DUTY * self._frame_cpu)
        )

    def on_unmount(self) -> None:
        self.worker.stop()
        set_redactor(None)
        if self._objects_frozen:
            # What was frozen is collectable again once the app is gone (a process that
            # runs more than one app, as the tests do, would otherwise keep each one's).
            gc.unfreeze()

    @property
    def main_screen(self) -> MainScreen:
        screen = self.screen_stack[0]
        assert isinstance(screen, MainScreen)
        return screen

    def tick(self) -> bool:
        """Show the latest snapshot if it is new (cheap when nothing changed)."""
        snap = self.worker.snapshot
        if snap.version == self._shown_version:
            return False
        if not self.is_running:
            # Shutting down: the screens are being closed (the stack may be empty), while
            # the tick timer and the worker's wake-up message can still arrive.
            return False
        try:
            self.main_screen.apply_snapshot(snap)
        except NoMatches:
            return False  # the main screen is still being composed: next tick
        self._shown_version = snap.version
        self._pace_frames()
        if isinstance(self.screen, TrendsScreen):
            self.screen.refresh_content(snap)
        elif isinstance(self.screen, DiagnosticsScreen):
            self.screen.follow_snapshot(snap)  # it counts a growing file's lines live
        for screen in self.screen_stack:  # (also under a context or detail screen on top)
            if isinstance(screen, ErrorsScreen):
                screen.refresh_content(snap)  # errors that arrive are listed at once
        if self._pending_request is not None:
            self._open_pending_request(snap)
        if snap.settled and not self._objects_frozen:
            self._objects_frozen = True
            self.call_after_refresh(self._freeze_settled_objects)
        return True

    @staticmethod
    def _freeze_settled_objects() -> None:
        """Once, when the first read settled (after its screen is drawn): collect, then move
        what is alive out of the cyclic collector's reach. Those ~90k objects (modules,
        classes, widgets, Textual's caches) are alive for the app's life, and every full
        collection walked them with the GIL held, every few seconds while a log streams, each
        one a frame that late."""
        gc.collect()
        gc.freeze()

    def _open_pending_request(self, snap: Snapshot) -> None:
        rid = self._pending_request
        assert rid is not None
        row = snap.find(rid)
        if row is None and snap.settled and snap.state is not None:
            # Not an id: a prefix names the one request whose id starts with it. Only once
            # everything read is in (a unique prefix of the first rows may not stay so),
            # then only the rows added since the last look.
            ids = snap.state.store.ids
            self._request_prefix = self._request_prefix.more(ids, rid)
            matches = self._request_prefix
            if matches.count == 1:
                row = matches.rows[0]
            elif matches.count > 1:
                self._pending_request = None
                self.main_screen.say(ambiguous_message(rid, matches, ids), error=True)
                return
        if row is not None:
            self._pending_request = None
            self.open_detail(row, snap)
        elif snap.settled and not self._request_reported:
            self._request_reported = True
            self.main_screen.say(f"request {rid} not in the logs (yet): waiting for it", error=True)

    # -- navigation --------------------------------------------------------------------------

    def open_detail(self, row: int, snap: Snapshot | None = None) -> None:
        """Open request ``row`` as the snapshot shown (or ``snap``) knows it."""
        state = (snap or self.main_screen.table.snapshot).state
        if state is None or row >= len(state.store):
            return
        self.push_screen(DetailScreen(row, state, self.shape, self.details))

    def on_open_request(self, message: OpenRequest) -> None:
        self.open_detail(message.row)

    def on_query_changed(self, message: QueryChanged) -> None:
        self.worker.set_query(message.query)

    # -- hand-off (ui/handoff.py) -------------------------------------------------------------

    @property
    def output_dir(self) -> str:
        return handoff.output_dir(self.config.output_dir)

    def _terminal_clipboard(self) -> bool:
        """Whether OSC 52 can reach a terminal: a real driver writing to a tty."""
        stream = sys.__stderr__  # where Textual's terminal drivers write
        return not self.is_headless and stream is not None and stream.isatty()

    def on_hand_off(self, message: HandOff) -> None:
        message.text = redact(message.text)  # what is copied is what was shown
        osc52 = self._terminal_clipboard()
        if osc52:
            self.copy_to_clipboard(message.text)
        self._deliver(message, osc52, bool(os.environ.get("TMUX")), self.output_dir)

    @work(thread=True, group="handoff")
    def _deliver(self, message: HandOff, osc52: bool, in_tmux: bool, directory: str) -> None:
        # A thread: tmux or a slow disk must not stall the UI.
        done = handoff.deliver(
            message.text, osc52=osc52, in_tmux=in_tmux, directory=directory, stem=message.stem
        )
        self.call_from_thread(
            self._say, done.message(message.what), not done.osc52 and not done.tmux
        )

    def _say(self, text: str, error: bool) -> None:
        if self.screen is self.screen_stack[0]:
            self.main_screen.say(text, error=error)
        else:
            self.notify(
                text, severity="warning" if error else "information", timeout=6, markup=False
            )

    def deliver_screenshot(
        self,
        filename: str | None = None,
        path: str | None = None,
        time_format: str | None = None,
    ) -> str | None:
        """Save the SVG in the output directory (not ~/Downloads) and say where."""
        try:
            saved = self.save_screenshot(filename, path or self.output_dir, time_format)
        except OSError as exc:
            self._say(f"screenshot not saved: {exc.strerror} ({exc.filename})", True)
            return None
        self._say(f"screenshot saved to {quote(saved)}", False)
        return saved

    def action_screenshot(self, filename: str | None = None, path: str | None = None) -> None:
        self.deliver_screenshot(filename, path)

    def action_diagnostics(self) -> None:
        snap = self.worker.snapshot
        if isinstance(self.screen, DiagnosticsScreen):
            self.screen.refresh_content(snap)
            return
        self.push_screen(DiagnosticsScreen(snap, self.config.receivers))

    def action_trends(self) -> None:
        if not isinstance(self.screen, TrendsScreen):
            self.push_screen(TrendsScreen(self.worker.snapshot))

    def action_errors(self) -> None:
        snap = self.worker.snapshot
        if isinstance(self.screen, ErrorsScreen):
            self.screen.refresh_content(snap)
            return
        self.push_screen(ErrorsScreen(snap))

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    async def action_quit(self) -> None:
        self.exit(0)

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        yield from palette_commands(
            self.themes,
            lambda theme: setattr(self, "theme", theme),
            self.main_screen,
            diagnostics=self.action_diagnostics,
            trends=self.action_trends,
            errors=self.action_errors,
        )
        yield from super().get_system_commands(screen)

    # -- test hook ---------------------------------------------------------------------------

    async def settle(self, timeout: float = 20.0) -> None:
        """Wait until the worker has fed and published everything, then show it (tests)."""
        ok = await asyncio.to_thread(self.worker.drain, timeout)
        if not ok:
            raise TimeoutError("ingest did not settle")
        self.tick()
