"""The line shapes any family reads, whatever the file's format: rows of (name, pattern,
kind, typed fields, sample lines), loaded once by ``formats.shapes.table``.

The code that reads each table is beside it in its own module (``access``, ``cilines``,
``servicelines``, ``errorlines``, ``enginewarnings``, ``clean``); this module
only says what the lines look like. Every pattern is linear in the line for ``match`` and
``search`` alike: bounded repetition, neighbouring classes that do not overlap, and a
lookbehind before a pattern that starts with a repeated class, so a search reads a run
from its start only (docs/ARCHITECTURE.md, "How to add a format").
"""

from __future__ import annotations

from sparseety_tui.formats.shapes._loader import LineShape, table

#: HTTP access lines (tried in this order by ``access.access_line`` and the families):
#: uvicorn's, then the common / combined log format of a proxy in front of the server,
#: then uvicorn's other lines. A uvicorn access line is a uvicorn line too: the access
#: row goes first.
ACCESS = table(
    "access",
    "first",
    (
        # The status is optional because one real paste has none (sglang PR #25960); the
        # ``\d+`` after the client is KServe's pid. After the status comes a space or the
        # end of the line, and the text after that space is not read (reading it as
        # ``[^\r\n]*\s*$`` made a failing line, and a search from every ``INFO:``,
        # quadratic).
        LineShape(
            "uvicorn_access",
            rb"(?:INFO|TRACE|WARNING|ERROR):\s+(?P<client>\S+)(?: \d+)? - "
            rb'"(?P<method>[A-Z]+) (?P<path>\S+) HTTP/[\d.]+"(?: (?P<status>\d{3})(?= |\s*$)|\s*$)',
            "http.access",
            (
                b'INFO:     172.17.0.1:54662 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
                b'INFO:     127.0.0.1:40276 - "GET /metrics HTTP/1.1"',
            ),
            {"client": "text", "method": "text", "path": "text", "status": "int"},
            op="search",
        ),
        # ``%h %l %u %t "%r" %>s %b`` up to the status (the rest is not read); aiohttp's
        # ``%a %t "%r" %s %b`` prints no ident and user. The client starts where a word
        # can, so a search does not retry inside one.
        LineShape(
            "clf",
            rb"(?<!\S)(?P<client>[^\s\[\]\"]{1,300}) (?:[^\s\[\]\"]{1,300} [^\s\[\]\"]{1,300} )?"
            rb"\[\d{2}/[A-Z][a-z]{2}/\d{4}:\d{2}:\d{2}:\d{2} [+-]\d{4}\] "
            rb'"(?P<method>[A-Z]{1,20}) (?P<path>[^\s"]{1,8192}) HTTP/[\d.]{1,5}" (?P<status>\d{3})(?: |$)',
            "http.access",
            (
                b'10.0.0.7 - - [10/Oct/2025:13:55:36 +0000] "POST /v1/chat/completions HTTP/1.1"'
                b' 200 2326 "-" "curl/8.5.0"',
                # SGLang's Mooncake metadata server, after SGLang's ``[ts] `` prefix.
                b'10.6.131.6 [14/Apr/2025:03:55:53 +0000] "PUT /metadata?key=mooncake HTTP/1.1"'
                b' 200 176 "-" "-"',
            ),
            {"client": "text", "method": "text", "path": "text", "status": "int"},
        ),
        LineShape(
            "uvicorn",
            rb"(?:INFO|TRACE|WARNING|ERROR|DEBUG|CRITICAL):\s{2,}\S",
            "uvicorn",
            (
                b"INFO:     Started server process [31554]",
                b"TRACE:    127.0.0.1:5 - HTTP connection made",
            ),
        ),
    ),
)

