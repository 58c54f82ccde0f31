"""A request's times: what can be derived from what a log said. One function, used by the
Extractor when lines arrive and by the detail view from the re-read lines, so both show
the same TTFT and start.

Times are unix seconds, durations seconds; NaN is unknown and stays unknown unless a rule
below gives it from known values. A derived time that is no date the tool can show
(before 1970, or from the year 10000 on: ``formats._timestamps.known_time``) stays
unknown too. Latency is not derived from finished − received: a log that reports both
without a latency keeps an unknown latency, as ``summary`` and ``extract`` have always
reported it (deriving it would change their numbers).
"""

from __future__ import annotations

from typing import NamedTuple

from sparseety_tui.formats import known_time


class RequestTimes(NamedTuple):
    received: float
    ttft: float
    latency: float


def derive_times(
    *, received: float, first_token: float, finished: float, ttft: float, latency: float
) -> RequestTimes:
    """Fill what the rules give: received = finished − latency when the start is unknown;
    TTFT = first token − received when it is unknown and the first token came after."""
    if received != received and finished == finished and latency == latency:
        start = finished - latency
        if known_time(start):  # a latency longer than the epoch gives no start
            received = start
    if ttft != ttft and received == received and first_token >= received:
        ttft = first_token - received  # (a NaN first token compares False above)
    return RequestTimes(received, ttft, latency)
