"""The fields a server's start-up line names (formats/_startup.py): one table per shape of
start-up line, each row a field of the meta event (``model_path``, ``tokenizer_path``,
``max_log_len``) read by name anywhere in the line. Each pattern is a literal key then a
run of one character class: linear time. Values never hold a quote or a line break in
practice (a path with a quote would be repr'd with double quotes and is not read).
"""

from __future__ import annotations

from sparseety_tui.formats.shapes._loader import LineShape, table

_SGLANG = (
    b"server_args=ServerArgs(model_path='qwen/qwen2.5-0.5b-instruct',"
    b" tokenizer_path='qwen/qwen2.5-0.5b-instruct', tokenizer_mode='auto')"
)
_CONFIG = (
    b"INFO 04-17 23:05:00 [core.py:61] Initializing a V1 LLM engine (v0.8.3) with config:"
    b" model='/models/Qwen2.5-7B-Instruct', speculative_config=None,"
    b" tokenizer='/models/Qwen2.5-7B-Instruct', skip_tokenizer_init=False"
)
_ARGS = (
    b"INFO 07-27 20:28:02 [cli_args.py:325] non-default args: {'model': 'Qwen/Qwen3-0.6B',"
    b" 'tokenizer': '/models/qwen3-tokenizer', 'max_model_len': 8192, 'max_log_len': 100}"
)
_NAMESPACE = (
    b"INFO 02-10 17:12:31 api_server.py:585] args: Namespace(host=None, port=8000,"
    b" model='facebook/opt-125m', tokenizer='facebook/opt-125m', max_log_len=100)"
)
_KW_TOKENIZER = rb"[(, ]tokenizer='([^'\n]+)'"

#: SGLang: ``ServerArgs(model_path='...', tokenizer_path='...', ...)``.
SGLANG = table(
    "startup.sglang",
    "parts",
    (
        LineShape(
            "model_path",
            rb"[(, ]model_path='([^'\n]+)'",
            "meta",
            (_SGLANG,),
            {"1": "text"},
            op="search",
        ),
        LineShape(
            "tokenizer_path",
            rb"[(, ]tokenizer_path='([^'\n]+)'",
            "meta",
            (_SGLANG,),
            {"1": "text"},
            op="search",
        ),
    ),
)
#: vLLM's engine config (every version): ``with config: model='...', tokenizer='...'``.
CONFIG = table(
    "startup.config",
    "parts",
    (
        LineShape(
            "model_path",
            rb"with config: model='([^'\n]+)'",
            "meta",
            (_CONFIG,),
            {"1": "text"},
            op="search",
        ),
        LineShape("tokenizer_path", _KW_TOKENIZER, "meta", (_CONFIG,), {"1": "text"}, op="search"),
    ),
)
#: vLLM's API server arguments (0.9 on): ``non-default args: {'model': '...', ...}`` (a
#: dict repr; ``'model_tag'`` comes first from 0.11).
ARGS = table(
    "startup.args",
    "parts",
    (
        LineShape(
            "model_path", rb"[{ ]'model': '([^'\n]+)'", "meta", (_ARGS,), {"1": "text"}, op="search"
        ),
        LineShape(
            "tokenizer_path",
            rb"[{ ]'tokenizer': '([^'\n]+)'",
            "meta",
            (_ARGS,),
            {"1": "text"},
            op="search",
        ),
        LineShape(
            "max_log_len",
            rb"[{ ]'max_log_len': ([0-9]{1,9})\b",
            "meta",
            (_ARGS,),
            {"1": "int"},
            op="search",
        ),
    ),
)
#: vLLM before 0.9: ``args: Namespace(..., model='...', tokenizer=None, max_log_len=None)``.
NAMESPACE = table(
    "startup.namespace",
    "parts",
    (
        LineShape(
            "model_path",
            rb"[(, ]model='([^'\n]+)'",
            "meta",
            (_NAMESPACE,),
            {"1": "text"},
            op="search",
        ),
        LineShape(
            "tokenizer_path", _KW_TOKENIZER, "meta", (_NAMESPACE,), {"1": "text"}, op="search"
        ),
        LineShape(
            "max_log_len",
            rb"[(, ]max_log_len=([0-9]{1,9})\b",
            "meta",
            (_NAMESPACE,),
            {"1": "int"},
            op="search",
        ),
    ),
)