_OUTCOME = rb"(?:PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)"
#: pytest's own lines in a CI log, around a server's output (``cilines``). Each bounded.
CI = table(
    "ci",
    "exclusive",
    (
        # The outcome word alone after a test's live output (real:
        # tests/data/real_logs/vllm_v1_ci_pytorch_apiserver_traceback_only_pytest_failed_*).
        LineShape(
            "outcome",
            _OUTCOME + rb"(?: *\[ {0,2}\d{1,3}%\])?[ \t]*$",
            "other",
            (b"FAILED", b"PASSED [ 50%]"),
        ),
        LineShape(
            "short_summary",
            _OUTCOME + rb" [^\s:]{1,400}::\S",
            "other",
            (b"FAILED tests/test_x.py::test_y - RuntimeError: boom",),
        ),
        LineShape(
            "verbose_result",
            rb"[^\s:]{1,400}::[^\s]{1,400} " + _OUTCOME + rb"(?: |$)",
            "other",
            (b"tests/entrypoints/test_chat.py::test_chat[qwen] FAILED",),
        ),
        LineShape(
            "banner",
            rb"={3,200} [^\n]{0,400}={3}[ \t]*$",
            "other",
            (b"==== short test summary info ====", b"==== 1 failed, 2 passed in 3.21s ===="),
        ),
        LineShape("collected", rb"collected \d{1,9} items?\b", "other", (b"collected 12 items",)),
    ),
)

#: systemd's lines about the server's unit, read through journald (``servicelines``;
#: real: tests/data/real_logs/vllm_0.15.1_journald_*). The exit line is a unit line too:
#: it goes first. The unit name is bounded and the dot before ``service`` is the only way
#: out of it, so the match is linear.
SERVICE = table(
    "service",
    "first",
    (
        LineShape(
            "exited",
            rb"Main process exited, code=(?P<code>\w{1,16}), status=(?P<status>\d{1,5})",
            "service.exited",
            (
                b"vllm-assistant.service: Main process exited, code=exited, status=1/FAILURE",
                b"vllm-assistant.service: Main process exited, code=killed, status=9/KILL",
            ),
            {"code": "text", "status": "int"},
            op="search",
        ),
        LineShape(
            "unit",
            rb"(?:(?:Start|Stopp|Reload)(?:ed|ing) )?[\w@:.\\-]{1,256}\.(?:service|scope)(?::| -| |$)",
            "service",
            (
                b"vllm-assistant.service: Failed with result 'exit-code'.",
                b"vllm-assistant.service: Consumed 38.244s CPU time.",
                b"vllm-assistant.service: Scheduled restart job, restart counter is at 1.",
                b"Started vllm-assistant.service - vLLM OpenAI Server (assistant).",
            ),
        ),
    ),
)

#: Lines logged at ERROR or CRITICAL level by any Python (or C++) program (``errorlines``).
#: The level comes first, after at most a timestamp and a bounded logger name, and needs
#: ``:``, a space or ``]`` after it (``ERRORS`` is no level).
ERROR = table(
    "error",
    "exclusive",
    (
        LineShape(
            "level",
            rb"(?:\[\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?\] (?:[^\s\[\]]{1,80} )?"
            rb"|\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?Z? {1,3}(?:- )?(?:\S{1,80} - )?"
            rb"|\[)?"
            rb"(?:ERROR|CRITICAL|FATAL)(?=[: \]])",
            "error",
            (
                b"ERROR 07-08 10:00:00 [engine.py:12] msg",  # vLLM's logging head
                b"2025-01-01 10:00:00,123 - ERROR - name: msg",  # %(asctime)s - %(levelname)s
                b"2025-01-01 10:00:00,123 - vllm.x - ERROR - msg",
                b"ERROR:root:msg",  # logging.basicConfig
                b"[2025-01-01 10:00:00] ERROR msg",
                b"[2026-01-20 21:24:54,336] LMCache ERROR: msg",
                b"ERROR:    Exception in ASGI application",  # uvicorn
                b"2026-02-26 13:55:38  ERROR smg::server: msg",  # Rust tracing (sglang-router)
            ),
        ),
        # glog (C++: Mooncake, PyTorch): ``E`` for error, ``F`` for fatal.
        LineShape(
            "glog",
            rb"[EF]\d{4} \d\d:\d\d:\d\d\.\d{6} {1,8}\d{1,10} [^\s\]]{1,300}:\d{1,9}\] ",
            "error",
            (b"E0414 03:56:41.856248 77969 transfer_metadata_plugin.cpp:173] msg",),
        ),
    ),
)

