"""The Extractor: every line accounted for, merges by request id, bulk == per-line."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sparseety_tui.core.extraction._extractor as extractor_module
from sparseety_tui.core.extraction._extractor import Extractor
from sparseety_tui.core.store import STATES
from sparseety_tui.ingest.batch import ingest_file
from sparseety_tui.sources import RawLine, iter_lines


def lines_of(*texts: bytes) -> list[RawLine]:
    out, offset = [], 0
    for text in texts:
        out.append(RawLine(offset, len(text) + 1, text, False))
        offset += len(text) + 1
    return out


def extract_bytes(tmp_path: Path, content: bytes, name: str = "log.jsonl", **kw: Any) -> Extractor:
    path = tmp_path / name
    path.write_bytes(content)
    extractor = Extractor(**kw)
    file = extractor.add_file(str(path))
    extractor.feed(file, iter_lines(str(path)))
    extractor.finish_file(file)
    return extractor


def dumps(obj: Any) -> bytes:
    return orjson.dumps(obj)


def test_kinds_add_up_and_unparsed_lines_keep_their_reason(tmp_path: Path) -> None:
    content = (
        b"\n".join(
            [
                dumps({"request_id": "a", "prompt_tokens": 3, "completion_tokens": 2}),
                b"",
                b"{not json",
                dumps([1, 2]),
                dumps({"no_id": 1}),
                dumps({"type": "token", "request_id": "a", "pos": 3, "experts": [[1, 2]]}),
                dumps({"type": "meta", "moe_layers": [0]}),
            ]
        )
        + b"\n"
    )
    extractor = extract_bytes(tmp_path, content)
    state = extractor.files[0]
    assert state.format_name == "trace"
    assert state.lines_total == 7
    assert sum(state.by_kind.values()) == state.lines_total
    assert state.by_kind == {
        "trace.request": 1,
        "blank": 1,
        "unparsed": 3,
        "trace.token": 1,
        "trace.meta": 1,
    }
    reasons = [d.reason for d in state.diagnostics]
    assert [d.line_no for d in state.diagnostics] == [3, 4, 5]
    assert reasons[0].startswith("invalid JSON")
    assert "not an object" in reasons[1]
    assert "request_id" in reasons[2]


def test_request_lines_merge_by_id_last_known_value_wins(tmp_path: Path) -> None:
    content = (
        b"\n".join(
            [
                dumps({"request_id": "r1", "state": "received", "prompt_tokens": 10, "ts": 100.0}),
                dumps({"request_id": "r2", "prompt_tokens": 5, "completion_tokens": 1}),
                dumps(
                    {
                        "request_id": "r1",
                        "completion_tokens": 4,
                        "latency_s": 2.0,
                        "state": "finished",
                        "ts": 102.0,
                    }
                ),
            ]
        )
        + b"\n"
    )
    extractor = extract_bytes(tmp_path, content)
    store = extractor.store
    assert store.ids == ["r1", "r2"]
    row = store.ids.row_of("r1")
    assert store.get("prompt_tokens", row) == 10  # not forgotten by the second line
    assert store.get("completion_tokens", row) == 4
    assert STATES[store.state[row]] == "finished"
    assert store.get("received_ts", row) == 100.0
    assert store.get("finished_ts", row) == 102.0
    assert [loc.offset for loc in store.lines_of(row)] == [
        0,
        len(content.split(b"\n")[0]) + 1 + len(content.split(b"\n")[1]) + 1,
    ]
    # unknown stays unknown
    assert store.get("cached_tokens", row) is None
    assert store.get("ttft_s", row) is None


def test_token_events_accumulate_routing_kv_and_heads(tmp_path: Path) -> None:
    content = (
        b"\n".join(
            [
                dumps({"type": "meta", "moe_layers": [1, 3], "total_attention_heads": 4}),
                dumps({"request_id": "r", "prompt_tokens": 2, "completion_tokens": 2}),
                dumps(
                    {
                        "type": "token",
                        "request_id": "r",
                        "pos": 2,
                        "experts": [[0, 1], [2, 3]],
                        "kv": {"visible": 3, "kept": 2, "skip": "evicted"},
                        "heads_skipped": {"1": [0]},
                    }
                ),
                dumps(
                    {
                        "type": "token",
                        "request_id": "r",
                        "pos": 3,
                        "experts": [[0, 5], [-1]],
                        "kv": {"visible": 4, "kept": 2, "skip": "masked"},
                        "dropped": [[3, 7]],
                    }
                ),
            ]
        )
        + b"\n"
    )
    extractor = extract_bytes(tmp_path, content)
    extras = extractor.store.extras[0]
    assert extras.routed_tokens == 2
    assert extras.routing_rows == 3  # the [-1] placeholder row is not a routed layer
    assert extras.routed_slots == 6
    assert extras.evicted_positions == 1
    assert extras.masked_positions == 2
    assert extras.kv_visible == 7 and extras.kv_kept == 4
    assert extras.skipped_head_slots == 1 and extras.head_slots == 4
    assert extras.dropped_slots == 1
    assert extractor.expert_load.counts == {1: {0: 2, 1: 1, 5: 1}, 3: {2: 1, 3: 1}}
    assert extractor.dropped.counts == {3: {7: 1}}
    assert extractor.head_skips.counts == {1: {0: 1}}
    assert len(extractor.store.lines_of(0)) == 3


def test_counts_from_token_ids_and_from_the_tokenizer(tmp_path: Path) -> None:
    content = (
        b"\n".join(
            [
                dumps(
                    {
                        "request_id": "ids",
                        "prompt_token_ids": [1, 2, 3],
                        "completion_token_ids": [4],
                    }
                ),
                dumps(
                    {
                        "request_id": "text",
                        "prompt": "Hello, how are you today?",
                        "completion": "Fine",
                    }
                ),
                dumps({"request_id": "none"}),
            ]
        )
        + b"\n"
    )
    extractor = extract_bytes(tmp_path, content)
    store = extractor.store
    assert store.get("prompt_tokens", 0) == 3 and store.get("completion_tokens", 0) == 1
    expected = extractor.tokens.count("Hello, how are you today?")
    assert store.get("prompt_tokens", 1) == expected > 0
    assert store.get("prompt_tokens", 2) is None


def test_key_value_lines(tmp_path: Path) -> None:
    content = (
        b"INFO:sglang.srt.server:Request completed | req_id=5a8b9c | prompt_tokens=128 | "
        b"completion_tokens=64 | latency=1.23s | hit_cache=True | model=Qwen-7B\n"
        b"2025-04-01 10:00:01 INFO:sglang.srt.server:Request completed | req_id=x2 | "
        b"prompt_tokens=10 | completion_tokens=5 | latency=250ms | hit_cache=False | model=Qwen-7B\n"
        b"INFO:something else entirely\n"
    )
    extractor = extract_bytes(tmp_path, content, name="app.log")
    state = extractor.files[0]
    assert state.format_name == "kv"
    assert state.by_kind == {"kv.request": 2, "unparsed": 1}
    store = extractor.store
    assert store.ids == ["5a8b9c", "x2"]
    assert store.get("prompt_tokens", 0) == 128
    assert store.get("latency_s", 0) == pytest.approx(1.23)
    assert store.get("latency_s", 1) == pytest.approx(0.25)
    assert store.get("cached_tokens", 0) is None  # hit_cache is a flag, not a count
    assert store.columns["cache_hit"][0] == 2 and store.columns["cache_hit"][1] == 1
    assert store.get("finished_ts", 1) == pytest.approx(1743501601.0)  # naive = UTC
    # A hit of unknown size makes compute unknown; a reported miss does not.
    from sparseety_tui.core.figures._costmodel import DEFAULT_SHAPE
    from sparseety_tui.core.figures._figures import row_figures

    assert row_figures(store, DEFAULT_SHAPE, 0)["effective_compute_tokens"] is None
    assert row_figures(store, DEFAULT_SHAPE, 1)["effective_compute_tokens"] == pytest.approx(15)


def test_unknown_format_counts_every_line_as_unparsed(tmp_path: Path) -> None:
    extractor = extract_bytes(tmp_path, b"hello\nworld\n\x00\xff\n", name="x.txt")
    state = extractor.files[0]
    assert state.format_name == "unknown"
    assert state.by_kind == {"unparsed": 3}
    assert "not recognised" in state.diagnostics[0].reason


def test_forced_format_and_bad_format_name(tmp_path: Path) -> None:
    extractor = extract_bytes(tmp_path, b"hello\n", forced_format="trace")
    assert extractor.files[0].by_kind == {"unparsed": 1}
    with pytest.raises(ValueError, match="unknown format"):
        Extractor(forced_format="nope")


def test_last_line_without_newline_counts_once(tmp_path: Path) -> None:
    content = dumps({"request_id": "a"}) + b"\n" + dumps({"request_id": "b"})
    extractor = extract_bytes(tmp_path, content)
    assert extractor.files[0].lines_total == 2
    assert extractor.store.ids == ["a", "b"]


HOSTILE = [
    "[bold red]boom[/]",
    "[link=http://x]y[/link]",
    "\x1b[2J\x1b]0;title\x07",
    "\u202eevil",
    "zero\u200bwidth",
    "中文" * 50,
    "🙂🚀",
    "\r\rprogress",
    "\\",
    "\x00\x01\x7f",
]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    chunks=st.lists(
        st.one_of(
            st.binary(max_size=300),
            st.sampled_from(HOSTILE).map(
                lambda s: orjson.dumps({"request_id": "h", "prompt": s, "completion": s})
            ),
        ),
        max_size=30,
    )
)
def test_hostile_bytes_never_crash_and_are_all_counted(tmp_path: Path, chunks: list[bytes]) -> None:
    content = b"\n".join(chunks) + b"\n"
    extractor = extract_bytes(tmp_path, content, name="h.log", forced_format="trace")
    state = extractor.files[0]
    expected = content.count(b"\n")
    assert state.lines_total == expected
    assert sum(state.by_kind.values()) == expected


def test_hostile_text_is_kept_literally(tmp_path: Path) -> None:
    from sparseety_tui.core.detail._detail import request_text

    records = [
        orjson.dumps({"request_id": f"h{i}", "prompt": s, "completion": s[::-1]})
        for i, s in enumerate(HOSTILE)
    ]
    extractor = extract_bytes(tmp_path, b"\n".join(records) + b"\n")
    for row, text in enumerate(HOSTILE):
        assert request_text(extractor, row) == {"prompt": text, "completion": text[::-1]}


def test_huge_line_is_counted_with_bounded_memory(tmp_path: Path) -> None:
    big = orjson.dumps({"request_id": "big", "prompt": "x" * (12 << 20)})
    content = big + b"\n" + orjson.dumps({"request_id": "after", "prompt_tokens": 1}) + b"\n"
    extractor = extract_bytes(tmp_path, content)
    state = extractor.files[0]
    assert state.lines_total == 2
    assert state.by_kind == {"unparsed": 1, "trace.request": 1}
    assert "truncated" in state.diagnostics[0].reason
    assert extractor.store.ids == ["after"]


# -- bulk path equals per-line path ----------------------------------------------------

simple_value = st.one_of(
    st.none(), st.integers(-5, 10**6), st.booleans(), st.floats(-1, 1e4), st.text(max_size=5)
)
record_strategy = st.fixed_dictionaries(
    {
        "request_id": st.sampled_from([f"r{i}" for i in range(40)]),
        "prompt_tokens": st.integers(-2, 5000),
        "completion_tokens": st.integers(0, 5000),
        "latency_s": st.floats(0, 100, allow_nan=False),
        "ts": st.sampled_from(
            [
                "2026-11-30T12:00:00.123Z",
                "2026-11-30T12:00:01+02:00",
                "2026-11-30 12:00:02",
                1796040000.5,
            ]
        ),
        "sparse": st.fixed_dictionaries(
            {
                "topk_experts": st.integers(1, 8),
                "total_experts": st.integers(8, 64),
                "kv_kept": st.integers(0, 100),
                "kv_total": st.integers(100, 200),
                "kv_skip": st.sampled_from(["evicted", "masked"]),
            }
        ),
    },
    optional={
        "cached_tokens": simple_value,
        "model": st.sampled_from(["m1", "m2"]),
        "state": st.sampled_from(["finished", "received", "aborted"]),
        "ttft_s": simple_value,
    },
)


def _store_snapshot(extractor: Extractor) -> tuple[Any, ...]:
    store = extractor.store
    columns = {}
    for name, column in store.columns.items():
        values = []
        for v in column:
            values.append(
                "nan"
                if isinstance(v, float) and math.isnan(v)
                else round(v, 4)
                if isinstance(v, float)
                else v
            )
        columns[name] = values
    models = [store.models[c] for c in store.columns["model"]]
    columns.pop("model")
    return store.ids, columns, models, dict(extractor.files[0].by_kind)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(records=st.lists(record_strategy, min_size=40, max_size=120), uniform_keys=st.booleans())
def test_bulk_path_equals_per_line_path(
    tmp_path: Path,
    records: list[dict[str, Any]],
    uniform_keys: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if uniform_keys:  # same key set everywhere, so the bulk path is really exercised
        keys = set(records[0])
        records = [
            {k: v for k, v in r.items() if k in keys} for r in records if keys <= set(r)
        ] or records[:1]
    content = b"\n".join(orjson.dumps(r) for r in records) + b"\n"
    bulk = extract_bytes(tmp_path, content)
    path = tmp_path / "chunked.jsonl"
    path.write_bytes(content)
    chunked = Extractor()
    ingest_file(chunked, str(path))  # the batch commands' reader: big chunks, split in C
    with monkeypatch.context() as patch:
        patch.setattr(extractor_module, "BULK_MIN_LINES", 10**9)
        per_line = extract_bytes(tmp_path, content)
    assert _store_snapshot(bulk) == _store_snapshot(per_line) == _store_snapshot(chunked)


def test_bulk_path_is_taken_for_uniform_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    real = extractor_module.apply_batch

    def spy(*args: Any, **kwargs: Any) -> bool:
        result = real(*args, **kwargs)
        calls.append(int(result))
        return result

    monkeypatch.setattr(extractor_module, "apply_batch", spy)
    content = b"".join(
        orjson.dumps({"request_id": f"q{i}", "prompt_tokens": i, "completion_tokens": 1}) + b"\n"
        for i in range(100)
    )
    extractor = extract_bytes(tmp_path, content)
    assert calls and all(calls)
    assert len(extractor.store) == 100
    assert extractor.store.get("prompt_tokens", 99) == 99


def test_detail_accumulates_per_token_data_like_the_extractor(tmp_path: Path) -> None:
    from sparseety_tui.core.detail._detail import build_detail

    content = (
        b"\n".join(
            [
                dumps(
                    {
                        "request_id": "r",
                        "prompt_token_ids": [1, 2, 3],
                        "moe_layers": [0],
                        "sparse": {
                            "moe_layers": [0],
                            "routing": [[[1, 2]], [[1, 3]], [[2, 3]]],
                            "routing_start": 0,
                            "kv": [{"pos": 2, "visible": 3, "kept": 2, "skip": "evicted"}],
                        },
                    }
                ),
                dumps(
                    {
                        "request_id": "r",
                        "completion_token_ids": [4, 5],
                        "sparse": {
                            "routing": [[[4, 1]]],
                            "routing_start": 3,
                            "kv": [{"pos": 3, "visible": 4, "kept": 2, "skip": "masked"}],
                        },
                    }
                ),
            ]
        )
        + b"\n"
    )
    extractor = extract_bytes(tmp_path, content)
    assert extractor.store.state[0] == 3  # completion ids alone say it finished
    detail = build_detail(extractor, 0)
    assert detail.expert_counts == extractor.expert_load.counts == {0: {1: 3, 2: 2, 3: 2, 4: 1}}
    assert [t.experts for t in detail.tokens[:4]] == [[[1, 2]], [[1, 3]], [[2, 3]], [[4, 1]]]
    assert [p["pos"] for p in detail.kv_points] == [2, 3]
