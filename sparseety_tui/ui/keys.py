"""Every key binding of the app, in one registry (k9s / lnav / less conventions).

Screens take their ``BINDINGS`` from here and the help screen is generated from the same
tables, so what the footer, the help and the code say can never disagree. Core actions use
unshifted keys where possible (non-US layouts); ``?`` and ``/`` follow every tool users know.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding


@dataclass(frozen=True)
class Key:
    key: str  # Textual key name(s), comma-separated for alternatives
    action: str
    description: str
    show: bool = True  # in the footer (all keys are in the help screen)
    label: str = ""  # how the help and footer write the key, when not the key name
    priority: bool = False

    def binding(self) -> Binding:
        return Binding(
            self.key,
            self.action,
            self.description,
            show=self.show,
            key_display=self.label or None,
            priority=self.priority,
        )


GLOBAL: tuple[Key, ...] = (
    Key("q", "quit", "Quit"),
    Key("question_mark,f1", "help", "Help", label="?"),
    Key("d", "diagnostics", "Diagnostics", show=False),
    # Priority: the palette screen is pushed before the next key is routed (no keystroke
    # typed right after ctrl+p reaches the table; see ui/widgets/prompt.py).
    Key("ctrl+p", "command_palette", "Palette", show=False, priority=True),
)

MAIN: tuple[Key, ...] = (
    Key("enter", "drill", "Detail", label="⏎"),
    # "/" and "g" are priority bindings so the prompt has focus before the next key is
    # routed (MainScreen.check_action lets them through as text while it is open).
    Key("slash", "filter", "Filter", label="/", priority=True),
    Key("t", "time_window", "Time window", show=False, priority=True),
    Key("f", "follow", "Follow"),
    Key("space", "pause", "Pause", label="␣", show=False),
    Key("s", "sort_next", "Sort"),
    Key("S", "sort_reverse", "Reverse sort", show=False),
    Key("g", "goto", "Go to id", show=False, priority=True),
    Key("n", "find_next", "Next match", show=False),
    Key("N", "find_previous", "Previous match", show=False),
    Key("escape", "clear_filter", "Clear filter", show=False, label="esc"),
    Key("e", "app.errors", "Errors"),
    # ``e`` is the errors view: the engine toggle is ``p`` ("per engine").
    Key("p", "toggle_engines", "Engines: fleet / per engine", show=False),
    Key("m", "cycle_model", "Expert heatmap: next model", show=False),
    Key("x", "cycle_split", "Split: none / model / file / engine", show=False),
    Key("X", "cycle_group", "Split: next group", show=False),
    Key("d", "diagnostics", "Diag", show=False),
    Key("T", "app.trends", "Trends"),
    Key("w", "toggle_timing", "Timing columns", show=False),
    # Hand-off (ui/handoff.py): clipboard via OSC 52, the tmux buffer, else a file.
    Key("y", "copy_id", "Copy id", show=False),
    Key("Y", "copy_row", "Copy row", show=False),
    Key("C", "copy_command", "Copy as summary command", show=False),
)

TABLE: tuple[Key, ...] = (
    Key("up,k", "cursor_up", "Up", show=False),
    Key("down,j", "cursor_down", "Down", show=False),
    Key("pageup,ctrl+b", "page_up", "Page up", show=False),
    Key("pagedown,ctrl+f", "page_down", "Page down", show=False),
    Key("home", "first", "First row", show=False),
    Key("end,G", "last", "Last row (and follow)", show=False),
)

DETAIL: tuple[Key, ...] = (
    Key("escape", "back", "Back", label="esc"),
    Key("left,h", "token(-1)", "Prev token", show=False, label="←"),
    Key("right,l", "token(1)", "Next token", show=False, label="→"),
    Key("up,k", "token_line(-1)", "Token up", show=False),
    Key("down,j", "token_line(1)", "Token down", show=False),
    Key("n", "skip_next", "Next skipped"),
    Key("N", "skip_previous", "Prev skipped", show=False),
    Key("1", "show_tab('trace')", "Trace", show=False),
    Key("2", "show_tab('experts')", "Experts", show=False),
    Key("3", "show_tab('heads')", "Heads & KV", show=False),
    Key("4", "show_tab('raw')", "Raw lines", show=False),
    Key("5", "show_tab('time')", "Time", show=False),
    Key("tab", "cycle_tab", "Next tab", label="tab"),
    Key("c", "copy", "Copy raw"),
    Key("y", "copy_traceparent", "Copy traceparent", show=False),
)

DIAGNOSTICS: tuple[Key, ...] = (
    Key("escape", "back", "Back", label="esc"),
    Key("c", "copy", "Copy"),
)

TRENDS: tuple[Key, ...] = (
    Key("escape", "back", "Back", label="esc"),
    Key("up,k", "scroll('up')", "Scroll up", show=False),
    Key("down,j", "scroll('down')", "Scroll down", show=False),
    Key("pageup,ctrl+b", "scroll('page_up')", "Page up", show=False),
    Key("pagedown,ctrl+f", "scroll('page_down')", "Page down", show=False),
    Key("home", "scroll('home')", "Top", show=False),
    Key("end,G", "scroll('end')", "Bottom", show=False),
)

ERRORS: tuple[Key, ...] = (
    Key("escape", "back", "Back", label="esc"),
    Key("e", "next_error", "Next error"),
    Key("E", "previous_error", "Prev error"),
    Key("enter,o", "context", "In context", label="⏎/o"),
    Key("r", "request", "Request"),
    Key("c", "copy", "Copy", show=False),
)

COMPARE: tuple[Key, ...] = (
    Key("q", "app.quit", "Quit"),
    Key("enter", "drill", "Both sides", label="⏎"),
    Key("tab", "switch", "Figures / requests", label="tab"),
)

COMPARE_DETAIL: tuple[Key, ...] = (
    Key("escape", "back", "Back", label="esc"),
    Key("tab", "switch", "Baseline / candidate", label="tab"),
    Key("n", "skip_next", "Next skipped"),
    Key("N", "skip_previous", "Prev skipped", show=False),
)

#: Only while replaying (``tail --replay``, ``demo``): the app's ``check_action`` hides
#: them otherwise.
REPLAY: tuple[Key, ...] = (
    Key("P", "replay_pause", "Pause replay", show=False),
    Key("full_stop", "replay_step", "Step to the next line", show=False, label="."),
    Key("left_square_bracket", "replay_seek(-60)", "Back 1 min", show=False, label="["),
    Key("right_square_bracket", "replay_seek(60)", "Forward 1 min", show=False, label="]"),
    Key("left_curly_bracket", "replay_seek(-600)", "Back 10 min", show=False, label="{"),
    Key("right_curly_bracket", "replay_seek(600)", "Forward 10 min", show=False, label="}"),
    Key("less_than_sign", "replay_speed(0.5)", "Half speed", show=False, label="<"),
    Key("greater_than_sign", "replay_speed(2)", "Double speed", show=False, label=">"),
    Key("J", "replay_jump", "Seek to a time", show=False),
)

ERROR_CONTEXT: tuple[Key, ...] = (Key("escape,q", "back", "Back", label="esc"),)

HELP: tuple[Key, ...] = (Key("escape,question_mark,q", "back", "Close", label="esc"),)

SCREENS: tuple[tuple[str, tuple[Key, ...]], ...] = (
    ("Everywhere", GLOBAL),
    ("Request table", MAIN + TABLE),
    ("Request detail", DETAIL),
    ("Diagnostics", DIAGNOSTICS),
    ("Trends", TRENDS),
    ("Errors", ERRORS + TABLE),
    ("Error in context", ERROR_CONTEXT),
    ("Replay (tail --replay, demo)", REPLAY),
    ("Compare (compare --tui)", COMPARE),
    ("Compare: both sides of a request", COMPARE_DETAIL),
)


def bindings(keys: tuple[Key, ...]) -> list[Binding]:
    return [k.binding() for k in keys]


def display(key: Key) -> str:
    if key.label:
        return key.label
    names = {"question_mark": "?", "slash": "/", "pageup": "PgUp", "pagedown": "PgDn"}
    return " ".join(names.get(k, k) for k in key.key.split(","))


FILTER_HELP = (
    "Filter: words match request ids and model names; comparisons narrow further. "
    "Fields: skip (0-1 or 50%), latency, ttft, queue, prefill, decode, inference (s or ms), "
    "why (queue, prefill, decode, other), prompt, completion, cached, experts, state, model, "
    "id. Operators: > >= < <= = != ~ (contains); ! negates. "
    "Example: skip>0.5 latency>2 state=finished, why=queue queue>2"
)
