"""vLLM Received, Added and idle-stats lines in their real shapes, and reading them, shared
by the unit and the parallel (integration) halves of the lifecycle tests."""

from __future__ import annotations

from pathlib import Path

from sparseety_tui.core.extraction import Extractor
from sparseety_tui.ingest.batch import ingest_file

# vLLM 0.15 (vllm #34503), verbatim but for the id and the time.
V1_PARAMS = (
    "params: SamplingParams(n=1, presence_penalty=0.0, frequency_penalty=0.0, "
    "repetition_penalty=1.0, temperature=0.7, top_p=0.95, top_k=0, min_p=0.0, seed=None, "
    "stop=[], stop_token_ids=[], bad_words=[], include_stop_str_in_output=False, "
    "ignore_eos=False, max_tokens=100, min_tokens=0, logprobs=None, prompt_logprobs=None, "
    "skip_special_tokens=True, spaces_between_special_tokens=True, "
    "truncate_prompt_tokens=None, structured_outputs=None, extra_args=None), "
    "lora_request: None."
)


def received(rid: str, stamp: str) -> str:
    return f"(APIServer pid=90458) INFO 02-13 {stamp} [logger.py:49] Received request {rid}: {V1_PARAMS}"


def added(rid: str, stamp: str, suffix: str = "-a8a65d16") -> str:
    return (
        f"(APIServer pid=90458) INFO 02-13 {stamp} [async_llm.py:382] Added request {rid}{suffix}."
    )


def stats(stamp: str, running: int, waiting: int = 0, engine: str = "000") -> str:
    # vLLM 0.20 (vllm #42363) without its MM cache field.
    return (
        f"(APIServer pid=1) INFO 02-13 {stamp} [loggers.py:310] Engine {engine}: Avg prompt "
        f"throughput: 0.0 tokens/s, Avg generation throughput: 25.0 tokens/s, Running: "
        f"{running} reqs, Waiting: {waiting} reqs, GPU KV cache usage: 0.0%, Prefix cache hit "
        "rate: 64.4%"
    )


def read(tmp_path: Path, lines: list[str], name: str = "server.log") -> Extractor:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    extractor = Extractor()
    ingest_file(extractor, str(path))
    return extractor
