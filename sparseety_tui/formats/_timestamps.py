"""Epoch numbers and ISO strings as unix seconds: the unit told by magnitude, and the range
of instants the tool can show as a date.

Logs write epoch times in seconds (``time.time()``), milliseconds (JavaScript, Java,
``"ts": 1732968000123``), microseconds or nanoseconds (Go, ``time.time_ns()``). A number
says its unit by its size: an instant between 1973-03-03 and 5138-11-16 is below 1e11 in
seconds, in [1e11, 1e14) in milliseconds, in [1e14, 1e17) in microseconds and 1e17 or
more in nanoseconds. So the only instants read in the wrong unit are milliseconds,
microseconds or nanoseconds before March 1973 and seconds after the year 5138, which no
inference log holds. Log viewers such as lnav and Grafana's log panels tell the unit the
same way.

What is still out of range after the unit is known is unknown, never guessed: a negative
number (before 1970), NaN or infinity, or an instant from the year 10000 on, which no
date type (``datetime``, ``time.strftime``) can show. native/scan.c applies the same
thresholds (``tests/unit/test_native_scan.py`` holds them equal).
"""

from __future__ import annotations

import math
import time
from datetime import datetime, timezone

#: Numbers below this are seconds; below ``MILLIS_BELOW`` milliseconds; below
#: ``MICROS_BELOW`` microseconds; anything larger nanoseconds.
SECONDS_BELOW = 1e11
MILLIS_BELOW = 1e14
MICROS_BELOW = 1e17
#: 10000-01-01T00:00:00Z: the first instant that is not a date with a four-digit year.
TIME_END = 253402300800.0

#: Why a value was left unknown (the reasons counted per file, see formats/_base.py).
NOT_A_TIMESTAMP = "not a timestamp"
OUT_OF_RANGE = "timestamp out of range"


def known_time(seconds: float) -> bool:
    """True for unix seconds the tool can show as a date (1970 to 9999); NaN is False."""
    return 0.0 <= seconds < TIME_END


def epoch_seconds(number: float) -> float | None:
    """Unix seconds from an epoch number in s, ms, us or ns (told by its size); None
    when it is out of range (negative, NaN, infinite, or the year 10000 or later)."""
    value = float(number)
    if not value >= 0.0:  # negative or NaN
        return None
    if value < SECONDS_BELOW:
        return value
    if value < MILLIS_BELOW:
        value /= 1e3
    elif value < MICROS_BELOW:
        value /= 1e6
    else:
        value /= 1e9  # infinity stays infinite, and out of range
    return value if value < TIME_END else None


def parse_timestamp(value: object) -> float | None:
    """Unix seconds from an epoch number (any unit, see ``epoch_seconds``) or an ISO 8601
    string (``Z`` allowed); None when it is neither, or out of range.

    A timestamp without a zone is read as UTC and shown as UTC, so the tool displays the
    same wall-clock time the log printed, whatever the viewing machine's zone.
    """
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return epoch_seconds(value)
        except OverflowError:  # an int too big for a float
            return None
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00", 1))
        except ValueError:
            return None
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=timezone.utc)
        seconds = parsed.timestamp()
        return seconds if known_time(seconds) else None
    return None


def timestamp_problem(value: object) -> str:
    """Why ``parse_timestamp`` gave None for ``value``: a number or a date that is out of
    range, or something that is no timestamp at all."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return OUT_OF_RANGE
    if isinstance(value, str):
        try:
            datetime.fromisoformat(value.replace("Z", "+00:00", 1))
        except ValueError:
            return NOT_A_TIMESTAMP
        return OUT_OF_RANGE
    return NOT_A_TIMESTAMP


def utc_text(seconds: object, pattern: str) -> str | None:
    """``strftime(pattern)`` of unix seconds in UTC, or None when they are unknown (NaN,
    not a number) or out of range: never raises, whatever number a log or a derivation
    produced."""
    if isinstance(seconds, bool):
        return None
    try:
        value = float(seconds)  # type: ignore[arg-type]  # numpy scalars and ints too
    except (TypeError, ValueError, OverflowError):
        return None
    if not known_time(value):
        return None
    try:
        return time.strftime(pattern, time.gmtime(math.floor(value)))
    except (OverflowError, OSError, ValueError):
        return None
