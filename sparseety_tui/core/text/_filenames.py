"""Short names for the logs read together: the shortest path suffix that tells them apart.

Two servers usually log to files of the same name in different directories
(``a/server.log``, ``b/server.log``): the file name alone would make two rows read the
same, and the whole path does not fit a table column. Each path is named by its last
components, as few as make it unique among the paths given (as toolong and lnav show the
file a line came from).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

_SEPARATORS = ("/", "\\")


def _parts(path: str) -> list[str]:
    """A path's components, empty ones dropped (``a//b/`` is ``a``, ``b``)."""
    for sep in _SEPARATORS[1:]:
        path = path.replace(sep, _SEPARATORS[0])
    return [part for part in path.split(_SEPARATORS[0]) if part]


def short_names(paths: Iterable[str]) -> dict[str, str]:
    """path -> its shortest unique suffix (``/x/a/server.log`` -> ``a/server.log`` beside
    ``/x/b/server.log``; ``/x/a/vllm.log`` -> ``vllm.log`` beside them). A path that is
    a suffix of another (``server.log`` and ``a/server.log``) keeps its whole text, and
    so does a path with no components (``/``)."""
    unique = list(dict.fromkeys(paths))
    split = {path: _parts(path) for path in unique}
    out: dict[str, str] = {}
    pending = list(unique)
    k = 1
    # Per suffix length, count each suffix once over all paths (a followed directory may
    # hold hundreds of logs: no comparison of every pair).
    while pending:
        seen = Counter(tuple(parts[-k:]) for parts in split.values())
        left = []
        for path in pending:
            parts = split[path]
            if k > len(parts):
                out[path] = path  # no shorter name tells it apart
            elif seen[tuple(parts[-k:])] == 1:
                out[path] = "/".join(parts[-k:])
            else:
                left.append(path)
        pending = left
        k += 1
    return out
