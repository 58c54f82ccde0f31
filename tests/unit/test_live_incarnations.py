"""Inputs of the live tail that need no worker thread: a file named before it exists, and
a path rotated past 65,535 incarnations whose rows still say which file they came from
(the worker across rotations is in tests/integration/test_live_rotation.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparseety_tui.core.extraction import Extractor
from sparseety_tui.ingest.batch import InputError
from sparseety_tui.sources import iter_chunks

# -- item 5: per-token data of a trace read again ------------------------------------------


def token(rid: str, pos: int) -> str:
    return json.dumps({"type": "token", "request_id": rid, "pos": pos, "experts": [[1, 2]]}) + "\n"


# -- item 5: files that appear later --------------------------------------------------------


def test_tail_accepts_a_file_that_does_not_exist_yet(tmp_path: Path) -> None:
    from sparseety_tui.cli.tui import tail_inputs

    later = tmp_path / "later.log"
    files, directories = tail_inputs([str(later)])
    assert files == (str(later),) and directories == ()
    empty = tmp_path / "empty"
    empty.mkdir()
    files, directories = tail_inputs([str(empty)])
    assert files == () and directories == (str(empty),)
    with pytest.raises(InputError, match="no such directory"):
        tail_inputs([str(tmp_path / "nope" / "x.log")])
    with pytest.raises(InputError, match="not a directory"):
        (tmp_path / "plain").write_text("")
        tail_inputs([str(tmp_path / "plain" / "x.log")])


# -- item 6: a traceback at the end of a quiet file ----------------------------------------


def test_rows_of_a_file_beyond_65535_incarnations_are_stored(tmp_path: Path) -> None:
    # Every incarnation of a rotated path is an Extractor file of its own: a path rotated
    # every 100 ms passes 65,535 files in under two hours, and the store must still hold
    # where each row came from (a 16-bit column made every later line "not merged").
    path = tmp_path / "trace.jsonl"
    path.write_text(json.dumps({"request_id": "late", "prompt_tokens": 3}) + "\n")
    extractor = Extractor()
    file = extractor.add_file(str(path))
    for _ in range(70_000):
        file = extractor.new_incarnation(file, "rotated")
    extractor.feed_chunks(file, iter_chunks(path))
    extractor.finish_file(file)
    row = extractor.store.ids.find("late")
    assert row is not None and extractor.store.columns["file"][row] == file > 0xFFFF
    assert extractor.files[file].by_kind == {"trace.request": 1}
