"""vLLM server logs, 0.2 to current V1 (log-formats.md §1-§4).

A vLLM line is ``[(<Proc> pid=<N>) ]*LEVEL MM-DD HH:MM:SS [file.py:NNN] message``; before
~0.8 the file info had no ``[``; with DEBUG logging it is a shortened path
(``[v1/engine/async_llm.py:480]``); a real paste shows the glitch ``[async_llm.py:485[]``,
which is accepted. Wrappers (docker, compose, k8s, collectors, ``> ``) and ANSI colours are
removed by ``clean``; process prefixes nest (``(EngineCore pid=925) (RayWorkerProc
pid=8272)``) and Ray Data names contain parentheses
(``(MapWorker(MapBatches(vLLMEngineStageUDF)) pid=20874)``).

Kinds this family returns (``ParsedLine[0]``):

- ``vllm.stats``: ``Avg prompt throughput`` lines (V0, V1 with/without ``Engine NNN:``,
  ``N Engines Aggregated:``), the V0 ``Prefix cache hit rate: GPU: X%, CPU: Y%`` line,
  ``SpecDecoding metrics`` (both V1 formats) and V0 ``Speculative metrics``
  -> ``("stats", StatsPayload)``;
- ``vllm.request``: ``Received request`` (0.2 / 0.3 / 0.4-0.11 / >=0.11.2 wordings),
  DEBUG ``Request X details``, ``Added request``, ``Aborted request``, ``Finished
  request``, ``Generated response`` -> ``("request", RequestPayload)``;
- ``api.response``: an OpenAI response / ``usage`` body or SGLang-style ``meta_info``
  dict printed into the log (JSON or Python repr) -> a request when it has an id;
- ``http.access``: uvicorn access lines (and a proxy's, common log format);
  ``traceback``: any line of a Python traceback (grouped into one ``("error",
  ErrorPayload)`` delivered through ``pending``);
- ``error``: a line logged at ERROR/CRITICAL that is no traceback's line, and error lines
  of other loggers (uvicorn ``ERROR:``, formats._errorlines): one error each, delivered
  through ``pending`` one line later; when a traceback follows at once, the line is its
  message and the two are one error (formats._tracebacks);
- ``prometheus``: ``/metrics`` exposition text; ``blank``; ``other``: a vLLM line (or a
  known third-party shape: tqdm, NCCL, PyTorch ``[rank0]:``, uvicorn lifecycle) with
  nothing to extract; ``unparsed`` (with ``last_reason``).

Payload fields are only those read from the line (never a 0 for "unknown"). Stats:
throughputs, running/waiting/swapped, ``kv_usage`` and ``prefix_cache_hit_rate`` as
fractions (vLLM prints percent), ``engine`` ("0", "all" for aggregated), spec acceptance.
Requests: ``request_id``, ``state``, ``prompt``, ``prompt_tokens`` (counted from
``prompt_token_ids`` when printed), ``completion``/``completion_tokens``/``finish_reason``
(``Generated response``), ``received_ts``/``finished_ts``, ``ts``; the id lists themselves
only with ``keep_token_ids=True``. ``SamplingParams`` (``max_tokens``) has no payload field
and is not read. V1 ≈0.15 engine-side ids ``<id>-<8hex>`` are mapped back to the id seen in
``Received request``.

Timestamps have no year and are local time. The year is inferred once per file: from a
wrapper timestamp that has one (docker ``--timestamps``, a collector), else from the
``reference_time`` given to ``new_parser`` (the file's mtime), else from the current time;
if the first stamp's month/day lies after the reference's, the log started last year.
Later stamps roll the year forward when the month drops by six or more (Dec -> Jan).
Lines are never reordered and a small step backwards never changes the year. When a
docker/CI RFC3339 wrapper with a zone is present, its instant is used as ``ts`` (it is
exact); otherwise the vLLM stamp is read in the host's local zone.

The package, by job: ``patterns`` (the regexes), ``clock`` (timestamps, year inference),
``stats`` (engine stats lines), ``requests`` (request lines, engine-side ids), ``parser``
(``VllmParser``: fast paths and per-line dispatch), ``kinds``; this module holds the family
(``sniff``, ``new_parser``).
"""

from __future__ import annotations

