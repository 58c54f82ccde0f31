"""Tokens per second for the sparkline, sampled from successive totals.

A sample is the tokens the totals gained since the last sample over the wall time between
the states they were computed on (the state frozen when the totals job was submitted:
``submitted`` then ``totals_came``). Tokens read as history (a big file's older part, or
what the files held at start) are not a rate: a sample across any history progress is
left out and only restarts the count.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from sparseety_tui.core.figures import Totals

#: Points of the tokens-per-second history kept for the sparkline.
RATE_POINTS = 60
#: A file quiet this long shows 0 tok/s (the last rate sample is otherwise kept).
RATE_QUIET_S = 2.0

Progress = tuple[int, ...]


class RateSampler:
    """The tok/s history. ``log_seconds_per_second``: how fast the log's time runs against
    the wall now (a replay's speed, 0 while paused), so that tok/s is per second of the
    log, as it was when written. Times are the caller's clock values."""

    def __init__(
        self,
        track: bool = True,
        log_seconds_per_second: Callable[[], float] | None = None,
        points: int = RATE_POINTS,
    ) -> None:
        self.track = track
        self.points: deque[float] = deque(maxlen=points)
        self._log_speed = log_seconds_per_second
        # (when, tokens, history progress) of the last sample
        self._last: tuple[float, float, Progress] | None = None
        self._pending: tuple[float, Progress] | None = None

    def submitted(self, at: float, progress: Progress) -> None:
        """A totals job of the state frozen at ``at`` was submitted."""
        self._pending = (at, progress)

    def totals_came(self, totals: Totals | None, narrows: bool) -> None:
        """The totals of the last submitted job came: sample them at their state's time."""
        if self._pending is not None:
            self.sample(*self._pending, totals, narrows)
            self._pending = None

    def sample(
        self, at: float, progress: Progress, totals: Totals | None, narrows: bool = False
    ) -> None:
        """One sample of ``totals`` (of a filter or window when ``narrows``: their change
        is rows coming and going, not a rate, so tok/s stays the whole stream's, sampled
        again from the next whole total)."""
        if not self.track or totals is None:
            return
        if narrows:
            self._last = None
            return
        requests = totals.requests
        tokens = float((requests.prompt_tokens or 0) + (requests.completion_tokens or 0))
        last = self._last
        self._last = (at, tokens, progress)
        if last is None or last[2] != progress:
            return
        dt = at - last[0]
        if self._log_speed is not None:  # a replay: per second of the log's own time
            dt *= self._log_speed()
        if dt > 0:
            self.points.append(max(0.0, (tokens - last[1]) / dt))

    def sample_quiet(
        self, now: float, progress: Progress, totals: Totals | None, narrows: bool
    ) -> bool:
        """While nothing new is read the totals are not computed again, so no sample would
        come and the last rate would stay on screen however long the file is quiet: take a
        sample of the unchanged totals (0 tok/s) once a quiet spell is as long as
        RATE_QUIET_S. Returns whether the rate changed."""
        last = self._last
        if not self.track or last is None or now - last[0] < RATE_QUIET_S:
            return False
        if self.points and self.points[-1] == 0.0:
            self._last = (now, last[1], last[2])  # already 0: nothing new to show
            return False
        self.sample(now, progress, totals, narrows)
        return True

    def quiet_due(self) -> float | None:
        """When a quiet spell's 0 tok/s is due (None: no sample to follow, or 0 shown)."""
        last = self._last
        if not self.track or last is None or (self.points and not self.points[-1]):
            return None
        return last[0] + RATE_QUIET_S
