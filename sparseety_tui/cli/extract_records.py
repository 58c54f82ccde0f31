"""What ``extract`` does to each record between the store and the output: the tutorial's
options (``--sparse-metrics``, ``--include-skipped``, ``--max-tokens-per-request``) and,
last, redaction (``--redact``): one ``RecordTransform`` for ``core.report.extract_lines``."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import Any

from sparseety_tui.cli.errors import warn
from sparseety_tui.core.redact import Redactor
from sparseety_tui.core.report import RecordTransform

#: The per-request sparse figures ``--sparse-metrics false`` leaves out.
SPARSE_KEYS = (
    "effective_compute_tokens",
    "sparse_skipped_tokens",
    "skip_ratio",
    "compute_vs_nominal",
    "experts",
    "skipped",
    "cost_model",
)


def _tokens(record: dict[str, Any]) -> int | None:
    """Prompt + completion tokens, else the logical tokens; None when unknown."""
    prompt, completion = record.get("prompt_tokens"), record.get("completion_tokens")
    if prompt is not None and completion is not None:
        return int(prompt) + int(completion)
    logical = record.get("logical_tokens")
    return None if logical is None else int(logical)


@dataclass
class RecordOptions:
    sparse_metrics: bool = True
    include_skipped: bool = True
    max_tokens: int | None = None
    redactor: Redactor | None = None
    left_out: int = field(default=0)

    @classmethod
    def of(cls, args: argparse.Namespace, redactor: Redactor | None) -> RecordOptions:
        if getattr(args, "include_attention_weights", False):
            warn("note: no supported log format records attention weights; none are written")
        return cls(
            sparse_metrics=getattr(args, "sparse_metrics", True),
            include_skipped=getattr(args, "include_skipped", True),
            max_tokens=getattr(args, "max_tokens_per_request", None),
            redactor=redactor,
        )

    def transform(self) -> RecordTransform | None:
        """None when every record is written as it is (the fast path)."""
        if self.sparse_metrics and self.include_skipped and self.max_tokens is None:
            return None if self.redactor is None else self.redactor.document
        return self._apply

    def _apply(self, record: dict[str, Any]) -> dict[str, Any] | None:
        if self.max_tokens is not None:
            tokens = _tokens(record)
            if tokens is not None and tokens > self.max_tokens:
                self.left_out += 1
                return None
        if not self.sparse_metrics:
            for key in SPARSE_KEYS:
                record.pop(key, None)
        if not self.include_skipped:
            record.pop("skipped", None)
        return record if self.redactor is None else self.redactor.document(record)

    def report(self) -> None:
        if self.max_tokens is not None:
            warn(f"left out {self.left_out:,} request(s) of more than {self.max_tokens:,} tokens")