from importlib.util import find_spec

from sparseety_tui.batch import Batch
from sparseety_tui.formats import _prometheus as prometheus
from sparseety_tui.formats._base import LineParser
from sparseety_tui.formats._clean import ACCESS_RE, basic_clean
from sparseety_tui.formats._serverlog import quotes_traceback
from sparseety_tui.formats.vllm._clock import stamp_year
from sparseety_tui.formats.vllm._kinds import KINDS
from sparseety_tui.formats.vllm._parser import VllmParser
from sparseety_tui.formats.vllm._patterns import FAST_RE, HEAD_RE, HEAD_SEARCH_RE, PROC_RE
from sparseety_tui.formats.vllm._recent import RecentIds
from sparseety_tui.formats.vllm._requests import RECENT_IDS
from sparseety_tui.formats.vllm._sampling import sampling_params
from sparseety_tui.native import PURE_PYTHON

#: Whether the C scanner is built and allowed, known without importing it.
_NATIVE = not PURE_PYTHON and find_spec("sparseety_tui._vllmscan") is not None


def _scan_server(parser: LineParser, data: bytes, start: int, max_line_bytes: int) -> Batch:
    """``_native.scan_vllm``, imported at the first scan: it needs numpy, which commands
    that read no vLLM log in bulk (``--help``, ``config``) never load."""
    from sparseety_tui.formats.vllm._native import scan_vllm

    return scan_vllm(parser, data, start, max_line_bytes)


class VllmFamily:
    name = "vllm"
    description = "vLLM server log (0.2 to V1), incl. uvicorn, /metrics, response bodies"
    scan_requests = None  # no bulk fast paths (formats._base.FormatFamily)
    decode_simple_block = None

    #: The native scanner of its request and access lines (``_native.scan_vllm``); None
    #: when not built. (a staticmethod: a plain function here would be bound to the family)
    scan_server = staticmethod(_scan_server) if _NATIVE else None

    @staticmethod
    def range_start(line: bytes) -> bool:
        """A byte range of a split read may start here: vLLM's own logging head at INFO,
        DEBUG or WARNING level (so no open traceback or ERROR context), no traceback text
        (formats._base.FormatFamily.range_start)."""
        if quotes_traceback(line):
            return False
        m = HEAD_RE.match(line) or FAST_RE.match(line)
        return m is not None and m.group("level") in (b"INFO", b"DEBUG", b"WARNING")

    def sniff(self, lines: list[bytes]) -> float:
        nonblank = strong = weak = 0
        for raw in lines:
            line = basic_clean(raw)
            if not line.strip():
                continue
            nonblank += 1
            if b"req_id=" in line and b" | " in line:
                continue  # key=value request lines belong to the kvline family
            if (
                HEAD_SEARCH_RE.search(line) is not None
                or (b" pid=" in line and PROC_RE.search(line))
                or b"Received request " in line
                or b"Avg prompt throughput" in line
                or prometheus.family_of(line) == "vllm"
                or b'"kv_transfer_params"' in line
                or b"k05VTVBZ" in line
            ):
                strong += 1
            elif line[:1] == b"{" and b"meta_info" in line:
                continue  # SGLang /generate bodies
            elif (
                b"prompt_tokens" in line
                or b"CompletionUsage(" in line
                or ACCESS_RE.search(line) is not None
            ):
                weak += 1
        if not nonblank:
            return 0.0
        evidence = (strong + 0.5 * weak) / nonblank
        if strong == 0:
            return min(0.45, evidence)
        return min(0.95, 0.5 + evidence)

    def new_parser(
        self,
        *,
        reference_time: float | None = None,
        num_layers: int | None = None,
        top_k: int | None = None,
        keep_token_ids: bool = False,
    ) -> VllmParser:
        return VllmParser(
            reference_time=reference_time,
            num_layers=num_layers,
            top_k=top_k,
            keep_token_ids=keep_token_ids,
        )


FAMILY = VllmFamily()


__all__ = [
    "FAMILY",
    "FAST_RE",
    "HEAD_RE",
    "KINDS",
    "RECENT_IDS",
    "RecentIds",
    "VllmFamily",
    "VllmParser",
    "sampling_params",
    "stamp_year",
]
