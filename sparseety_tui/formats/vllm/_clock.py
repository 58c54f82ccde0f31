"""vLLM timestamps: ``MM-DD HH:MM:SS`` without a year, in the host's local zone.

The year is inferred once per file and carried from line to line (the package docstring
says how); ``YearClock`` holds that inference for ``VllmParser``, and its year state is
what a split reader seeds, reads and replays (formats._base.RangeAware).
"""

from __future__ import annotations

import re
import time

from sparseety_tui.formats._base import BoundaryNotes, YearProbe, YearState
from sparseety_tui.formats._clean import LocalClock, wrapper_time

#: The date and time of a wrapper stamp without a zone: ``[2024-07-08 15:17:34]``.
_WRAP_STAMP_RE = re.compile(rb"\[?(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)")


def stamp_year(
    year: int | None, last_month: int, month: int, day: int, reference: float | None
) -> int:
    """The year of a ``MM-DD`` stamp: for a file's first stamp, the year of ``reference``
    (the file's mtime; None: now) unless the stamp's date is after it (then the year
    before); after that ``year``, plus one when the month falls back by half a year or more
    from the last stamp's (Dec -> Jan)."""
    if year is None:
        ref = time.localtime(reference if reference is not None else time.time())
        year = ref.tm_year
        if (month, day) > (ref.tm_mon, ref.tm_mday + 1):
            year -= 1
        return year
    return year + 1 if month <= last_month - 6 else year


class YearClock:
    """The timestamp methods of ``VllmParser`` (a mixin: the state below is set by its
    ``__init__``, ``_clock`` by ``ServerLogParser``'s)."""

    _clock: LocalClock
    _reference: float | None
    _year: int | None
    _last_month: int
    _last_stamp: bytes
    _last_ts: float | None
    boundary: BoundaryNotes | None
    #: The minute of the last stamp read (``b"MM-DD HH:MM"``), the year state it was read
    #: in and its time at second 0: the next stamp of that minute, in that state, is that
    #: time plus its seconds (exactly what ``LocalClock.to_unix`` adds), with no parsing.
    _minute: tuple[bytes, int | None, int] = (b"", None, 0)
    _minute_ts: float = 0.0

    def _stamp_text(self, stamp: bytes) -> float | None:
        """``_stamp`` for a line without a wrapper, from the stamp's text."""
        ts = self._stamp_slow(stamp, None)
        self._last_stamp, self._last_ts = stamp, ts
        return ts

    def _year_for(self, month: int, day: int) -> int:
        self._year = stamp_year(self._year, self._last_month, month, day, self._reference)
        self._last_month = month
        return self._year

    def _stamp(self, m: re.Match[bytes], wrap_ts: bytes | None) -> float | None:
        stamp = m.group("stamp")
        if wrap_ts is None and stamp == self._last_stamp:
            return self._last_ts  # most lines share their second with the previous one
        ts = self._stamp_slow(stamp, wrap_ts)
        if wrap_ts is None:
            self._last_stamp, self._last_ts = stamp, ts
        return ts

    def _stamp_slow(self, stamp: bytes, wrap_ts: bytes | None) -> float | None:
        """``stamp`` is ``b"MM-DD HH:MM:SS"``."""
        if self.boundary is not None and self.boundary.year_probe is None:
            ts = self._stamp_year(stamp, wrap_ts)
            self._note_year_probe(("stamp", stamp, wrap_ts))
            return ts
        return self._stamp_year(stamp, wrap_ts)

    def _note_year_probe(self, probe: YearProbe) -> None:
        notes = self.boundary
        if notes is not None and notes.year_probe is None and self._year is not None:
            notes.year_probe = probe
            notes.year_after_probe = (self._year, self._last_month)

    def year_state(self) -> YearState:
        """(year, month of the last stamp): all the year inference carries across lines."""
        return self._year, self._last_month

    def replay_year_probe(self, probe: YearProbe, state: YearState) -> YearState:
        """The year state after ``probe`` (see ``BoundaryNotes``) on a parser whose state
        was ``state``. For checking a split read; changes this parser's year state."""
        self._year, self._last_month = state
        self._last_stamp = b""
        if probe[0] == "stamp":
            self._stamp_year(probe[1], probe[2])
        else:
            self._wrap_ts(probe[1])
        return self.year_state()

    def _stamp_year(self, stamp: bytes, wrap_ts: bytes | None) -> float | None:
        if wrap_ts is None and self._minute == (stamp[:11], self._year, self._last_month):
            return self._minute_ts + float(stamp[12:14])  # (_year_for would change nothing)
        month = int(stamp[0:2])
        day = int(stamp[3:5])
        if wrap_ts is not None:
            year, instant = wrapper_time(wrap_ts)
            if year and self._year is None:
                self._year = year
                self._last_month = month
            if instant is not None:
                self._year_for(month, day)
                return instant
        if not (1 <= month <= 12 and 1 <= day <= 31):
            return None
        year = self._year_for(month, day)
        self._minute_ts = self._clock.to_unix(
            year, month, day, int(stamp[6:8]), int(stamp[9:11]), 0.0
        )
        self._minute = (stamp[:11], year, month)
        return self._minute_ts + float(stamp[12:14])

    def _wrap_ts(self, wrap_ts: bytes | None) -> float | None:
        """ts of a line whose only timestamp is a wrapper's (KServe, collectors)."""
        if wrap_ts is None:
            return None
        year, instant = wrapper_time(wrap_ts)
        if instant is not None or not year:
            return instant
        digits = _WRAP_STAMP_RE.match(wrap_ts)
        if digits is None:
            return None
        y, mo, d, h, mi, s = (int(g) for g in digits.groups())
        if self._year is None:
            self._year = y
            self._last_month = mo
            self._note_year_probe(("wrap", wrap_ts))
        return self._clock.to_unix(y, mo, d, h, mi, float(s))
