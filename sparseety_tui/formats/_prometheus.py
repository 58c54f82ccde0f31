"""Prometheus text exposition lines (``/metrics`` output pasted into or tailed as a log).

Samples (real, sglang docs and MeetKai/functionary #263)::

    # HELP sglang:token_usage The token usage
    # TYPE vllm:num_requests_running gauge
    sglang:token_usage{model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.28
    sglang:time_to_first_token_seconds_bucket{le="+Inf",model_name="m"} 11008.0

Both server families recognise these lines as kind ``prometheus``; they are aggregates
with no request id, so no event is made from them (``parse_sample`` is there for callers
that want the numbers).
"""

from __future__ import annotations

from sparseety_tui.formats.shapes import PROMETHEUS

#: ``name{labels} value [timestamp]``, a comment, and one label of a sample's labels
#: (``shapes.prometheus.PROMETHEUS``).
SAMPLE_RE = PROMETHEUS.bytes_regex("sample")
COMMENT_RE = PROMETHEUS.bytes_regex("comment")
_LABEL_RE = PROMETHEUS.bytes_regex("label")


def is_exposition_line(line: bytes) -> bool:
    """A ``# HELP``/``# TYPE`` comment or a metric sample line."""
    if line[:2] == b"# ":
        return COMMENT_RE.match(line) is not None
    return SAMPLE_RE.match(line) is not None


def family_of(line: bytes) -> str | None:
    """``"vllm"`` / ``"sglang"`` when the metric name says so."""
    if b"vllm:" in line[:64]:
        return "vllm"
    if b"sglang:" in line[:64]:
        return "sglang"
    return None


def parse_sample(line: bytes) -> tuple[str, dict[str, str], float] | None:
    """(name, labels, value) of a sample line, or None for comments and other lines."""
    m = SAMPLE_RE.match(line)
    if m is None:
        return None
    labels = {
        k.decode("utf-8", "replace"): v.decode("utf-8", "replace")
        for k, v in _LABEL_RE.findall(m.group("labels") or b"")
    }
    return m.group("name").decode("ascii", "replace"), labels, float(m.group("value"))
