"""SGLang server logs, ~0.2 to current (log-formats.md §5, §6).

An SGLang line is ``[YYYY-MM-DD HH:MM:SS( DPn| TPn| EPn| PPn ...)*] message``: no level,
no file. Variants: ``.mmm`` milliseconds (``SGLANG_LOG_MS=1``), time only
(``[16:43:29 TP0]``, ~0.3), ``[gpu=0] `` without a time (~0.2), and no rank suffix at all
(tp_size=1 since ~May 2025). Other processes write into the same stream, sometimes in the
middle of a line (``This is only a test[2024-10-31 ... TP0] Prefill batch...``), so when the
anchored prefix fails the prefix is looked for with ``re.search``.

Kinds this family returns:

- ``sglang.prefill`` / ``sglang.decode``: ``Prefill batch`` / ``Decode batch`` lines of every
  version (``.``/``,`` after ``batch``, ``[iter]``, trailing commas, ``cache hit rate``,
  ``#cached-token``, ``cuda graph``/``npu graph``, ``input throughput``, ``#pending-token``,
  SWA ``full token usage``, Mamba, PD ``pre-allocated usage`` / ``#unbootstrapped-req``,
  speculative ``accept len``/``accept rate``, sglang-jax ``#cache_miss``); fields are read
  generically (``key: value`` split on ``, ``), unknown or garbled keys are ignored
  -> ``("stats", StatsPayload)``;
- ``sglang.request``: ``--log-requests`` ``Receive:`` / ``Receive OpenAI:`` / ``Finish:``
  lines (with or without the ``[ts]`` prefix: the newer RequestLogger prints bare
  messages) and JSON request-log lines (``"event": "request.finished"``)
  -> ``("request", RequestPayload)``;
- ``api.response``: a ``/generate`` result (``{'text': ..., 'meta_info': {...}}``, repr or
  JSON, or a list of them) or an OpenAI body/``usage`` printed into the log;
- ``sglang.expert_dist``: expert-distribution CSV dump lines (``layer_id,expert_id,count``
  header and ``L,E,N`` rows);
- ``error``: a PD (prefill/decode disaggregation) ``Prefill transfer failed`` /
  ``Prefill bootstrap failed`` / ``Decode transfer failed`` line -> ``("request", {state:
  failed})`` and an error naming the request (once per failure, not per rank:
  ``failures``); uvicorn ``ERROR:`` lines and error lines of other loggers
  (formats._errorlines) -> an error;
- ``http.access``, ``traceback``, ``prometheus``, ``blank``, ``other``, ``unparsed`` as in
  the vLLM family (access lines also in the common log format, formats._access).

``ts``: ``[date time]`` prefixes are local wall-clock time on the inference host, converted
with the host's zone. Time-only prefixes get the date of the last dated line of the file
(next day when the time goes back by more than 12 h); with no dated line before them,
``ts`` is left out.

The package, by job: ``patterns`` (the regexes), ``clock`` (dated and time-only prefixes),
``stats`` (batch lines), ``requests`` (request logging lines), ``parser`` (``SglangParser``:
fast path and per-line dispatch), ``kinds``; this module holds the family (``sniff``,
``new_parser``).
"""

from __future__ import annotations

from sparseety_tui.formats import _prometheus as prometheus
from sparseety_tui.formats._clean import basic_clean
from sparseety_tui.formats._serverlog import quotes_traceback
from sparseety_tui.formats.sglang._failures import MARKER
from sparseety_tui.formats.sglang._kinds import KINDS
from sparseety_tui.formats.sglang._native import SCANNER, SUM_FIELDS
from sparseety_tui.formats.sglang._parser import SglangParser
from sparseety_tui.formats.sglang._patterns import (
    _CSV_HEADER,
    _VLLM_STYLE_RE,
    GPU_PREFIX_RE,
    PREFIX_RE,
    PREFIX_SEARCH_RE,
)


class SglangFamily:
    name = "sglang"
    description = "SGLang server log (~0.2 to current), incl. uvicorn, /metrics, meta_info"
    scan_requests = None  # no bulk fast paths (formats._base.FormatFamily)
    #: The native scanner of its common lines (formats/sglang/_native.py); None when not built.
    #: (a staticmethod: a plain function here would be bound to the family)
    scan_server = None if SCANNER is None else staticmethod(SCANNER)
    decode_simple_block = None

    @staticmethod
    def range_start(line: bytes) -> bool:
        """A byte range of a split read may start here: SGLang's own prefix with a full
        date (which resets the date context of time-only prefixes), no traceback text
        (formats._base.FormatFamily.range_start)."""
        if quotes_traceback(line) or MARKER in line:
            return False  # inside a traceback, or maybe the next rank's PD failure
        m = PREFIX_RE.match(line)
        return m is not None and m.group("y") is not None

    def sniff(self, lines: list[bytes]) -> float:
        nonblank = strong = weak = 0
        for raw in lines:
            line = basic_clean(raw)
            if not line.strip():
                continue
            nonblank += 1
            if b"req_id=" in line and b" | " in line:
                continue  # key=value request lines belong to the kvline family
            if b"Prefill batch" in line or b"Decode batch" in line:
                strong += 1
                continue
            if GPU_PREFIX_RE.match(line) or b"meta_info" in line or b"ServerArgs(" in line:
                strong += 1
                continue
            if prometheus.family_of(line) == "sglang" or line.startswith(_CSV_HEADER):
                strong += 1
                continue
            m = PREFIX_SEARCH_RE.search(line)
            if m is not None and (m.group("y") is not None or m.group("ranks")):
                msg = line[m.end() :]
                if _VLLM_STYLE_RE.match(msg):
                    continue  # a collector's stamp in front of a vLLM line
                strong += 1
                continue
            if b"prompt_tokens" in line or b"CompletionUsage(" in line:
                weak += 1
        if not nonblank:
            return 0.0
        evidence = (strong + 0.5 * weak) / nonblank
        if strong == 0:
            # Bare usage bodies: equally plausible from vLLM; this keeps them above a
            # generic JSON reader's weak claim but never above a real server log.
            return min(0.45, evidence)
        return min(0.95, 0.5 + evidence)

    def new_parser(
        self,
        *,
        reference_time: float | None = None,  # SGLang's dated prefixes carry the year
        num_layers: int | None = None,
        top_k: int | None = None,
        keep_token_ids: bool = False,
    ) -> SglangParser:
        return SglangParser(num_layers=num_layers, top_k=top_k, keep_token_ids=keep_token_ids)


FAMILY = SglangFamily()


__all__ = [
    "FAMILY",
    "KINDS",
    "PREFIX_RE",
    "SCANNER",
    "SUM_FIELDS",
    "SglangFamily",
    "SglangParser",
]
