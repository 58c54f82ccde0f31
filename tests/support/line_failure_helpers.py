"""Kv lines, a parser that raises on one marked line, and the checks that such a line costs
that line only, shared by the batch (unit) and the worker (integration) halves of the
line-failure tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from sparseety_tui.core.extraction import Extractor
from sparseety_tui.events import LineKind, ParsedLine


def kv_line(rid: str, **fields: object) -> str:
    parts = [f"req_id={rid}", *(f"{key}={value}" for key, value in fields.items())]
    return "INFO:sglang.srt.server:Request completed | " + " | ".join(parts) + "\n"


def column(extractor: Extractor, name: str, rid: str) -> Any:
    row = extractor.store.ids.find(rid)
    assert row is not None, rid
    return extractor.store.columns[name][row]


def assert_consistent(extractor: Extractor) -> None:
    """Every column, offset and length has one entry per id: no half-appended row."""
    store = extractor.store
    sizes = {name: len(col) for name, col in store.columns.items()}
    sizes["offset"], sizes["length"] = len(store.offset), len(store.length)
    assert set(sizes.values()) == {len(store.ids)}, sizes


def accounted(extractor: Extractor, file: int = 0) -> dict[str, int]:
    state = extractor.files[file]
    assert sum(state.by_kind.values()) == state.lines_total
    return dict(state.by_kind)


MARK = b"BOOM"


def raising_parse(real: Callable[[Any, bytes], ParsedLine]) -> Callable[[Any, bytes], ParsedLine]:
    """A parser's parse that raises on lines holding ``MARK`` (a parser bug stand-in)."""

    def parse(self: Any, line: bytes) -> ParsedLine:
        if MARK in line:
            raise RuntimeError("boom")
        return real(self, line)

    return parse


def kv_log(path: Path, n: int, bad_at: int) -> None:
    path.write_text(
        "".join(kv_line("BOOM" if i == bad_at else f"r{i}", prompt_tokens=i) for i in range(n))
    )


def assert_one_line_lost(extractor: Extractor, n: int, bad_line_no: int, kind: str) -> None:
    assert accounted(extractor) == {kind: n - 1, LineKind.UNPARSED: 1}
    (diagnostic,) = extractor.files[0].diagnostics
    assert diagnostic.line_no == bad_line_no
    assert diagnostic.reason == "parser error: RuntimeError: boom"
    assert len(extractor.store) == n - 1
    assert_consistent(extractor)
