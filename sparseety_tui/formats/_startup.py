"""The model and tokenizer a server logged at start-up -> a ``("meta", MetaPayload)``.

Counts re-derived from text need the model's own tokenizer; the server
names it once, at start-up, in one long line:

- vLLM engine config (every version): ``INFO 04-17 23:05:00 [core.py:61] Initializing a V1 LLM engine (v0.8.3) with config: model='/models/Qwen2.5-7B-Instruct', speculative_config=None, tokenizer='/models/Qwen2.5-7B-Instruct', skip_tokenizer_init=False``
  (older: ``Initializing an LLM engine (v0.6.6) with config: model='Qwen/Qwen2-0.5B', tokenizer='Qwen/Qwen2-0.5B'``);
- vLLM API server arguments (0.9 on): ``INFO 06-24 19:42:04 [cli_args.py:309] non-default args: {'model': 'Qwen2_5/Qwen2.5-7B/', 'trust_remote_code': True, 'max_log_len': 100}``
  (``'model_tag'`` comes first from 0.11; ``'tokenizer'`` when ``--tokenizer`` is given:
  ``INFO 07-27 20:28:02 [cli_args.py:325] non-default args: {'model': 'Qwen/Qwen3-0.6B', 'tokenizer': '/models/qwen3-tokenizer', 'max_model_len': 8192}``);
- vLLM before 0.9: ``INFO 02-10 17:12:31 api_server.py:585] args: Namespace(host=None, port=8000, model='facebook/opt-125m', tokenizer=None, max_log_len=None)``,
  with ``--max-log-len 100``: ``args: Namespace(model='facebook/opt-125m', tokenizer=None, max_log_len=100)``;
- SGLang: ``server_args=ServerArgs(model_path='qwen/qwen2.5-0.5b-instruct', tokenizer_path='qwen/qwen2.5-0.5b-instruct', tokenizer_mode='auto')``.

``max_log_len`` (vLLM ``--max-log-len``) is kept too: the server cuts the logged prompt
and its token ids to that many characters and ids without a mark, so a list of exactly
that length is only a lower bound of the prompt (``core.extraction``).

The fields are read by name anywhere in the line, so a line inside a log shipper's wrapper
or after a process prefix still counts (their shapes: formats/shapes/startup.py).
"""

from __future__ import annotations

from typing import cast

from sparseety_tui.events import LineKind, MetaPayload, ParsedLine
from sparseety_tui.formats.shapes import ARGS, CONFIG, NAMESPACE, SGLANG, Table

#: The start of each start-up line that names the model (a cheap ``in`` test first).
_MARKERS = (b"with config: model=", b"non-default args: {", b"args: Namespace(", b"ServerArgs(")

#: Each shape of start-up line, told by a substring, and the table of the fields it names
#: (``shapes.startup``), in the order they are tried.
_SHAPES: tuple[tuple[bytes, Table], ...] = (
    (b"ServerArgs(", SGLANG),
    (b"with config: model=", CONFIG),
    (b"non-default args: {", ARGS),
    (b"args: Namespace(", NAMESPACE),
)


def startup_meta(line: bytes) -> MetaPayload | None:
    """The model path, tokenizer path and ``max_log_len`` a start-up line names; None for
    any other line (most lines: four substring tests)."""
    fields = next((shape for marker, shape in _SHAPES if marker in line), None)
    if fields is None:
        return None
    found: dict[str, object] = {}
    for row in fields:
        m = fields.bytes_regex(row.shape.name).search(line)
        if m is not None:
            value = m.group(1).decode("utf-8", "replace")
            found[row.shape.name] = int(value) if row.shape.fields["1"] == "int" else value
    return cast(MetaPayload, found) or None


def head_startup_meta(head: bytes) -> MetaPayload | None:
    """The start-up lines' fields in the head of a file, the first value of each field
    (as ``core.extraction`` keeps them), read before the file is parsed so that every request
    of it, in any byte range, is counted with the same tokenizer."""
    found: dict[str, object] = {}
    pos = 0
    while True:
        hits = [at for at in (head.find(marker, pos) for marker in _MARKERS) if at >= 0]
        if not hits:
            break
        first = min(hits)
        start = head.rfind(b"\n", 0, first) + 1
        end = head.find(b"\n", first)
        end = len(head) if end < 0 else end
        payload = startup_meta(head[start:end])
        for key, value in (payload or {}).items():
            found.setdefault(key, value)
        pos = end + 1
    return found or None  # type: ignore[return-value]


def startup_line(line: bytes) -> ParsedLine | None:
    """A start-up line naming the model, as a parser returns it: kind ``other`` (it is
    server noise to the line counts) with the meta event; None for any other line."""
    payload = startup_meta(line)
    if payload is None:
        return None
    return LineKind.NOISE, ("meta", payload)
