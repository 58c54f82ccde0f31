"""SGLang timestamps: ``[YYYY-MM-DD HH:MM:SS(.mmm)]`` prefixes in the host's local zone,
and time-only ``[HH:MM:SS]`` prefixes dated by the last dated line of the file."""

from __future__ import annotations

import re
import time

from sparseety_tui.formats._clean import LocalClock


class DateClock:
    """The timestamp methods of ``SglangParser`` (a mixin: the state below is set by its
    ``__init__``, ``_clock`` by ``ServerLogParser``'s)."""

    _clock: LocalClock
    _sec_key: bytes
    _sec_entry: tuple[float | None, tuple[int, int, int], int]
    _date: tuple[int, int, int] | None
    _minutes: dict[bytes, tuple[float | None, tuple[int, int, int], int]]
    _last_hour: int

    def _second(self, stamp: bytes) -> None:
        """Make ``stamp`` (``YYYY-MM-DD HH:MM:SS``) the current second: its date state."""
        minute = self._minutes.get(stamp[:16])
        if minute is None:
            minute = self._minute(stamp[:16])
        base, date, hour = minute
        self._date, self._last_hour = date, hour
        self._sec_key = stamp
        self._sec_entry = (None if base is None else base + int(stamp[17:19]), date, hour)

    def _stamp(self, m: re.Match[bytes] | None) -> float | None:
        if m is None:
            return None
        if m.group("y") is not None:
            stamp = m.group("stamp")
            frac = m.group("frac")
            if frac:
                stamp = stamp[:19]
            if stamp != self._sec_key:
                self._second(stamp)
            if not frac:
                return self._sec_entry[0]
            base = self._minutes[stamp[:16]][0]
            if base is None:
                return None
            return base + (float(m.group("s")) + float(b"0." + frac[1:]))
        self._sec_key = b""  # the date state is about to change under the cached second
        return self._time_only(m)

    def _minute(self, key: bytes) -> tuple[float | None, tuple[int, int, int], int]:
        """(unix seconds of the minute or None for an impossible date, date, hour) of a
        dated prefix's ``YYYY-MM-DD HH:MM``: a pure function of the text, cached, so a
        dated line costs one dict lookup (34 days of log are ~49k distinct minutes)."""
        cached = self._minutes.get(key)
        if cached is not None:
            return cached
        date = (int(key[0:4]), int(key[5:7]), int(key[8:10]))
        hour = int(key[11:13])
        base: float | None = None
        if 1 <= date[1] <= 12 and 1 <= date[2] <= 31:
            base = self._clock.to_unix(date[0], date[1], date[2], hour, int(key[14:16]), 0.0)
        cached = (base, date, hour)
        if len(self._minutes) >= 65536:
            self._minutes.clear()
        self._minutes[key] = cached
        return cached

    def _time_only(self, m: re.Match[bytes]) -> float | None:
        """``[16:43:29 TP0]``: the date of the last dated line, rolled past midnight."""
        hour, minute = int(m.group("h")), int(m.group("mi"))
        sec = float(m.group("s"))
        frac = m.group("frac")
        if frac:
            sec += float(b"0." + frac[1:])
        if self._date is None:
            return None
        if hour + 12 < self._last_hour:  # time-only prefix went past midnight
            y, mo, d = self._date
            nxt = self._clock.to_unix(y, mo, d, 12, 0, 0.0) + 86400
            t = time.localtime(nxt)
            self._date = (t.tm_year, t.tm_mon, t.tm_mday)
        date = self._date
        self._last_hour = hour
        if not (1 <= date[1] <= 12 and 1 <= date[2] <= 31):
            return None
        return self._clock.to_unix(date[0], date[1], date[2], hour, minute, sec)
