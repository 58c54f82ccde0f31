"""A trace with timestamps in s, ms, us and ns and numbers no float holds (issue #9, items 3
and 10), shared by the unit and the parallel (integration) halves of the CLI numbers tests."""

from __future__ import annotations

LINES = (
    # 2024-11-30T12:00:00.123Z, in seconds, milliseconds, microseconds and nanoseconds
    b'{"request_id": "s", "ts": 1732968000.123, "prompt_tokens": 10, "completion_tokens": 1}\n'
    b'{"request_id": "ms", "ts": 1732968000123, "prompt_tokens": 10, "completion_tokens": 2}\n'
    b'{"request_id": "us", "ts": 1732968000123000, "prompt_tokens": 10, "completion_tokens": 3}\n'
    b'{"request_id": "ns", "ts": 1732968000123000000, "prompt_tokens": 10, "completion_tokens": 4}\n'
    # numbers no float holds, and a time that is no date: that field only is unknown
    b'{"request_id": "inf", "ts": 1732968000, "prompt_tokens": 10, "completion_tokens": 5,'
    b' "latency_s": 1e400}\n'
    b'{"request_id": "digits", "prompt_tokens": 1' + b"0" * 5000 + b', "completion_tokens": 6}\n'
    b'{"request_id": "nan", "prompt_tokens": 10, "completion_tokens": 7, "ttft_s": NaN}\n'
    b'{"request_id": "future", "ts": 1e300, "prompt_tokens": 10, "completion_tokens": 8}\n'
)
