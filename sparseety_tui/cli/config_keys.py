"""Every key a config file may set: its type, built-in default, the option it stands for.

The tutorial's keys (``input.log_path``, ``output.result_path``, ``extract.*``) are spelt as
the SparSEEty tutorial writes them. A key maps to the argparse destination of the option it
gives a default to; the command line wins over it (``cli.config`` says the order).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any


@dataclass(frozen=True, slots=True)
class Key:
    path: str
    kind: str  # "str", "int", "bool", "paths" (a string or a list of strings), "strs", "rules"
    #: The built-in value of a key read by the code itself; for a key with a ``dest`` it is
    #: None and the option's own default is the built-in one (one place for each).
    default: Any
    dest: str | None  # the argparse destination it defaults; None: read by the code itself
    help: str
    choices: tuple[str, ...] = ()
    #: The subcommands whose option it defaults (empty: every one that has ``dest``).
    commands: tuple[str, ...] = ()


KEYS: tuple[Key, ...] = (
    Key("theme", "str", None, "theme", "the TUI's theme", ("dark", "light", "ansi")),
    Key("tokenizer", "str", None, "tokenizer", "tokenizer.json file or model folder"),
    Key("model_config", "str", None, "model_config", "model config.json for the cost model"),
    Key("format", "str", None, "format", "force a format: trace, kv, vllm, sglang"),
    Key(
        "input.log_path",
        "paths",
        None,
        "paths",
        "the log file(s) or directories to read",
        commands=("extract", "summary", "analyze", "serve"),
    ),
    Key("input.format", "str", None, "format", "as format; jsonl is the trace format"),
    Key("output.result_path", "str", None, "output", "extract's output file"),
    Key("output.save_tokens", "bool", None, "text", "extract: include prompt and completion"),
    Key(
        "extract.include_skipped",
        "bool",
        None,
        "include_skipped",
        "extract: the skipped-by-kind counts",
    ),
    Key(
        "extract.include_attention_weights",
        "bool",
        None,
        "include_attention_weights",
        "extract: attention weights (no supported format logs them: true only warns)",
    ),
    Key(
        "extract.max_tokens_per_request",
        "int",
        None,
        "max_tokens_per_request",
        "extract: leave out requests with more tokens (prompt + completion), counted on stderr",
    ),
    Key("extract.sparse_metrics", "bool", None, "sparse_metrics", "extract: the sparse figures"),
    Key("extract.limit", "int", None, "limit", "extract: at most N requests"),
    Key("summary.jobs", "int", None, "jobs", "summary: worker processes (0: one per core)"),
    Key("serve.host", "str", None, "host", "serve: address to bind"),
    Key("serve.port", "int", None, "port", "serve: port"),
    Key("serve.token_file", "str", None, "token_file", "serve: bearer token file"),
    Key("serve.workers", "int", None, "workers", "serve: POST /extract extractions at once"),
    Key(
        "redact.mode",
        "str",
        None,
        "redact",
        "off, on or text (drop prompts/completions too)",
        ("off", "on", "text"),
    ),
    Key(
        "redact.keep_routing", "bool", None, "keep_routing", "keep per-token routing when redacting"
    ),
    Key("redact.key_file", "str", None, "redact_key_file", "the HMAC key file of hashes"),
    Key(
        "redact.user_keys", "strs", ["user", "user_id"], None, "JSON keys whose values are user ids"
    ),
    Key("redact.actions", "actions", {}, None, "rule = mask | hash | drop | subnet (IPs)"),
    Key("redact.rules", "rules", [], None, "extra rules: [{name, pattern, action}]"),
)

#: Keys of one command's section default that command's options only (``output.*`` and
#: ``extract.*`` are extract's, ``serve.*`` serve's): ``record -o`` is not extract's.
_SECTION_COMMANDS = {
    "output": ("extract",),
    "extract": ("extract",),
    "summary": ("summary",),
    "serve": ("serve",),
}
KEYS = tuple(
    replace(k, commands=_SECTION_COMMANDS[k.path.split(".")[0]])
    if k.path.split(".")[0] in _SECTION_COMMANDS and not k.commands
    else k
    for k in KEYS
)

BY_PATH = {key.path: key for key in KEYS}

#: ``input.format`` values that name a format by another name (the tutorial's ``jsonl``).
FORMAT_ALIASES = {"jsonl": "trace"}
