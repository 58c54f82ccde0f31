"""Whether the data has shown any part of a request's time (queue, prefill or decode): the
request table then shows its timing columns unless the user chose otherwise (``w``).

Looked at once per snapshot over the rows that are new or changed since the last look
(``Snapshot.unchanged_below``), so a live tail costs what its new rows cost; once seen, it
stays seen (a filter that hides every timed row does not take the columns away).
"""

from __future__ import annotations

from sparseety_tui.ingest.snapshot import Snapshot

#: The store columns whose known values mean "the data has timing".
PARTS = ("queue_s", "prefill_s", "decode_s")


class TimingSeen:
    def __init__(self) -> None:
        self.seen = False
        self._lineage = -1
        self._version = -1
        self._rows = 0

    def look(self, snap: Snapshot) -> bool:
        """Whether any row of ``snap`` (or of a snapshot looked at before) has a part."""
        state = snap.state
        if self.seen or state is None:
            return self.seen
        start = 0
        if snap.lineage == self._lineage and snap.lineage:
            start = min(self._rows, snap.unchanged_below(self._version))
        if start < snap.rows:
            import numpy as np

            cols = state.store.numeric_view(start, snap.rows, PARTS)
            self.seen = any(not np.isnan(values).all() for values in cols.values())
        self._lineage, self._version, self._rows = snap.lineage, state.version, snap.rows
        return self.seen
