"""The logs ``serve`` follows: ``tail``'s ingest worker, run headless.

The worker thread owns the Extractor (as under the TUI); every answer reads the
``FrozenExtractor`` of its latest snapshot, which no thread writes, so any number of HTTP
requests can read it at once without a lock and without holding up ingest.
"""

from __future__ import annotations

from sparseety_tui.core.figures import ModelShape
from sparseety_tui.core.store import FrozenExtractor
from sparseety_tui.ingest.batch import Options, make_extractor
from sparseety_tui.ingest.snapshot import LiveOptions
from sparseety_tui.ingest.worker import IngestWorker


class FollowedLogs:
    """Follows ``live.paths`` (and new files in ``live.directories``) until ``stop``."""

    def __init__(self, live: LiveOptions, options: Options, shape: ModelShape) -> None:
        # A named --tokenizer loads here: a bad one is a one-line error before binding.
        extractor = make_extractor(options)
        # What is answered before the first snapshot: nothing read yet, every figure empty.
        self._empty = extractor.freeze()
        self._worker = IngestWorker(extractor, shape, live)
        self.shape = shape

    def start(self) -> None:
        self._worker.start()

    def stop(self) -> None:
        self._worker.stop()

    def state(self) -> FrozenExtractor:
        """Everything read so far, frozen."""
        state = self._worker.snapshot.state
        return self._empty if state is None else state

    def current(self) -> tuple[int, FrozenExtractor]:
        """The snapshot's version (it changes whenever what was read changes: the metrics
        cache is keyed on it) and its state, from one snapshot."""
        snapshot = self._worker.snapshot
        return snapshot.version, self._empty if snapshot.state is None else snapshot.state

    @property
    def problem(self) -> str | None:
        """Why ingest stopped, if it did (the answers then cover what was read before)."""
        return self._worker.snapshot.error

    def drain(self, timeout: float = 10.0) -> bool:
        """Wait until everything readable now is read (tests and benchmarks)."""
        return self._worker.drain(timeout)
