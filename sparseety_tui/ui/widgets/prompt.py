"""The one-line prompt of the main screen (filter, go to id) that never loses a keystroke.

Textual delivers a key to the widget that had focus when the app *read* it, and a key
binding runs only after the key has bubbled back up to the app. So the keys typed right
after ``/`` (a paste, a fast typist, a loaded host) were already on their way to the table
when the prompt asked for focus, and ``q`` reached the app's quit binding. The fix is in
two halves: the opening keys are priority bindings that take focus synchronously (see
``MainScreen._open_prompt``), so every later key goes to the prompt; and the prompt handles
each key itself, in its own queue and so in typing order: enter and esc close it, and its
editing keys (backspace, ctrl+u ...) edit it at once (as bindings they would run late,
after an enter typed behind them). Keys already queued for it when it closed are handed
back to the app as if typed again, neither eaten as text nor lost.
"""

from __future__ import annotations

from textual import events
from textual.message import Message
from textual.widget import Widget

from sparseety_tui.ui.textual_compat import KeyFirstInput, own_bindings


class Prompt(KeyFirstInput):
    """An Input that is open or closed, and closes itself on enter / esc in key order."""

    class Done(Message):
        """The prompt closed: ``value`` submitted (enter) or ``None`` (esc: cancelled)."""

        def __init__(self, value: str | None) -> None:
            super().__init__()
            self.value = value

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        # select_on_focus off: the old filter opens to be edited, not to be typed over.
        super().__init__(id=id, classes=classes, select_on_focus=False)
        self.is_open = False
        self._return_to: Widget | None = None

    def open(self, value: str, placeholder: str) -> None:
        """Show ``value`` to edit (cursor at its end) and take focus now, not later."""
        self.placeholder = placeholder
        self.value = value
        self.cursor_position = len(value)
        self.is_open = True
        focused = self.screen.focused
        self._return_to = focused if focused is not self else None
        self.screen.set_focus(self)

    def close(self) -> None:
        """Give focus back (synchronously) to the widget that had it when the prompt opened."""
        self.is_open = False
        if self.screen.focused is self:
            self.screen.set_focus(self._return_to)

    async def take_key(self, event: events.Key) -> None:
        if not self.is_open:
            # Queued for the prompt before it closed: type it again, where focus is now
            # (never back to a closed prompt that still has focus: that would loop).
            event.stop()
            event.prevent_default()
            if self.screen.focused is not self:
                self.app.post_message(events.Key(event.key, event.character))
            return
        if event.key in ("enter", "escape"):
            event.stop()
            event.prevent_default()
            self.close()  # now, in key order: the keys queued after this go elsewhere
            self.post_message(self.Done(self.value if event.key == "enter" else None))
            return
        editing = own_bindings(self).key_to_bindings.get(event.key)
        if editing:
            # The Input's own editing keys (backspace, ctrl+u, ctrl+w ...) run here and
            # now: as bindings they would run only once the key had bubbled up to the app,
            # after an enter typed behind them had already closed the prompt.
            event.stop()
            event.prevent_default()
            await self.run_action(editing[0].action)
            return
        await super().take_key(event)

    def take_paste(self, event: events.Paste) -> None:
        if not self.is_open:
            event.stop()
            if self.screen.focused is not self:
                self.app.post_message(events.Paste(event.text))
            return
        super().take_paste(event)
