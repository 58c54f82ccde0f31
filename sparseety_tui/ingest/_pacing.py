"""When the ingest worker publishes a snapshot: the pacing policy, without the thread.

While lines keep coming a snapshot is published about every ``gap_s``, counted from when
the read that made the last one began (the UI shows each one as it comes); the first one
after a quiet spell goes out at once. Meanwhile lines
gather in the file and are read in one go just before the next snapshot: one feed of many
lines costs a fraction of many feeds of a few (the native scanners take only runs of
``BULK_MIN_LINES``), and one freeze instead of many.
"""

from __future__ import annotations

import math
from collections.abc import Hashable

#: Seconds between two snapshots while lines keep coming, until the UI asks for another gap.
PUBLISH_GAP_S = 0.05
#: The gap the UI may ask for (by what its frames cost) is kept between these: a longer gap
#: keeps the tail of write -> screen latency high (bench/tail_latency.py).
MIN_PUBLISH_GAP_S = 0.03
MAX_PUBLISH_GAP_S = 0.1


class PublishPacer:
    """Decides, pass by pass, whether the worker publishes a snapshot now.

    Each pass the worker describes what it would publish by a ``key`` (what changed:
    versions, counts, settledness) and whether a totals/view result came
    (``news``). Nothing new: no snapshot. News too soon after the last snapshot: it is
    deferred (``deferred``) and published by a later pass once ``wait_s`` reaches 0; a
    result that came meanwhile is not forgotten. Times are the caller's clock values.
    """

    def __init__(self, gap_s: float = PUBLISH_GAP_S) -> None:
        #: Seconds between two snapshots while lines keep coming.
        self.gap_s = gap_s
        #: Something waits to be published once the gap has passed.
        self.deferred = False
        self._last_at = -math.inf
        self._last_key: Hashable = ()
        self._news_unshown = False  # a result not published yet (its publish was deferred)

    def should_publish(self, key: Hashable, news: bool, now: float) -> bool:
        """Whether to publish now; when True the caller publishes and calls ``published``.

        A result is published once, when it comes: it is not part of ``key``, since its
        going away in the next pass would be one more publish of the same content.
        """
        news = news or self._news_unshown
        if key == self._last_key and not news:
            return False
        if now - self._last_at < self.gap_s:
            self.deferred = True
            self._news_unshown = news
            return False
        self.deferred = False
        self._news_unshown = False
        self._last_key = key
        return True

    def published(self, began: float) -> None:
        """A snapshot went out of what was read from ``began`` on (when the pass that made
        it began reading). The next gap counts from there, so the time a read takes is
        part of the gap: a busy per-line path does not stretch the cycle to the gap plus
        the read, and a snapshot still goes out about every gap (the UI takes one at a
        time in any case)."""
        self._last_at = began

    def wait_s(self, now: float) -> float:
        """Seconds from ``now`` until the next snapshot may be published (0: now)."""
        return max(0.0, self._last_at + self.gap_s - now)
