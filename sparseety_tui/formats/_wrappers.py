"""Log shippers and wrappers around a whole file, as data: one table, one row a kind.

A wrapper here is something that rewrote *every* line of a file: an export or a log driver
(AWS CloudWatch, Docker's json-file driver, Loki, Vector) or a system logger (journald,
syslog), or a Kubernetes tailer that prefixes each line (``kubectl logs --prefix``,
``stern``). It is decided once per file from its first lines (``detect_wrapper``), so a
clean log pays nothing per line; each line of a wrapped file is then unwrapped into the
line the server wrote and the wrapper's timestamp, and the family parses that inner line
exactly as it would parse the bare one (formats/_wrapped.py).

Prefixes that may come and go line by line (``docker logs --timestamps``, ``kubectl logs
--timestamps``, compose ``svc  | ``, collector stamps) stay with ``clean.strip_wrappers``,
which the families call only when their own prefix fails.

A wrapper's timestamp is handed on as RFC3339 text that ``clean.strip_wrappers`` reads
(``2024-06-10T06:13:20.123Z``): a stamp without a year (journald's default ``short``
format, RFC 3164 syslog) carries less than vLLM's own and nothing for a line without one,
so it is not handed on (a ``None`` stamp).

Every row lists real line shapes as samples (``tests/unit/test_wrappers.py`` checks each
unwraps), after lnav's formats-as-data.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import orjson

from sparseety_tui.formats._timestamps import parse_timestamp


@dataclass(frozen=True)
class Unwrapped:
    """One physical line of a wrapped file, taken apart."""

    #: What the server wrote (without the line ending the wrapper kept).
    inner: bytes
    #: The wrapper's timestamp as RFC3339 text with a date (None: the wrapper has none, or
    #: one without a year).
    stamp: bytes | None
    #: False when the wrapper split one server line into several entries and more of it
    #: follows on the next physical line (Docker splits lines longer than 16 KiB).
    complete: bool = True


@dataclass(frozen=True)
class WrapperKind:
    """One kind of wrapper: how to tell it and how to take one line apart."""

    #: As shown in ``summary --json`` ``files[].wrapper``.
    name: str
    description: str
    #: Real line shapes (sources in the comments of the table below).
    samples: tuple[bytes, ...]
    #: The physical line taken apart, or None when this line is not in the wrapper's shape
    #: (it is then parsed as it is).
    unwrap: Callable[[bytes], Unwrapped | None]


# -- stamps -------------------------------------------------------------------------------

#: RFC3339 with a zone, as ``clean.WRAPPER_RE`` reads it: ``2024-07-08T07:17:34.123456789Z``,
#: ``2024-06-10T06:13:20+0000`` (journalctl ``short-iso``), ``2024-06-10T06:13:20.123+02:00``.
_RFC3339 = rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)"
RFC3339_RE = re.compile(_RFC3339 + rb"\Z")


def _stamp_of(value: Any) -> bytes | None:
    """A JSON wrapper's timestamp as RFC3339 text: a string already in that form as it is,
    an epoch number (or digits: Loki's API gives nanoseconds as a string) converted to UTC;
    None for anything else."""
    if isinstance(value, str):
        raw = value.encode("utf-8", "replace")
        if RFC3339_RE.match(raw):
            return raw
        if not raw.isdigit():
            return None
        value = int(raw)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    seconds = parse_timestamp(value)
    if seconds is None:
        return None
    when = datetime.fromtimestamp(seconds, timezone.utc)
    return when.strftime("%Y-%m-%dT%H:%M:%S.%fZ").encode()


def _text(value: str) -> tuple[bytes, bool]:
    """A JSON wrapper's line text as bytes without its ending, and whether it had one."""
    raw = value.encode("utf-8", "surrogatepass")
    if raw.endswith(b"\n"):
        return raw[:-2] if raw.endswith(b"\r\n") else raw[:-1], True
    return raw, False


def _json_object(line: bytes) -> dict[str, Any] | None:
    if line[:1] != b"{":
        return None
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    return obj if isinstance(obj, dict) else None


# -- JSON wrappers ------------------------------------------------------------------------

#: Keys of the project's own trace records (formats/_trace.py) and of OpenAI bodies: an
#: object with one of these is not a wrapper's, whatever else it has.
_NOT_WRAPPER_KEYS = ("request_id", "type", "event", "id", "object", "choices", "usage")


def _docker_json(line: bytes) -> Unwrapped | None:
    """Docker's json-file driver (docs.docker.com/engine/logging/drivers/json-file/):
    ``{"log":"Log line is here\\n","stream":"stdout","time":"2019-01-01T11:11:11.111111111Z"}``.
    A line longer than 16 KiB is written as several entries; all but the last lack the
    ``\\n`` at the end of ``log``."""
    obj = _json_object(line)
    if obj is None:
        return None
    log = obj.get("log")
    if not isinstance(log, str) or "stream" not in obj or "time" not in obj:
        return None
    inner, ended = _text(log)
    return Unwrapped(inner, _stamp_of(obj["time"]), ended)


def _loki_json(line: bytes) -> Unwrapped | None:
    """Loki's ``logcli query --output=jsonl`` (grafana/loki pkg/logcli/output/jsonl.go: a
    map of ``timestamp``, ``line`` and optional ``labels``), and ``{"ts": ..., "line":
    ...}`` exports of the same entries."""
    obj = _json_object(line)
    if obj is None:
        return None
    text = obj.get("line")
    if not isinstance(text, str) or any(key in obj for key in _NOT_WRAPPER_KEYS):
        return None
    when = obj.get("timestamp", obj.get("ts"))
    if when is None:
        return None
    return Unwrapped(_text(text)[0], _stamp_of(when))


def _vector_json(line: bytes) -> Unwrapped | None:
    """Vector's JSON encoding of a log event (vector.dev, file / docker_logs sources:
    ``message``, ``timestamp``, ``host``, ``source_type``...)."""
    obj = _json_object(line)
    if obj is None:
        return None
    text = obj.get("message")
    when = obj.get("timestamp")
    if not isinstance(text, str) or when is None:
        return None
    if any(key in obj for key in _NOT_WRAPPER_KEYS):
        return None
    return Unwrapped(_text(text)[0], _stamp_of(when))


# -- prefix wrappers ----------------------------------------------------------------------

#: AWS CloudWatch Logs export (``aws logs filter-log-events --output text`` columns,
#: CloudWatch Insights CSV/TSV): ``<epoch ms>\t<ISO8601>\t<line>``, e.g.
#: ``1718000000123\t2024-06-10T06:13:20.123Z\t[2024-06-10 06:13:20 TP0] Prefill batch. #new-seq: 1``
CLOUDWATCH_RE = re.compile(rb"\d{13}\t(" + _RFC3339 + rb")\t")

_MONTH = rb"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
#: The host and ``identifier[pid]: `` of journald / syslog; bounded, and the classes meet
#: only at single separators, so a failing search does not re-read a run.
_HOST_TAG = rb" [^\s]{1,255} [^\s:\[\]]{1,255}(?:\[\d{1,10}\])?: "
#: journalctl's default ``short`` format and RFC 3164 syslog (the year is not printed):
#: ``Dec 01 02:23:57 gpu-node-3 vllm[1234]: INFO 12-01 02:23:57 [loggers.py:123] Engine 000: ...``
#: ``<14>Jun 10 06:13:20 gpu-node-3 sglang[77]: [2024-06-10 06:13:20] INFO:     Started server process [77]``
SYSLOG_SHORT_RE = re.compile(rb"(?:<\d{1,3}>)?" + _MONTH + rb" [ \d]\d \d\d:\d\d:\d\d" + _HOST_TAG)
#: ``journalctl -o short-iso`` (and ``short-iso-precise``):
#: ``2024-06-10T06:13:20+0000 gpu-node-3 vllm[1234]: INFO:     Application startup complete.``
SYSLOG_ISO_RE = re.compile(rb"(" + _RFC3339 + rb")" + _HOST_TAG)
#: RFC 5424 syslog: ``<PRI>1 TIMESTAMP HOST APP PROCID MSGID [SD|-] MSG``:
#: ``<14>1 2024-06-10T06:13:20.123Z gpu-node-3 vllm 1234 - - INFO:     Waiting for application startup.``
RFC5424_RE = re.compile(
    rb"<\d{1,3}>1 (?:(" + _RFC3339 + rb")|-) \S{1,255} \S{1,48} \S{1,128} \S{1,32} "
    rb"(?:-|(?:\[[^\]]{0,1024}\]){1,32})(?: |\Z)"
)
#: ``kubectl logs --prefix``: ``[pod/vllm-7d9f8c6b5-x2k9p/vllm] INFO 07-08 07:17:34 ...``
KUBECTL_PREFIX_RE = re.compile(rb"\[pod/[^/\s\]]{1,253}/[^/\s\]]{1,63}\] ")
#: stern's default template ``<pod> <container> <message>``, with ``--timestamps`` an
#: RFC3339Nano stamp before the message (stern v1.24.0 release notes):
#: ``vllm-0 vllm 2024-07-08T07:17:34.123456789Z INFO 07-08 07:17:34 [loggers.py:123] ...``
STERN_RE = re.compile(
    rb"([a-z0-9][a-z0-9.-]{0,252}) ([a-z0-9][a-z0-9-]{0,62}) (?:(" + _RFC3339 + rb") )?"
)


def _prefixed(pattern: re.Pattern[bytes]) -> Callable[[bytes], Unwrapped | None]:
    """A wrapper that is a prefix ``pattern`` matches; its group 1 (if any) the stamp."""

    def unwrap(line: bytes) -> Unwrapped | None:
        m = pattern.match(line)
        if m is None:
            return None
        stamp = m.group(1) if pattern.groups else None
        return Unwrapped(line[m.end() :], stamp)

    return unwrap


def _stern(line: bytes) -> Unwrapped | None:
    """stern's prefix is two lowercase words, which ordinary text could give too: a pod
    name has a dash (a generated suffix, ``vllm-0``, ``vllm-7d9f8c6b5-x2k9p``)."""
    m = STERN_RE.match(line)
    if m is None or b"-" not in m.group(1):
        return None
    return Unwrapped(line[m.end() :], m.group(3), True)


WRAPPERS: tuple[WrapperKind, ...] = (
    WrapperKind(
        "docker-json",
        "Docker json-file log driver (/var/lib/docker/containers/<id>/<id>-json.log)",
        (
            b'{"log":"INFO 07-08 07:17:34 metrics.py:334] Avg prompt throughput: 0.0 tokens/s\\n",'
            b'"stream":"stderr","time":"2024-07-08T07:17:34.123456789Z"}',
        ),
        _docker_json,
    ),
    WrapperKind(
        "loki-json",
        "Loki export (logcli --output=jsonl: timestamp, line, labels)",
        (
            b'{"labels":{"app":"vllm"},"line":"INFO:     10.0.0.1:5 - \\"GET /health HTTP/1.1\\" 200 OK",'
            b'"timestamp":"2024-06-10T06:13:20.123456789Z"}',
            b'{"ts":"2024-06-10T06:13:20.123Z","line":"[2024-06-10 06:13:20] Finish: obj=..."}',
        ),
        _loki_json,
    ),
    WrapperKind(
        "vector-json",
        "Vector JSON log events (message, timestamp, host, source_type)",
        (
            b'{"host":"gpu-node-3","message":"INFO:     Started server process [1]",'
            b'"source_type":"file","timestamp":"2024-06-10T06:13:20.123456Z"}',
        ),
        _vector_json,
    ),
    WrapperKind(
        "cloudwatch",
        "AWS CloudWatch Logs export: epoch ms, ISO 8601, line (tab-separated)",
        (b"1718000000123\t2024-06-10T06:13:20.123Z\tFinish: obj=GenerateReqInput(rid='a1')",),
        _prefixed(CLOUDWATCH_RE),
    ),
    WrapperKind(
        "journald",
        "journalctl short / short-iso output, RFC 3164 syslog",
        (
            b"Dec 01 02:23:57 gpu-node-3 vllm[1234]: INFO:     Started server process [1234]",
            b"2024-06-10T06:13:20+0000 gpu-node-3 vllm[1234]: INFO:     Application startup complete.",
            b"<14>Jun 10 06:13:20 gpu-node-3 sglang[77]: Traceback (most recent call last):",
        ),
        lambda line: _prefixed(SYSLOG_ISO_RE)(line) or _prefixed(SYSLOG_SHORT_RE)(line),
    ),
    WrapperKind(
        "syslog-rfc5424",
        "RFC 5424 syslog",
        (b"<14>1 2024-06-10T06:13:20.123Z gpu-node-3 vllm 1234 - - INFO:     Shutting down",),
        _prefixed(RFC5424_RE),
    ),
    WrapperKind(
        "kubectl-prefix",
        "kubectl logs --prefix",
        (b"[pod/vllm-7d9f8c6b5-x2k9p/vllm] INFO 07-08 07:17:34 metrics.py:334] Avg prompt",),
        _prefixed(KUBECTL_PREFIX_RE),
    ),
    WrapperKind(
        "stern",
        "stern (pod container [RFC3339Nano] line)",
        (b'vllm-0 vllm 2024-07-08T07:17:34.123456789Z   File "/app/x.py", line 3, in f',),
        _stern,
    ),
)

#: A kind is the file's wrapper when at least this share of the non-blank head unwraps.
MIN_SHARE = 0.8


def detect_wrapper(lines: Sequence[bytes]) -> WrapperKind | None:
    """The wrapper of a file whose first lines (heads, maybe cut) are ``lines``; None for a
    bare log. A head cut inside a JSON entry does not unwrap and is left out."""
    heads = [line for line in lines if line.strip()]
    if not heads:
        return None
    firsts = {line[:1] for line in heads}
    for kind in WRAPPERS:
        json_kind = kind.name.endswith("-json")
        if json_kind != (b"{" in firsts):
            continue
        pieces = [p for p in map(kind.unwrap, heads) if p is not None]
        if json_kind:
            judged = len([line for line in heads if line.endswith(b"}")]) or 1
        else:
            judged = len(heads)
        if len(pieces) >= MIN_SHARE * judged:
            return kind
    return None


#: journalctl prints ``[103B blob data]`` in place of a message that holds control bytes (a
#: tqdm bar's ``\r``): the text is not in the file, so such a line stays unparsed, with a
#: reason that says how to get it. Real: tests/data/real_logs/vllm_0.15.1_journald_systemd_*.
WITHHELD_RE = re.compile(rb"\[\d{1,12}B blob data\]")
WITHHELD_REASON = "journald withheld this message (binary data): `journalctl --all` prints it"


def unparsed_reason(rest: bytes, otherwise: str) -> str:
    """Why a line no parser understood is unparsed: ``otherwise``, unless a wrapper left
    nothing of the line to understand."""
    if rest.endswith(b" blob data]") and WITHHELD_RE.match(rest.lstrip()):
        return WITHHELD_REASON
    return otherwise
