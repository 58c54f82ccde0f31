"""Request ids named by a prefix (``--request chatcmpl-3f9``): which rows it names.

Used by ``tail --request``: an id is long and a user copies its start. A prefix names a
request only when exactly one id starts with it; otherwise the caller lists a few of those
it names so the user can type more of the one they meant.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sparseety_tui.core.text import quote

#: How many of an ambiguous prefix's ids a message lists.
SHOWN_CANDIDATES = 3


@dataclass(frozen=True)
class PrefixMatches:
    count: int = 0  # ids that start with the prefix, in the rows scanned
    rows: tuple[int, ...] = ()  # the first SHOWN_CANDIDATES of them
    scanned: int = 0  # rows looked at: a later scan starts there

    def more(self, ids: Sequence[str], prefix: str) -> PrefixMatches:
        """These matches and those of the rows added since (``ids`` only grows)."""
        count = self.count
        rows = list(self.rows)
        for row in range(self.scanned, len(ids)):
            if ids[row].startswith(prefix):
                count += 1
                if len(rows) < SHOWN_CANDIDATES:
                    rows.append(row)
        return PrefixMatches(count, tuple(rows), len(ids))


def ambiguous_message(prefix: str, matches: PrefixMatches, ids: Sequence[str]) -> str:
    shown = ", ".join(quote(ids[row]) for row in matches.rows)
    more = ", …" if matches.count > len(matches.rows) else ""
    return (
        f"request prefix {quote(prefix)} is ambiguous: {matches.count:,} requests start "
        f"with it ({shown}{more}); give more of the id"
    )
