"""Short names for the logs read together: the shortest path suffix that tells them apart.

Two servers usually log to files of the same name in different directories
(``a/server.log``, ``b/server.log``): the file name alone would make two rows read the
same, and the whole path does not fit a table column. Each path is named by its last
components, as few as make it unique among the paths given (as toolong and lnav show the
file a line came from).
"""

from __future__ import annotations

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
    for path, parts in split.items():
        name = path
        for k in range(1, len(parts) + 1):
            suffix = parts[-k:]
            if not any(other != path and theirs[-k:] == suffix for other, theirs in split.items()):
                name = "/".join(suffix)
                break
        out[path] = name
    return out
