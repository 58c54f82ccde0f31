"""Forward hooks that record, per forward pass, the experts each MoE layer used.

    with RoutingCapture(model) as cap:
        model.generate(input_ids, max_new_tokens=16)
    rows = cap.rows()          # Routing: [positions][moe_layers][top_k] ids and weights

A hook only reads: it returns None (so the module's output is passed on untouched) and
keeps a detached copy of the ``(indices, weights)`` pair, so generated ids and logits are
bit for bit the ones without hooks (tests/capture/test_conformance.py checks it for every
supported class). The hooks are removed when the ``with`` block ends, also on error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from sparseety_tui.capture.adapters import Site, find_sites, transformers_version
from sparseety_tui.capture.errors import CaptureError


@dataclass
class Routing:
    """Routing of consecutive positions, one row per position fed through the model:
    ``indices[row][j]`` are the ``top_k`` experts of MoE layer ``moe_layers[j]``, and
    ``weights`` the exact float values the model weighted them with (``tolist()`` of the
    float32 tensor: a float64 holding the float32 value)."""

    moe_layers: list[int]
    indices: list[list[list[int]]] = field(default_factory=list)
    weights: list[list[list[float]]] = field(default_factory=list)


class RoutingCapture:
    """Hooks on every router of ``model`` (see ``adapters.find_sites``) for the duration
    of a ``with`` block. ``calls()`` gives the raw per-call tensors, ``rows()`` the rows of
    a batch of one, concatenated over the calls (prefill, then one per decode step)."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.version = transformers_version()
        self.sites: list[Site] = find_sites(model, self.version)
        self.moe_layers = [s.layer for s in self.sites]
        self._calls: dict[int, list[tuple[Any, Any]]] = {s.layer: [] for s in self.sites}
        self._handles: list[Any] = []

    def __enter__(self) -> RoutingCapture:
        for site in self.sites:
            self._handles.append(site.module.register_forward_hook(self._hook(site)))
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()

    def _hook(self, site: Site) -> Any:
        calls = self._calls[site.layer]
        read = site.adapter.read
        parent = site.parent

        def hook(module: Any, _inputs: Any, output: Any) -> None:
            idx, w = read(module, parent, output)
            calls.append((idx.detach().to("cpu", copy=True), w.detach().to("cpu", copy=True)))

        return hook

    def clear(self) -> None:
        """Forget what was recorded (between requests)."""
        for calls in self._calls.values():
            calls.clear()

    def rows(self) -> Routing:
        """The recorded calls as position rows (batch of one). Every MoE layer must have
        seen the same calls with the same row counts, else the recording is not one
        sequence and this says so instead of guessing."""
        import torch

        per_layer = [self._calls[layer] for layer in self.moe_layers]
        shapes = {tuple(int(i.shape[0]) for i, _w in calls) for calls in per_layer}
        if len(shapes) != 1:
            raise CaptureError(
                "MoE layers saw different forward passes (rows per call differ across "
                f"layers: {sorted(shapes)[:2]}); the capture is not one sequence"
            )
        out = Routing(list(self.moe_layers))
        if not per_layer[0]:
            return out
        idx = torch.stack([torch.cat([i for i, _w in calls]) for calls in per_layer], dim=1)
        w = torch.stack([torch.cat([w.float() for _i, w in calls]) for calls in per_layer], dim=1)
        out.indices = [[[int(e) for e in k] for k in row] for row in idx.tolist()]
        out.weights = w.tolist()
        return out
