"""Errors of the capture package (torch-free, so the CLI can name them without torch)."""

from __future__ import annotations


class CaptureError(RuntimeError):
    """The capture cannot go on without recording something other than the model's own
    routing (an output of an unexpected shape, rows that do not add up): stop, say why."""


class UnsupportedModelError(CaptureError):
    """A model (class, transformers version) whose routing this capture cannot read
    exactly. Raised before anything is generated."""
