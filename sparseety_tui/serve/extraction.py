"""``POST /extract``: request records in, ``extract``'s output lines out.

The body becomes a trace file in a private temporary directory, and that file goes
through the very code ``sparseety-tui extract --format trace FILE`` runs
(``ingest.batch.ingest_file``, ``core.report.extract_lines``, ``literal.escape_json``):
the answer is byte for byte what ``extract`` writes, except that ``source.file`` names
``request body`` and not the temporary file. A file is needed at all because ``--text``
reads prompts and completions back from the lines, as ``extract`` does.

A body is refused with one line saying why: 400 when it is not JSON (or not UTF-8), 422
when it is JSON but not request records, or when the trace reader could not read one of
its records, or had to leave a value unknown (a count that is a string, or above int32):
every line accounted for, and a value nobody could read is the client's error here, not
a silent null in the answer.
"""

from __future__ import annotations

import os
import tempfile
import typing
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import orjson

from sparseety_tui.core.figures import ModelShape
from sparseety_tui.core.redact import Redactor
from sparseety_tui.core.report import extract_lines
from sparseety_tui.core.text import escape_json, json_bytes, json_text
from sparseety_tui.events import RequestPayload, SamplingInfo, SparseInfo
from sparseety_tui.ingest.batch import Options, ingest_file, make_extractor

#: What ``source.file`` says in an answer (the body has no file name of its own).
BODY_LABEL = "request body"
#: The media type of newline-delimited records, in and out.
NDJSON = "application/x-ndjson"
#: Records one body may hold (each becomes a row; a body is bounded by bytes as well).
MAX_RECORDS = 100_000


class BodyError(Exception):
    """A body that cannot be extracted: ``status`` (400 or 422) and one line why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True)
class Extraction:
    """How ``serve`` extracts: the command's options (format forced to ``trace``)."""

    options: Options
    shape: ModelShape
    with_text: bool = False
    redactor: Redactor | None = None

    @classmethod
    def of(
        cls,
        options: Options,
        shape: ModelShape,
        with_text: bool,
        redactor: Redactor | None = None,
    ) -> Extraction:
        return cls(replace(options, format="trace"), shape, with_text, redactor)


def trace_lines(body: bytes, content_type: str) -> bytes:
    """The body as trace lines: a JSON object, a JSON list of objects, or (``NDJSON``)
    one object per line. Raises ``BodyError``."""
    if content_type.split(";", 1)[0].strip().lower() == NDJSON:
        return _ndjson_lines(body)
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise BodyError(400, f"body is not JSON: {exc}") from None
    records = value if isinstance(value, list) else [value]
    if not records:
        raise BodyError(422, "body is an empty list: no request record to extract")
    if len(records) > MAX_RECORDS:
        raise BodyError(422, f"more than {MAX_RECORDS:,} records in one body")
    out = []
    for index, record in enumerate(records):
        if not isinstance(record, dict):
            where = f"item {index}" if isinstance(value, list) else "body"
            raise BodyError(
                422, f"{where} is a JSON {_json_type(record)}, not a request record (an object)"
            )
        check_types(record, f"item {index}" if isinstance(value, list) else "body")
        out.append(orjson.dumps(record))
    return b"\n".join(out) + b"\n"


def _ndjson_lines(body: bytes) -> bytes:
    lines = [line for line in body.split(b"\n") if line.strip()]
    if not lines:
        raise BodyError(422, "body has no line: no request record to extract")
    if len(lines) > MAX_RECORDS:
        raise BodyError(422, f"more than {MAX_RECORDS:,} records in one body")
    for number, line in enumerate(lines, 1):
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise BodyError(400, f"line {number} is not JSON: {exc}") from None
        if not isinstance(record, dict):
            raise BodyError(
                422, f"line {number} is a JSON {_json_type(record)}, not a request record"
            )
        check_types(record, f"line {number}")
    return b"\n".join(line.rstrip(b"\r") for line in lines) + b"\n"


def _scalar_types(payload: type) -> dict[str, tuple[type, ...]]:
    """The JSON types each scalar field of a payload TypedDict may hold (events.py, the
    names the code knows): a count is an integer; seconds any number; a time a number or
    an ISO string."""
    out: dict[str, tuple[type, ...]] = {}
    for name, hint in typing.get_type_hints(payload).items():
        if hint is int:
            out[name] = (int,)
        elif hint is float:
            out[name] = (int, float, str) if name == "ts" or name.endswith("_ts") else (int, float)
        elif hint is str:
            out[name] = (str,)
        elif hint is bool:
            out[name] = (bool,)
    return out


