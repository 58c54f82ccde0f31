"""Where the errors view says an error is: short unique file names, and line numbers in
the whole file for a big file read tail first (ui.error_places)."""

from __future__ import annotations

from pathlib import Path

from sparseety_tui.core.extraction._extractor import Extractor
from sparseety_tui.ingest.snapshot import FileStatus, Snapshot
from sparseety_tui.sources import RawLine
from sparseety_tui.ui.error_places import Places, short_names

LINE = '[2026-02-27 15:01:51] INFO:     10.0.0.1:1 - "POST /generate HTTP/1.1" 500 x\n'


def test_short_names_keep_as_many_directories_as_tell_files_apart() -> None:
    names = short_names(["/a/x/app.log", "/b/x/app.log", "/c/other.log", "/c/y/app.log"])
    assert names == {
        "/a/x/app.log": "a/x/app.log",
        "/b/x/app.log": "b/x/app.log",
        "/c/other.log": "other.log",
        "/c/y/app.log": "y/app.log",
    }


def test_a_tail_part_is_numbered_from_the_file_start_once_counted(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(LINE * 3)
    ex = Extractor()
    tail = ex.add_file(str(log), "sglang")
    older = ex.add_file(str(log), "sglang")
    ex.feed(tail, [_raw(LINE)])  # the tail part's line 1
    ex.feed(older, [_raw(LINE), _raw(LINE)])  # the older part: lines 1, 2
    state = ex.freeze()
    tail_record, *older_records = state.error_log.records

    def places(line_base: int | None) -> Places:
        status = FileStatus(
            str(log),
            "sglang",
            3,
            {},
            backfill_done=1,
            backfill_total=2,
            parts=(tail, older),
            line_base=line_base,
        )
        return Places(Snapshot(state=state, files=(status,)))

    counting = places(None).of(tail_record)
    assert (counting.line, counting.where, counting.path) == (None, "tail+1", None)
    counted = places(2).of(tail_record)
    assert (counted.line, counted.where, counted.path) == (3, "3", str(log))
    assert [places(2).of(r).line for r in older_records] == [1, 2]


def _raw(text: str) -> RawLine:
    data = text.encode()
    return RawLine(0, len(data), data.rstrip(b"\n"), False)
