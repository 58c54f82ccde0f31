"""Diagnostics: per file, lines by kind, what happened to it (rotated, truncated, bytes that
may be missing), and the unparsed lines kept (up to DIAGNOSTIC_SAMPLES per file part; every
one is counted), each with its reason.

So a user can see exactly what the tool did not understand or could not read (nothing is
dropped silently). A path that held several files (rotation, truncation) counts them all;
lines of a later one say which (``file #2``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from sparseety_tui.core.store import DIAGNOSTIC_SAMPLES, Diagnostic, FrozenFile, add_counts
from sparseety_tui.ingest.snapshot import FileStatus, Snapshot
from sparseety_tui.ui import keys
from sparseety_tui.ui.messages import HandOff
from sparseety_tui.ui.safe_text import display_path, escape

#: Unparsed lines listed per file on screen (all kept samples are copied with `c`).
SHOWN_PER_FILE = 500
#: The most recent source events listed per path.
EVENTS_PER_FILE = 50
#: How often the OTLP receivers' counters are read again while the screen is open.
RECEIVERS_POLL_S = 1.0


def shown_counts(snapshot: Snapshot) -> tuple[object, ...]:
    """What the screen's text depends on, cheaply: each path's counts, parts, events."""
    return (
        tuple(
            (f.path, f.format, tuple(f.by_kind.items()), f.parts, f.line_base)
            for f in snapshot.files
        ),
        snapshot.events,
        snapshot.problem,
        snapshot.error,
    )


class DiagnosticsScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = list(keys.bindings(keys.DIAGNOSTICS))

    DEFAULT_CSS = """
    DiagnosticsScreen #diag-scroll { height: 1fr; padding: 0 1; }
    DiagnosticsScreen #diag-title { height: 1; padding: 0 1; background: $panel;
        text-style: bold; color: $primary; }
    """

    def __init__(
        self,
        snapshot: Snapshot,
        receivers: Callable[[], Mapping[str, Any]] | None = None,
    ) -> None:
        """``snapshot``: what to show (``refresh_content`` shows a newer one);
        ``receivers``: the OTLP receivers' status, read off the UI thread (None: none run)."""
        super().__init__(id="diagnostics")
        self._snapshot = snapshot
        self._receivers = receivers
        self._receivers_shown: Mapping[str, Any] | None = None
        self._plain = ""

    def compose(self) -> ComposeResult:
        yield Static("Diagnostics: lines by kind, and the lines not understood", id="diag-title")
        with VerticalScroll(id="diag-scroll"):
            yield Static(id="diag-text")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.refresh_content(self._snapshot)
        self.query_one("#diag-scroll").focus()
        if self._receivers is not None:  # refusals change no file: looked at each second
            self._poll_receivers()
            self.set_interval(RECEIVERS_POLL_S, self._poll_receivers)

    def _poll_receivers(self) -> None:
        """Read the receivers' status off the UI thread (it asks their process, which
        may be slow to answer) and show it when it moved."""
        read = self._receivers
        if read is None:
            return

        def ask() -> None:
            status = read()
            self.app.call_from_thread(self._show_receivers, status)

        self.run_worker(ask, thread=True, exclusive=True, group="receivers")

    def _show_receivers(self, status: Mapping[str, Any]) -> None:
        if status != self._receivers_shown:
            self._receivers_shown = status
            self.refresh_content(self._snapshot)

    def follow_snapshot(self, snapshot: Snapshot) -> None:
        """A newer snapshot while this screen is open (the app calls it on each one):
        redrawn only when what it shows moved, since up to SHOWN_PER_FILE samples a
        file are laid out again on each redraw."""
        if shown_counts(snapshot) != shown_counts(self._snapshot):
            self.refresh_content(snapshot)

    def refresh_content(self, snapshot: Snapshot) -> None:
        self._snapshot = snapshot
        text, plain = self._render_files(snapshot)
        self._plain = plain
        self.query_one("#diag-text", Static).update(text)

    def _render_files(self, snapshot: Snapshot) -> tuple[Text, str]:
        files = snapshot.files
        state_files = snapshot.state.files if snapshot.state is not None else ()
        out = Text(end="")
        plain: list[str] = []
        for problem in (snapshot.problem, snapshot.error):
            if problem:
                out.append(escape(problem), "bold red")
                out.append("\n\n")
                plain.append(problem)
        if self._receivers_shown is not None:
            _render_receivers(out, plain, self._receivers_shown)
        if not files:
            out.append("no files", "dim")
        for n, status in enumerate(files):
            if n:
                out.append("\n\n")
            _render_file(out, plain, status, state_files)
        return out, "\n".join(plain)

    def action_back(self) -> None:
        self.app.pop_screen()

    def action_copy(self) -> None:
        self.post_message(HandOff("diagnostics", self._plain, "diagnostics"))