#: The request record's scalar fields, its ``sparse`` and ``sampling`` objects' fields.
REQUEST_TYPES = _scalar_types(RequestPayload)
NESTED_TYPES = {"sparse": _scalar_types(SparseInfo), "sampling": _scalar_types(SamplingInfo)}
#: The parser takes an integer id as well as a string one (``formats._trace``).
REQUEST_TYPES["request_id"] = (str, int)


def check_types(record: Mapping[str, Any], where: str) -> None:
    """A request record's known fields hold what their names say (null: unknown), or
    ``BodyError`` 422: ``extract`` would read ``"prompt_tokens": "100"`` as unknown and
    print null; an API client is told instead."""
    if record.get("type", "request") != "request":
        return  # token and meta lines: the reader checks them line by line
    _check_fields(record, REQUEST_TYPES, where, "")
    for name, types in NESTED_TYPES.items():
        inner = record.get(name)
        if inner is None:
            continue
        if not isinstance(inner, dict):
            raise BodyError(422, f"{where}: {name} is a JSON {_json_type(inner)}, not an object")
        _check_fields(inner, types, where, name + ".")


def _check_fields(
    record: Mapping[str, Any], types: dict[str, tuple[type, ...]], where: str, prefix: str
) -> None:
    for name, allowed in types.items():
        value = record.get(name)
        if value is None:
            continue
        # JSON true/false are Python ints: a boolean is a count only where bool is allowed.
        wrong = isinstance(value, bool) and bool not in allowed
        if wrong or not isinstance(value, allowed):
            expected = " or ".join(_TYPE_NAMES[t] for t in allowed)
            raise BodyError(
                422, f"{where}: {prefix}{name} is a JSON {_json_type(value)}, not {expected}"
            )
        if allowed == (int,) and isinstance(value, int) and not 0 <= value <= MAX_COUNT:
            raise BodyError(
                422, f"{where}: {prefix}{name} = {value} is not a count (0 to {MAX_COUNT:,})"
            )


#: The largest count a column holds (int32); the trace format schema says the same.
MAX_COUNT = 2_147_483_647
_TYPE_NAMES = {int: "an integer", float: "a number", str: "a string", bool: "a boolean"}


def _json_type(value: object) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    return "null" if value is None else type(value).__name__


def extract_body(lines: bytes, how: Extraction) -> bytes:
    """``extract``'s output for the trace ``lines`` (``trace_lines``). Raises ``BodyError``
    (422) when a line is not a request record the trace reader can read."""
    with tempfile.TemporaryDirectory(prefix="sparseety-serve-") as directory:
        path = os.path.join(directory, "body.jsonl")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(lines)
        extractor = make_extractor(how.options)
        ingest_file(extractor, path)
        state = extractor.files[0]
        # Request records, token events and headers are what a trace holds; a line read
        # as anything else (unparsed, other) was not understood.
        unread = {k: n for k, n in state.by_kind.items() if not k.startswith("trace.")}
        if unread:
            first = next(iter(state.diagnostics), None)
            why = f"line {first.line_no}: {first.reason}" if first is not None else ""
            kinds = ", ".join(f"{n} {k}" for k, n in sorted(unread.items()))
            raise BodyError(
                422, f"not every line is a request record ({kinds}){': ' + why if why else ''}"
            )
        if state.ignored:
            # The reader left a value unknown (a string count, a count above int32...):
            # ``extract`` would print null for it; an API client sent it wrong.
            fields = ", ".join(f"{k} ({n})" for k, n in sorted(state.ignored.items()))
            raise BodyError(422, f"values that are not what their field holds: {fields}")
        transform = None if how.redactor is None else how.redactor.document
        answer = b"".join(extract_lines(extractor, how.shape, None, how.with_text, None, transform))
        # Only the source names the temporary file: name the body instead.
        needle = b'"source":{"file":' + json_bytes(json_text(path)) + b","
        label = b'"source":{"file":' + json_bytes(BODY_LABEL) + b","
        return escape_json(answer.replace(needle, label))
