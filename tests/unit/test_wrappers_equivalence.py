"""Issue #10 acceptance: every real log, wrapped by each shipper, gives the bare log's summary.

Each log of ``tests/data/real_logs`` is wrapped here, synthetically, the way each wrapper of
``formats/_wrappers.py`` writes it (and as ``kubectl logs --timestamps`` prefixes it, which
``clean.strip_wrappers`` reads line by line), and ``summary --json`` of the wrapped copy
must equal that of the bare log apart from the file's path and ``wrapper`` key.

The wrapper stamps carry no more than the inner line: a line with its own timestamp gets a
wrapper stamp of the same instant (the test runs with ``TZ=UTC``, so the server's local
time is UTC; vLLM's year is the one the bare parser inferred for that line; a line that
already has a zoned wrapper stamp, docker ``--timestamps``, gets that very stamp). A line
with no timestamp of its own (a traceback frame, SGLang's ``Finish:`` line, a uvicorn
line) gets *no* stamp where the wrapper allows it (an empty ``time``/``timestamp``, no
stamp in stern's prefix, ``-`` in RFC 5424).

The one exclusion: CloudWatch and ``journalctl -o short-iso`` always print a stamp, so
there such a line gets the previous line's (what a shipper reading the stream would
give). Then the wrapper legitimately adds information the bare log lacks: that line gets
a time, and a request or stats record or error read from it is placed in time. For those
two wrappers, on files with such lines, the summary parts built from times
(``TIME_FROM_WRAPPER``, and each engine's in ``engine.by_engine``) are left out of the
comparison; everything else must still be equal. ``test_wrappers.py`` checks that the
wrapper's time is used on such lines.

Logs that are themselves a shipper's export (the CloudWatch and journalctl excerpts) are not
wrapped again: shippers do not nest.
"""

from __future__ import annotations

import calendar
import json
import os
import re
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from sparseety_tui.core.report._report import summary_document
from sparseety_tui.formats import vllm
from sparseety_tui.ingest.batch import Options, ingest_file, make_extractor, make_shape

REAL = Path(__file__).resolve().parents[1] / "data" / "real_logs"


def _shipped(path: Path) -> bool:
    """Whether a log is itself a shipper's export (CloudWatch, journalctl): shippers do not
    nest, so such a log is not wrapped again (its own wrapper is tested in test_wrappers
    and test_real_logs_round2)."""
    from sparseety_tui.formats._registry import detect_wrapper

    return detect_wrapper(path.read_bytes().split(b"\n")[:200]) is not None


LOGS = sorted(
    p.name for p in REAL.iterdir() if p.suffix in (".log", ".jsonl", ".txt") and not _shipped(p)
)

_VLLM_STAMP = re.compile(
    rb"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) (\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)"
)
_DATED = re.compile(
    rb"(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(?:[.,]\d{1,9})?(Z|[+-]\d\d:?\d\d)?"
)


@pytest.fixture(autouse=True)
def _utc() -> Iterator[None]:
    old = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    yield
    if old is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = old
    time.tzset()


def _lines(path: Path) -> list[bytes]:
    data = path.read_bytes()
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return [line[:-1] if line.endswith(b"\r") else line for line in lines]


def own_stamps(path: Path) -> list[str | None]:
    """Per line, its own timestamp as UTC RFC3339 (None: the line has none), read as the
    bare parser reads it (TZ=UTC; vLLM's year as the bare parser inferred it)."""
    parser = vllm.FAMILY.new_parser(reference_time=path.stat().st_mtime)
    out: list[str | None] = []
    for line in _lines(path):
        parser.parse(line)
        m = _DATED.search(line[:200])
        v = _VLLM_STAMP.search(line[:200])
        if m is not None and m.group(7) is not None:
            out.append(m.group(0).decode().replace(" ", "T"))  # zoned: the very stamp
            continue
        if v is not None and parser.year_state()[0] is not None:
            y = parser.year_state()[0] or 0
            mo, d, h, mi, s = (int(g) for g in v.groups())
        elif m is not None:
            y, mo, d, h, mi, s = (int(g) for g in m.groups()[:6])
        else:
            out.append(None)
            continue
        try:
            secs = calendar.timegm((y, mo, d, h, mi, s, 0, 0, 0))
        except (ValueError, OverflowError):
            out.append(None)
            continue
        out.append(time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(secs)))
    return out


Wrap = Callable[[bytes, str | None], bytes]
#: Wrappers that print a stamp on every line (the docstring's exclusion).
ALWAYS_STAMPED = ("cloudwatch", "journald-short-iso")


