"""OpenTelemetry spans in OTLP/JSON: a file as the OpenTelemetry Collector's ``file``
exporter writes it (one ``ExportTraceServiceRequest`` a line), or the receivers' spool of
received spans (one span a line).

Kinds this family returns (``ParsedLine[0]``):

- ``otlp.spans``: a line with at least one span. Each span that names a request
  (``gen_ai.request.id``, else SGLang's ``rid``) is a ``("request", RequestPayload)``:
  the first returned, the others through ``pending``. A span that names none (SGLang's
  thread and stage spans, a web framework's spans) is counted in ``ignored`` by its name,
  as is every attribute of the wrong type;
- ``otlp.empty``: OTLP/JSON without a span;
- ``blank``; ``unparsed``: not JSON, or JSON that is no ``ExportTraceServiceRequest``.

The payload of vLLM's ``llm_request`` span has its timing (``queue_s``, ``prefill_s``,
``decode_s``, ``inference_s``, ``ttft_s``, ``latency_s``, ``preemptions``) with
``timing_from`` ``"span"``, token counts, sampling, model, finish reason, start and end
times, state (``failed`` for an ERROR status, ``aborted``/``failed`` from a journey
event's ``finish.status``) and the W3C ``trace_id``/``span_id``. docs/formats.md has the
attribute table.

The receivers turn an OTLP/HTTP or gRPC body into such lines with
``lines_from_json_body`` and ``lines_from_proto_body`` (the latter needs the ``otlp``
extra, imported at its first call).

The package, by job: ``values`` (typed attribute reads), ``spans`` (a span as a request
update), ``parser`` (``OtlpParser``), ``family`` (``sniff``), ``wire`` (request bodies
as lines), ``kinds``.
"""

from sparseety_tui.formats.otlp._family import FAMILY, KINDS, OtlpFamily
from sparseety_tui.formats.otlp._kinds import EMPTY, SPANS
from sparseety_tui.formats.otlp._parser import OtlpParser
from sparseety_tui.formats.otlp._wire import lines_from_json_body, lines_from_proto_body

__all__ = [
    "EMPTY",
    "FAMILY",
    "KINDS",
    "SPANS",
    "OtlpFamily",
    "OtlpParser",
    "lines_from_json_body",
    "lines_from_proto_body",
]
