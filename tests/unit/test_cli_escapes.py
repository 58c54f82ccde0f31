"""What the CLI prints of hostile text stays literal and valid (escaped JSON, the bytes of
a name that is not UTF-8), and a request's detail says when its tokenizer fails. The same
inputs through the CLI as a user runs it are in tests/integration/test_cli_hardening.py."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from sparseety_tui.core.detail import build_detail
from sparseety_tui.core.extraction import Extractor
from sparseety_tui.core.text._literal import JSON_ESCAPED, escape, escape_json
from sparseety_tui.core.tokens import TokenCounter
from sparseety_tui.ingest.batch import ingest_file


def trace_line(**fields: Any) -> bytes:
    return orjson.dumps(fields) + b"\n"


# -- item 8: everything the CLI prints is literal ------------------------------------------


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=30),
            st.text(alphabet=st.sampled_from([chr(c) for c in JSON_ESCAPED] + ["é", "—", "中"])),
        ),
        max_size=8,
    )
)
def test_escape_json_keeps_json_valid_and_equal(texts: list[str]) -> None:
    document = {"texts": texts, **{t: len(t) for t in texts}}
    encoded = escape_json(orjson.dumps(document))
    assert orjson.loads(encoded) == document
    assert not any(chr(code).encode() in encoded for code in JSON_ESCAPED)


def test_escape_shows_the_bytes_of_a_non_utf8_name() -> None:
    name = os.fsdecode(b"caf\xe9\x1b.log")
    assert escape(name) == "caf\\xe9\\x1b.log"


# -- item 9: one line, never a traceback -----------------------------------------------------


def test_the_detail_of_a_request_says_when_the_tokenizer_fails(tmp_path: Path) -> None:
    bad = tmp_path / "tokenizer.json"
    bad.write_text("{}")
    path = tmp_path / "ids.jsonl"
    path.write_bytes(trace_line(request_id="a", prompt_token_ids=[1, 2, 3]))
    extractor = Extractor(tokens=TokenCounter(str(bad)))
    ingest_file(extractor, str(path))
    detail = build_detail(extractor.freeze(), 0)
    assert detail.tokens == []
    assert any(p.startswith("tokens not shown: cannot load") for p in detail.problems)
