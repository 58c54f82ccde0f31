"""SGLang request logging -> ``("request", RequestPayload)``: ``--log-requests``
``Receive:`` / ``Receive OpenAI:`` / ``Finish:`` lines and JSON request-log lines."""

from __future__ import annotations

from typing import Any

import orjson

from sparseety_tui.events import Event, ParsedLine, RequestPayload
from sparseety_tui.formats._base import note_ignored
from sparseety_tui.formats._numbers import count
from sparseety_tui.formats._pylit import LiteralError, parse_value_at, read_string_at
from sparseety_tui.formats._responses import request_from_meta_info
from sparseety_tui.formats._routing import RoutingOptions
from sparseety_tui.formats._serverlog import decode, emit_requests
from sparseety_tui.formats._timestamps import OUT_OF_RANGE, parse_timestamp
from sparseety_tui.formats.sglang._kinds import REQUEST
from sparseety_tui.formats.sglang._patterns import _RID_RE

#: str.translate table deleting the characters of a plain int list.
_NOT_ID_CHARS = str.maketrans("", "", "0123456789, ")


class RequestLines:
    """The request methods of ``SglangParser`` (a mixin: ``pending``, ``keep_token_ids``
    and ``routing`` are set by ``ServerLogParser.__init__``)."""

    pending: list[Event]
    keep_token_ids: bool
    routing: RoutingOptions
    ignored: dict[str, int]

    def _request_line(self, msg: bytes, ts: float | None) -> ParsedLine | None:
        text = decode(msg)
        if text.startswith(("Receive: ", "Receive OpenAI: ")):
            return self._receive(text, ts)
        if text.startswith("Finish: "):
            return self._finish(text, ts)
        return None

    def _receive(self, text: str, ts: float | None) -> ParsedLine:
        payload: RequestPayload = {"state": "received"}
        rm = _RID_RE.search(text)
        if rm is not None:
            payload["request_id"] = rm.group("rid")
        if ts is not None:
            payload["received_ts"] = ts
        pos = text.find("input_ids=[")
        if pos >= 0:
            close = text.find("]", pos)
            if close > 0:
                inner = text[pos + 11 : close]
                if not inner.translate(_NOT_ID_CHARS) and inner.strip():
                    payload["prompt_tokens"] = inner.count(",") + 1
                    if self.keep_token_ids:
                        read = [count(x.strip()) for x in inner.split(",")]
                        ids = [i for i in read if i is not None]
                        if len(ids) == len(read):  # else ``1,,2``, a 5,000-digit id: count only
                            payload["prompt_token_ids"] = ids
        tpos = text.find("(text=")
        if tpos >= 0 and text.startswith(("'", '"'), tpos + 6):
            try:
                prompt, _ = read_string_at(text, tpos + 6)
                payload["prompt"] = prompt
            except LiteralError:
                pass
        if "request_id" not in payload:
            return REQUEST, None  # a batch (rid=[...]) or an abbreviated line: no single id
        return emit_requests(self.pending, [payload], REQUEST, ts)

    def _finish(self, text: str, ts: float | None) -> ParsedLine:
        payload: RequestPayload = {}
        rm = _RID_RE.search(text)
        if rm is not None:
            payload["request_id"] = rm.group("rid")
        out: Any = None
        pos = text.rfind(", out={")
        if pos >= 0:
            try:
                out, _ = parse_value_at(text, pos + 6)
            except (LiteralError, RecursionError):
                out = None
        meta: Any = out.get("meta_info") if isinstance(out, dict) else None
        if not isinstance(meta, dict):
            for needle in ("'meta_info': ", '"meta_info": '):
                mpos = text.rfind(needle)
                if mpos >= 0:
                    try:
                        meta, _ = parse_value_at(text, mpos + len(needle))
                    except (LiteralError, RecursionError):
                        meta = None
                    break
        if isinstance(meta, dict):
            request_from_meta_info(meta, self.routing, payload, self.ignored)
        if isinstance(out, dict) and isinstance(out.get("text"), str):
            payload["completion"] = out["text"]
        if "state" not in payload and isinstance(meta, dict):
            payload["state"] = "finished"
        if ts is not None:
            payload.setdefault("finished_ts", ts)
        if "request_id" not in payload:
            return REQUEST, None
        return emit_requests(self.pending, [payload], REQUEST, ts)

    def _json_request(self, rest: bytes) -> ParsedLine | None:
        """``--log-requests-format json``: ``{"timestamp": ..., "event": "request.finished",
        "rid": ..., "obj": {...}, "out": {...}}``."""
        try:
            obj = orjson.loads(rest)
        except orjson.JSONDecodeError:
            return None
        if not isinstance(obj, dict):
            return None
        event = obj.get("event")
        if not isinstance(event, str) or not event.startswith("request."):
            return None
        payload: RequestPayload = {}
        rid = obj.get("rid")
        if isinstance(rid, str):
            payload["request_id"] = rid
        stamp = obj.get("timestamp")
        ts = None
        if isinstance(stamp, (int, float)) and not isinstance(stamp, bool):
            ts = parse_timestamp(stamp)  # an epoch number in any unit
            if ts is None:
                note_ignored(self.ignored, "timestamp", OUT_OF_RANGE)
        if ts is not None:
            payload["ts"] = ts
        if event.startswith("request.received"):
            self._json_received(obj, payload, ts)
        else:
            self._json_finished(obj, payload, ts)
        if "request_id" not in payload:
            return REQUEST, None
        return REQUEST, ("request", payload)

    def _json_received(
        self, obj: dict[str, Any], payload: RequestPayload, ts: float | None
    ) -> None:
        """The fields of a ``request.received`` JSON event: its prompt (ids and text)."""
        payload["state"] = "received"
        if ts is not None:
            payload["received_ts"] = ts
        req = obj.get("obj")
        if isinstance(req, dict):
            ids = req.get("input_ids")
            if isinstance(ids, list) and all(isinstance(i, int) for i in ids):
                payload["prompt_tokens"] = len(ids)
                if self.keep_token_ids:
                    payload["prompt_token_ids"] = ids
            if isinstance(req.get("text"), str):
                payload["prompt"] = req["text"]

    def _json_finished(
        self, obj: dict[str, Any], payload: RequestPayload, ts: float | None
    ) -> None:
        """The fields of any other ``request.*`` JSON event: its output's meta info and
        text."""
        out = obj.get("out")
        if isinstance(out, dict):
            meta = out.get("meta_info")
            if isinstance(meta, dict):
                request_from_meta_info(meta, self.routing, payload, self.ignored)
                payload.setdefault("state", "finished")
            if isinstance(out.get("text"), str):
                payload["completion"] = out["text"]
        if ts is not None:
            payload.setdefault("finished_ts", ts)