def _render_receivers(out: Text, plain: list[str], status: Mapping[str, Any]) -> None:
    """The OTLP receivers' part: where they listen, spans taken, exports refused by reason,
    and the spool the spans go through (its file is listed below as an input)."""
    listening = ", ".join(f"{kind} {where}" for kind, where in status["listening"].items())
    out.append("OTLP receivers", "bold")
    out.append(f"  {escape(listening)}\n", "dim")
    spool = status["spool"]
    rows = [
        ("spans accepted", status["accepted_spans"], ""),
        ("spans rejected", status["rejected_spans"], "yellow"),
        ("spans lost", status["lost_spans"], "bold red"),
        ("exports received", status["requests"], ""),
        ("spool bytes waiting", spool["pending_bytes"], ""),
    ]
    rows += [(f"refused: {reason}", n, "yellow") for reason, n in status["refused"].items()]
    for label, count, style in rows:
        out.append(f"  {label:<22}", "dim")
        out.append(f"{count:>10,}\n", style if count else "")
        plain.append(f"otlp {label}: {count}")
    if spool["failure"]:
        out.append("  spool: " + escape(str(spool["failure"])) + "\n", "bold red")
        plain.append(f"otlp spool failure: {spool['failure']}")
    out.append("\n")


def _render_file(
    out: Text, plain: list[str], status: FileStatus, state_files: Sequence[FrozenFile]
) -> None:
    """One file's part of the screen (``out``) and of the copied text (``plain``)."""
    out.append(escape(display_path(status.path)), "bold")
    out.append(f"  format {status.format}  {status.lines:,} lines\n", "dim")
    plain.append(f"{status.path} format={status.format} lines={status.lines}")
    for kind, count in sorted(status.by_kind.items(), key=lambda kv: -kv[1]):
        style = "bold red" if kind == "unparsed" else ""
        out.append(f"  {kind:<18}", style or "dim")
        out.append(f"{count:>10,}\n", style)
        plain.append(f"  {kind} {count}")
    parts = [p for p in status.parts if p < len(state_files)]
    events = [e for p in parts for e in state_files[p].events][-EVENTS_PER_FILE:]
    if events:
        out.append("\n  what happened to the file\n", "bold")
        for event in events:
            out.append("  " + escape(event) + "\n", "yellow")
            plain.append(f"event: {event}")
        out.append("\n")
    ignored: dict[str, int] = {}
    for part in parts:
        add_counts(ignored, state_files[part].ignored)
    if ignored:
        out.append("\n  values left unknown (the rest of their line was read)\n", "bold")
    for reason, count in sorted(ignored.items()):
        out.append(f"  {count:>10,}  ", "yellow")
        out.append(f"{escape(reason)}\n")
        plain.append(f"  ignored {reason}: {count}")
    if status.unparsed == 0:
        out.append("  every line was understood\n", "green")
        return
    _render_unparsed(out, plain, status, _unparsed_samples(status, state_files))


def _unparsed_samples(
    status: FileStatus, state_files: Sequence[FrozenFile]
) -> list[tuple[tuple[int, int], int, int | None, Diagnostic]]:
    """(order, incarnation, line number or None, diagnostic) of the file's unparsed lines
    kept: the first file's lines in file order (its tail part's numbers follow the older
    part once counted, else "tail+N"), then each later file's."""
    samples: list[tuple[tuple[int, int], int, int | None, Diagnostic]] = []
    for part_no, part in enumerate(status.parts):
        if part >= len(state_files):
            continue
        n = status.incarnations[part_no] if part_no < len(status.incarnations) else 1
        tail = part_no == 0 and status.backfill_total > 0
        base = status.line_base if tail else 0
        for diag in state_files[part].diagnostics:
            line = diag.line_no + base if base is not None else None
            order = (n, line if line is not None else 10**12 + diag.line_no)
            samples.append((order, n, line, diag))
    samples.sort(key=lambda s: s[0])
    return samples


def _render_unparsed(
    out: Text,
    plain: list[str],
    status: FileStatus,
    samples: list[tuple[tuple[int, int], int, int | None, Diagnostic]],
) -> None:
    kept = len(samples)
    out.append(
        f"\n  unparsed lines ({kept:,} kept of {status.unparsed:,}; "
        f"at most {DIAGNOSTIC_SAMPLES:,} per file part)\n",
        "bold",
    )
    for _, n, line, diag in samples[:SHOWN_PER_FILE]:
        where = f"{line:>8,}" if line is not None else f"tail+{diag.line_no}"
        if n > 1:
            where += f" (file #{n})"
        out.append(f"  line {where}  ", "dim")
        out.append(escape(diag.reason), "yellow")
        out.append("\n      ")
        out.append(escape(diag.preview))
        out.append("\n")
        plain.append(f"line {where.strip()}: {diag.reason}: {diag.preview}")
    if kept > SHOWN_PER_FILE:
        out.append(f"  … {kept - SHOWN_PER_FILE:,} more (press c to copy all)\n", "dim")
