"""``key=value | key=value`` request lines (formats/_kvline.py) as data: the shapes of the
line's head, and the type of each key it reads (``KV_FIELDS``)."""

from __future__ import annotations

from sparseety_tui.formats.shapes._loader import LineShape, table

#: ``key=value | key=value`` request lines (``kvline``): the leading timestamp, then
#: Python's default logging head ``LEVEL:logger.name:`` (optionally timestamped).
KV = table(
    "kv",
    "first",
    (
        LineShape(
            "leading_ts",
            rb"^(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2}(?:[.,]\d+)?)\s+",
            "kv.request",
            (
                b"2025-04-01 10:00:01 INFO:sglang.srt.server:Request completed | req_id=5a8b9c"
                b" | prompt_tokens=128",
            ),
            {"1": "text", "2": "text"},
        ),
        LineShape(
            "logger_line",
            rb"^(?:\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\s+)?"
            rb"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL):[\w.]+:",
            "noise",
            (
                b"INFO:sglang.srt.server:Request completed | req_id=5a8b9c | prompt_tokens=128"
                b" | completion_tokens=64 | latency=1.23s | hit_cache=True | model=Qwen-7B",
                b"INFO:sglang.srt.server:Server is ready",
            ),
        ),
    ),
)

#: The keys of a kv request line that name its request, in the order they are looked for.
KV_ID_KEYS = ("req_id", "request_id", "rid", "id")
#: What each other key of a kv request line becomes: (the request field, its type).
#: ``int`` a count (``formats/_numbers.py``), ``seconds`` ``1.23s`` / ``1230ms`` / ``1.23``,
#: ``text`` as written, ``flag`` a true/false word. ``hit_cache`` is a flag, never a count.
KV_FIELDS: dict[str, tuple[str, str]] = {
    "prompt_tokens": ("prompt_tokens", "int"),
    "input_tokens": ("prompt_tokens", "int"),
    "completion_tokens": ("completion_tokens", "int"),
    "output_tokens": ("completion_tokens", "int"),
    "cached_tokens": ("cached_tokens", "int"),
    "latency": ("latency_s", "seconds"),
    "latency_s": ("latency_s", "seconds"),
    "e2e_latency": ("latency_s", "seconds"),
    "ttft": ("ttft_s", "seconds"),
    "ttft_s": ("ttft_s", "seconds"),
    "model": ("model", "text"),
    "hit_cache": ("cache_hit", "flag"),
}
