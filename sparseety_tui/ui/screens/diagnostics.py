"""Diagnostics: per file, lines by kind, and the unparsed lines kept (up to DIAGNOSTIC_SAMPLES
per file part; every one is counted), each with its reason.

So a user can see exactly what the tool did not understand (nothing is dropped silently).
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from sparseety_tui.core.files import DIAGNOSTIC_SAMPLES, Diagnostic, add_counts
from sparseety_tui.ingest.snapshot import Snapshot
from sparseety_tui.ui import keys
from sparseety_tui.ui.safe_text import display_path, escape

#: Unparsed lines listed per file on screen (all kept samples are copied with `c`).
SHOWN_PER_FILE = 500


class DiagnosticsScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = list(keys.bindings(keys.DIAGNOSTICS))

    DEFAULT_CSS = """
    DiagnosticsScreen #diag-scroll { height: 1fr; padding: 0 1; }
    DiagnosticsScreen #diag-title { height: 1; padding: 0 1; background: $panel;
        text-style: bold; color: $primary; }
    """

    def __init__(self, snapshot: Snapshot) -> None:
        """``snapshot``: what to show (``refresh_content`` shows a newer one)."""
        super().__init__(id="diagnostics")
        self._snapshot = snapshot
        self._plain = ""

    def compose(self) -> ComposeResult:
        yield Static("Diagnostics: lines by kind, and the lines not understood", id="diag-title")
        with VerticalScroll(id="diag-scroll"):
            yield Static(id="diag-text")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.refresh_content(self._snapshot)
        self.query_one("#diag-scroll").focus()

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
        if not files:
            out.append("no files", "dim")
        for n, status in enumerate(files):
            if n:
                out.append("\n\n")
            out.append(escape(display_path(status.path)), "bold")
            out.append(f"  format {status.format}  {status.lines:,} lines\n", "dim")
            plain.append(f"{status.path} format={status.format} lines={status.lines}")
            for kind, count in sorted(status.by_kind.items(), key=lambda kv: -kv[1]):
                style = "bold red" if kind == "unparsed" else ""
                out.append(f"  {kind:<18}", style or "dim")
                out.append(f"{count:>10,}\n", style)
                plain.append(f"  {kind} {count}")
            ignored: dict[str, int] = {}
            for part in status.parts:
                if part < len(state_files):
                    add_counts(ignored, state_files[part].ignored)
            if ignored:
                out.append("\n  values left unknown (the rest of their line was read)\n", "bold")
            for reason, count in sorted(ignored.items()):
                out.append(f"  {count:>10,}  ", "yellow")
                out.append(f"{escape(reason)}\n")
                plain.append(f"  ignored {reason}: {count}")
            if status.unparsed == 0:
                out.append("  every line was understood\n", "green")
                continue
            samples: list[tuple[Diagnostic, int | None]] = []
            for part_no, part in enumerate(status.parts):
                # Part 0 is the tail (line numbers follow the older part once counted).
                base = status.line_base if part_no == 0 and len(status.parts) > 1 else 0
                if part < len(state_files):
                    samples.extend((diag, base) for diag in state_files[part].diagnostics)
            samples.sort(
                key=lambda s: (
                    (s[0].line_no + (s[1] or 0)) if s[1] is not None else 10**12 + s[0].line_no
                )
            )
            kept = len(samples)
            out.append(
                f"\n  unparsed lines ({kept:,} kept of {status.unparsed:,}; "
                f"at most {DIAGNOSTIC_SAMPLES:,} per file part)\n",
                "bold",
            )
            for diag, base in samples[:SHOWN_PER_FILE]:
                where = f"{diag.line_no + base:>8,}" if base is not None else f"tail+{diag.line_no}"
                out.append(f"  line {where}  ", "dim")
                out.append(escape(diag.reason), "yellow")
                out.append("\n      ")
                out.append(escape(diag.preview))
                out.append("\n")
                plain.append(f"line {where.strip()}: {diag.reason}: {diag.preview}")
            if kept > SHOWN_PER_FILE:
                out.append(f"  … {kept - SHOWN_PER_FILE:,} more (press c to copy all)\n", "dim")
        return out, "\n".join(plain)

    def action_back(self) -> None:
        self.app.pop_screen()

    def action_copy(self) -> None:
        self.app.copy_to_clipboard(self._plain)
        self.notify("diagnostics copied (OSC 52)", timeout=2)
