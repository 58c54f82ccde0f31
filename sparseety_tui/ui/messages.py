"""Messages screens send up to the app ("attributes down, messages up"): a screen never
imports the app; it says what the user asked for and the app does it."""

from __future__ import annotations

from textual.message import Message

from sparseety_tui.core.query import ViewQuery


class SnapshotReady(Message):
    """Posted by the ingest worker's thread after a quiet spell (never once per line)."""


class OpenRequest(Message):
    """Open the detail of the request at store row ``row``."""

    def __init__(self, row: int) -> None:
        super().__init__()
        self.row = row


class QueryChanged(Message):
    """The table's filter or sort changed: the worker should compute this view."""

    def __init__(self, query: ViewQuery) -> None:
        super().__init__()
        self.query = query


class HandOff(Message):
    """Copy ``text`` out (clipboard, tmux buffer, else a file): ``what`` names it in the
    message the user sees, ``stem`` names the file it may be written to (ui/handoff.py)."""

    def __init__(self, what: str, text: str, stem: str) -> None:
        super().__init__()
        self.what = what
        self.text = text
        self.stem = stem


class ReplaySeek(Message):
    """Seek the replay to the time the user typed (``J``): the app reads and applies it."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text