#: Engine warnings that matter whatever their level (``enginewarnings``), searched in the
#: message after the server's prefix. SGLang's scheduler
#: (``python/sglang/srt/managers/scheduler.py``) prints the retraction; an older SGLang
#: named it "Decode out of memory", which is no CUDA OOM: the retraction goes first.
ENGINE_WARNING = table(
    "engine_warning",
    "first",
    (
        LineShape(
            "retraction",
            rb"Retract requests|#retracted_reqs",
            "retraction",
            (
                b"[2026-09-13 16:06:07] KV cache pool is full. Retract requests. #retracted_reqs:"
                b" 1, #new_tokens_gained: 646, #new_token_ratio: 0.0980 -> 0.3487",
                b"Decode out of memory happened. #retracted_reqs: 1, #new_token_ratio: 0.5 -> 1.0",
            ),
            op="search",
        ),
        LineShape(
            "oom",
            rb"OutOfMemoryError|out of memory",
            "oom",
            (
                b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
                b"RuntimeError: CUDA error: out of memory",
            ),
            op="search",
        ),
    ),
)

#: Third-party line shapes that are known, harmless noise in server output
#: (``clean.is_known_noise``). ``(?<!\S)\S+``: a search reads a word from its start only.
NOISE = table(
    "noise",
    "exclusive",
    (
        LineShape(
            "dash_logging",
            rb"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3} - \S+ - ",
            "noise",
            (b"2025-05-31 22:58:28,427 - INFO - flashinfer.jit: Prebuilt kernels not found",),
        ),
        LineShape(
            "bracket_logging",
            rb"\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}[.,]\d{3}\] \S+ (?:DEBUG|INFO|WARNING|ERROR):",
            "noise",
            (b"[2026-01-20 21:24:54,336] LMCache INFO: Stored 80 out of total 135 tokens",),
        ),
        LineShape(
            "py_warning",
            rb"(?<!\S)\S+\.py:\d+: \w*(?:Warning|Error): ",
            "noise",
            (b"/usr/lib/python3.10/site-packages/x.py:51: UserWarning: deprecated",),
        ),
        LineShape(
            "gloo", rb"\[Gloo\] ", "noise", (b"[Gloo] Rank 0 is connected to 0 peer ranks.",)
        ),
        LineShape(
            "torch_rank",
            rb"\[rank\d+\]:",
            "noise",
            (b"[rank0]:[W205 16:55:27.345399482 ProcessGroupNCCL.cpp:1565] Warning: x",),
        ),
        LineShape(
            "nccl",
            rb"(?<!\S)\S+:\d+:\d+ \[\d+\] NCCL (?:INFO|WARN)",
            "noise",
            (b"host:1234:1234 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>",),
        ),
        LineShape("nccl_version", rb"NCCL version ", "noise", (b"NCCL version 2.20.5+cuda12.4",)),
        LineShape("stars", rb"\*{5,}", "noise", (b"*****************************************",)),
    ),
)

#: A Python warnings line; the indented source lines after it belong to it (``serverlog``).
PY_WARNING = table(
    "python_warning",
    "exclusive",
    (
        LineShape(
            "warning",
            rb"(?<!\S)\S+\.py:\d+: \w*Warning: ",
            "other",
            (b"/usr/lib/python3.10/site-packages/x.py:51: UserWarning: deprecated",),
        ),
    ),
)