def _json(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def _text(line: bytes) -> str:
    return line.decode("utf-8", "surrogateescape")


WRAPPERS: dict[str, tuple[str | None, Wrap]] = {
    "docker-json": (
        "docker-json",
        lambda line, ts: _json({"log": _text(line) + "\n", "stream": "stderr", "time": ts or ""}),
    ),
    "loki-json": (
        "loki-json",
        lambda line, ts: _json(
            {"labels": {"app": "x"}, "line": _text(line), "timestamp": ts or ""}
        ),
    ),
    "vector-json": (
        "vector-json",
        lambda line, ts: _json(
            {"host": "h", "message": _text(line), "source_type": "file", "timestamp": ts or ""}
        ),
    ),
    "cloudwatch": (
        "cloudwatch",
        lambda line, ts: b"1718000000123\t" + (ts or "").encode() + b"\t" + line,
    ),
    "journald-short": (
        "journald",
        lambda line, ts: b"Dec 01 02:23:57 gpu-node-3 vllm[1234]: " + line,
    ),
    "journald-short-iso": (
        "journald",
        lambda line, ts: (ts or "").replace("Z", "+0000").encode() + b" node vllm[12]: " + line,
    ),
    "syslog-rfc5424": (
        "syslog-rfc5424",
        lambda line, ts: b"<14>1 " + (ts or "-").encode() + b" node vllm 12 - - " + line,
    ),
    "kubectl-prefix": (
        "kubectl-prefix",
        lambda line, ts: b"[pod/vllm-7d9f8c6b5-x2k9p/vllm] " + line,
    ),
    "stern": (
        "stern",
        lambda line, ts: b"vllm-0 vllm " + (ts.encode() + b" " if ts else b"") + line,
    ),
}

#: Summary parts built from line times, left out for ``ALWAYS_STAMPED`` wrappers on files
#: with lines that have no time of their own (the module docstring says why).
TIME_FROM_WRAPPER = (
    ("throughput_per_minute",),
    ("throughput_per_minute_by",),
    ("requests", "requests_per_minute"),
    ("engine", "per_minute_mean"),
    ("engine", "last", "ts"),
    ("errors", "recent"),
    ("errors", "records"),
)
#: The same, in each engine of ``engine.by_engine``.
ENGINE_TIME_FROM_WRAPPER = (("per_minute_mean",), ("last", "ts"))


def _drop(doc: dict[str, Any], path: tuple[str, ...]) -> None:
    for key in path[:-1]:
        doc = doc.get(key) or {}
    doc.pop(path[-1], None)


def summary(path: Path) -> dict[str, Any]:
    extractor = make_extractor(Options())
    ingest_file(extractor, str(path))
    doc = summary_document(extractor, make_shape(Options())).to_json()
    for f in doc["files"]:
        f.pop("path")
        f.pop("wrapper", None)
        for sample in f["unparsed_samples"]:
            sample.pop("text")  # the wrapped line's text: the line as read
    for key in ("recent", "records"):
        for error in doc["errors"].get(key, ()):
            error.pop("path")  # the wrapped copy's name
    for request in doc.get("requests_list", []) or []:
        request.get("source", {}).pop("file", None)
    for group in doc["splits"]["file"]:
        group.pop("name")  # the file's path, as files[].path
    return doc


def _strip_offsets(value: Any) -> Any:
    """Byte offsets differ (a wrapped line is longer); line numbers do not."""
    if isinstance(value, dict):
        return {k: _strip_offsets(v) for k, v in value.items() if k != "offset"}
    if isinstance(value, list):
        return [_strip_offsets(v) for v in value]
    return value


@pytest.mark.parametrize("wrapper", sorted(WRAPPERS))
@pytest.mark.parametrize("name", LOGS)
def test_wrapped_log_summary_equals_bare(tmp_path: Path, name: str, wrapper: str) -> None:
    bare = tmp_path / name
    shutil.copyfile(REAL / name, bare)
    mtime = (REAL / name).stat().st_mtime
    os.utime(bare, (mtime, mtime))
    expected_wrapper, wrap = WRAPPERS[wrapper]
    stamps = own_stamps(bare)
    stampless = any(ts is None for ts, line in zip(stamps, _lines(bare)) if line.strip())
    if wrapper in ALWAYS_STAMPED:
        carried: list[str | None] = []
        for ts in stamps:
            carried.append(ts or (carried[-1] if carried else "2024-01-01T00:00:00Z"))
        stamps = carried
    wrapped = tmp_path / f"wrapped-{name}"
    wrapped.write_bytes(b"".join(wrap(line, ts) + b"\n" for line, ts in zip(_lines(bare), stamps)))
    os.utime(wrapped, (mtime, mtime))
    want, got = summary(bare), summary(wrapped)
    if stampless and wrapper in ALWAYS_STAMPED:
        for doc in (want, got):
            for path in TIME_FROM_WRAPPER:
                _drop(doc, path)
            for engine in ((doc.get("engine") or {}).get("by_engine") or {}).values():
                for path in ENGINE_TIME_FROM_WRAPPER:
                    _drop(engine, path)
    assert _strip_offsets(got) == _strip_offsets(want)
    extractor = make_extractor(Options())
    ingest_file(extractor, str(wrapped))
    from sparseety_tui.formats import wrapper_name

    assert wrapper_name(extractor.files[0].family) == expected_wrapper
