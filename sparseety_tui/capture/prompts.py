"""The prompts file of ``record``: JSON Lines, one request a line (torch-free).

Each non-blank line is a JSON object with ``prompt`` (text, tokenized by the model's
tokenizer) or ``prompt_token_ids`` (ids given as they are), and optionally
``request_id`` (or ``id``) and ``max_new_tokens`` (or ``max_tokens``); a line that is a
JSON string is a prompt. Anything else is an error naming the line: nothing is guessed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class PromptsError(ValueError):
    """A prompts file that cannot be read as said above (one line: file, line, why)."""


@dataclass(frozen=True)
class PromptSpec:
    request_id: str
    prompt: str | None
    prompt_token_ids: list[int] | None
    max_new_tokens: int | None


def _ids(value: Any, where: str) -> list[int]:
    if not isinstance(value, list) or not value:
        raise PromptsError(f"{where}: prompt_token_ids must be a non-empty list of integers")
    if not all(isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in value):
        raise PromptsError(f"{where}: prompt_token_ids must hold integers >= 0")
    return list(value)


def _spec(obj: Any, n: int, where: str) -> PromptSpec:
    if isinstance(obj, str):
        obj = {"prompt": obj}
    if not isinstance(obj, dict):
        raise PromptsError(f"{where}: a JSON object or string, not {type(obj).__name__}")
    prompt = obj.get("prompt")
    ids = obj.get("prompt_token_ids")
    if prompt is not None and not isinstance(prompt, str):
        raise PromptsError(f"{where}: prompt must be a string")
    if prompt is None and ids is None:
        raise PromptsError(f"{where}: no prompt and no prompt_token_ids")
    if prompt == "" and ids is None:
        raise PromptsError(f"{where}: empty prompt")
    rid = obj.get("request_id", obj.get("id"))
    if rid is None:
        rid = f"rec-{n:04d}"
    elif isinstance(rid, bool) or not isinstance(rid, (str, int)) or rid == "":
        raise PromptsError(f"{where}: request_id must be a non-empty string or an integer")
    limit = obj.get("max_new_tokens", obj.get("max_tokens"))
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise PromptsError(f"{where}: max_new_tokens must be an integer >= 1")
    return PromptSpec(str(rid), prompt, None if ids is None else _ids(ids, where), limit)


def read_prompts(path: Path) -> list[PromptSpec]:
    specs: list[PromptSpec] = []
    seen: set[str] = set()
    with path.open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                obj = json.loads(line)
            except ValueError as exc:
                raise PromptsError(f"{where}: invalid JSON: {exc}") from None
            spec = _spec(obj, len(specs) + 1, where)
            if spec.request_id in seen:
                raise PromptsError(f"{where}: request_id {spec.request_id!r} given twice")
            seen.add(spec.request_id)
            specs.append(spec)
    if not specs:
        raise PromptsError(f"{path}: no prompts")
    return specs
