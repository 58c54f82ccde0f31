"""Prometheus text exposition lines (formats/_prometheus.py): samples (sglang docs and
MeetKai/functionary #263) and comments. Linear for ``match`` and ``search``: a name is
read from its first character only, and a number's digits split one way
(``\\d+(?:\\.\\d*)?``, not ``\\d+\\.?\\d*``, which let a failing line try every split of a
long run of digits)."""

from __future__ import annotations

from sparseety_tui.formats.shapes._loader import LineShape, table

#: A sample line and a comment line are told apart by their rows; a label is a part of a
#: sample's labels (``findall``). A value may be ``NaN`` or ``+Inf``: it is text here.
PROMETHEUS = table(
    "prometheus",
    "parts",
    (
        LineShape(
            "sample",
            rb"(?<![A-Za-z0-9_:])(?P<name>[A-Za-z_:][A-Za-z0-9_:]*)(?<!:)"
            rb'(?:\{(?P<labels>(?:[^"}]|"(?:[^"\\]|\\.)*")*)\})?'
            rb" (?P<value>[-+]?(?:\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?"
            rb"|Inf|NaN|inf|nan))"
            rb"(?: -?\d+)?\s*$",
            "prometheus",
            (
                b'sglang:token_usage{model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.28',
                b'sglang:time_to_first_token_seconds_bucket{le="+Inf",model_name="m"} 11008.0',
            ),
            {"name": "text", "labels": "text", "value": "text"},
        ),
        LineShape(
            "comment",
            rb"# (?:HELP|TYPE|UNIT|EOF)\b",
            "prometheus",
            (
                b"# HELP sglang:token_usage The token usage",
                b"# TYPE vllm:num_requests_running gauge",
            ),
        ),
        LineShape(
            "label",
            rb'(?<![A-Za-z0-9_])([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"',
            "prometheus",
            (b'le="+Inf",model_name="m"',),
            {"1": "text", "2": "text"},
            op="search",
        ),
    ),
)
