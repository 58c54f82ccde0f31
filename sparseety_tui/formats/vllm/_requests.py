"""vLLM request lines -> ``("request", RequestPayload)``: ``Received request`` (every
wording), DEBUG ``Request X details``, ``Added`` / ``Aborted`` / ``Finished request``,
``Generated response``; and the window of received ids that V1 ≈0.15 engine-side ids
(``<id>-<8hex>``) are mapped back against."""

from __future__ import annotations

import re

from sparseety_tui.events import Event, ParsedLine, RequestPayload
from sparseety_tui.formats._base import BoundaryNotes
from sparseety_tui.formats._pylit import LiteralError, read_string_at
from sparseety_tui.formats._serverlog import decode, emit_requests
from sparseety_tui.formats.vllm._kinds import REQUEST
from sparseety_tui.formats.vllm._patterns import (
    _DETAILS_RE,
    _GENERATED_RE,
    _ID_SUFFIX_RE,
    _LIFECYCLE_RE,
    _RECEIVED_RE,
)
from sparseety_tui.formats.vllm._recent import RecentIds
from sparseety_tui.formats.vllm._sampling import sampling_params

_PROMPT_IDS_KEYS = (b"prompt_token_ids: ", b"prompt token ids: ")
_OUTPUT_IDS_KEYS = (b"output_token_ids: ",)
_DIGITS_AND_COMMAS = b"0123456789, "

#: Engine-side ids of V1 ≈0.15 add ``-<8hex>`` to the front-end id; remember this many
#: received ids to map them back.
RECENT_IDS = 4096

#: What ``--enable-log-outputs`` prints as the finish reason of the ``Generated response
#: <id> (streaming complete)`` line, logged when a stream has sent its last chunk.
STREAM_DONE = "streaming_complete"


def _find_key(body: bytes, keys: tuple[bytes, ...], pos: int) -> int:
    """Index just after the first of ``keys`` found from ``pos`` (-1 if none)."""
    for key in keys:
        at = body.find(key, pos)
        if at >= 0:
            return at + len(key)
    return -1


def _id_list(text: bytes, pos: int, keep: bool) -> tuple[int | None, list[int] | None]:
    """``[1, 2, 3]`` at ``pos`` -> (count, ids if ``keep``); (None, None) for ``None`` or
    anything that is not a plain int list. Counting needs no int objects, which is what
    keeps long ``prompt_token_ids`` lines cheap."""
    if not text.startswith(b"[", pos):
        return None, None
    close = text.find(b"]", pos)
    if close < 0:
        return None, None
    inner = text[pos + 1 : close]
    if inner.translate(None, _DIGITS_AND_COMMAS):
        return None, None  # not a plain int list (truncated, `...`)
    if not inner.strip(b" "):
        return 0, ([] if keep else None)
    if not keep:
        return inner.count(b",") + 1, None
    try:
        ids = list(map(int, inner.split(b",")))
    except ValueError:
        return None, None
    return len(ids), ids


def _repr_string(body: bytes, pos: int) -> tuple[str | None, int]:
    """A Python-repr string literal at ``pos`` (bytes); (None, pos) if there is none.

    The closing quote is found with ``bytes.find`` (skipping escaped quotes), so a long
    prompt costs a few C-level scans; only strings with escapes go through pylit.
    """
    quote = body[pos : pos + 1]
    if quote not in (b"'", b'"'):
        return None, pos
    i = pos + 1
    while True:
        j = body.find(quote, i)
        if j < 0:
            return None, pos
        k = j - 1
        while k > pos and body[k] == 0x5C:  # backslash
            k -= 1
        if (j - 1 - k) % 2 == 0:
            break
        i = j + 1
    raw = body[pos : j + 1]
    if b"\\" not in raw:
        return raw[1:-1].decode("utf-8", "replace"), j + 1
    try:
        return read_string_at(raw.decode("utf-8", "replace"), 0)[0], j + 1
    except LiteralError:
        return None, j + 1


def may_be_engine_side(rid: str) -> bool:
    """Whether ``rid`` may be an engine-side ``<id>-<8hex>`` (``_canonical`` maps only
    those, and only when the id itself is not in the window)."""
    return rid[-9:-8] == "-"


class RequestLines:
    """The request methods of ``VllmParser`` (a mixin: the state below is set by its
    ``__init__``, ``pending`` and ``keep_token_ids`` by ``ServerLogParser``'s)."""

    pending: list[Event]
    keep_token_ids: bool
    _recent: RecentIds
    boundary: BoundaryNotes | None

    def _remember(self, rid: str) -> None:
        if not self._recent.remember(rid):
            return  # re-received: keeps its place in the window
        notes = self.boundary
        if notes is not None and len(notes.first_inserted) < RECENT_IDS:
            notes.first_inserted.append(rid)

    def _canonical(self, rid: str) -> str:
        """Engine-side ``<id>-<8hex>`` -> the front-end ``<id>`` we saw received."""
        if rid in self._recent or not may_be_engine_side(rid):
            return rid
        m = _ID_SUFFIX_RE.search(rid)
        if m is not None:
            base = rid[: m.start()]
            if base in self._recent:
                return base
            if self.boundary is not None:
                self.boundary.unmapped.append((rid, base, self._recent.remembered))
        return rid

    def _request(self, msg: bytes, ts: float | None) -> ParsedLine | None:
        # Substring checks pick the one regex to run (each would scan the whole line).
        if b"Received request " in msg:
            m = _RECEIVED_RE.search(msg)
            if m is not None:
                return self._received(decode(m.group("id")), msg[m.end() :], ts)
        if b" details: " in msg:
            m = _DETAILS_RE.search(msg)
            if m is not None:
                rid = self._canonical(decode(m.group("id")))
                return self._received(rid, msg[m.end() :], ts, details=True)
        if b"Generated response " in msg:
            m = _GENERATED_RE.search(msg)
            if m is not None:
                return self._generated(m, msg[m.end() :], ts)
        if (
            b"Added request" not in msg
            and b"Aborted request" not in msg
            and (b"Finished request" not in msg)
        ):
            return None
        m = _LIFECYCLE_RE.match(msg) or _LIFECYCLE_RE.search(msg)
        if m is not None:
            what = m.group("what")
            state = {b"Added": "running", b"Aborted": "aborted", b"Finished": "finished"}[what]
            payloads: list[RequestPayload] = []
            ids = msg[m.end() :].rstrip()
            if ids.endswith(b"."):
                ids = ids[:-1]
            for raw in ids.split(b","):
                rid = decode(raw.strip().strip(b"'\"[]."))
                if not rid or " " in rid:
                    continue
                payload: RequestPayload = {"request_id": self._canonical(rid), "state": state}
                if ts is not None and state != "running":
                    payload["finished_ts"] = ts
                payloads.append(payload)
            if payloads:
                return emit_requests(self.pending, payloads, REQUEST, ts)
        return None

    def _received(
        self, rid: str, body: bytes, ts: float | None, details: bool = False
    ) -> ParsedLine:
        # The DEBUG details line is logged at arrival too, just before Received: its time
        # is the request's arrival, never its end.
        payload: RequestPayload = {"request_id": rid, "state": "received"}
        if not details:
            self._remember(rid)
        if ts is not None:
            payload["received_ts"] = ts
        pos = 0
        if body.startswith(b"prompt: "):
            prompt, pos = _repr_string(body, 8)
            if prompt is not None:
                payload["prompt"] = prompt
        if not details:
            sampling = sampling_params(body, pos)
            if sampling:
                payload["sampling"] = sampling
        at = _find_key(body, _PROMPT_IDS_KEYS, pos)
        if at >= 0:
            count, ids = _id_list(body, at, self.keep_token_ids)
            if count is not None:
                payload["prompt_tokens"] = count
                payload["prompt_ids_logged"] = count  # cut at --max-log-len? (core.extraction)
            if ids is not None:
                payload["prompt_token_ids"] = ids
        return emit_requests(self.pending, [payload], REQUEST, ts)

    def _generated(self, m: re.Match[bytes], body: bytes, ts: float | None) -> ParsedLine:
        rid = self._canonical(decode(m.group("id")))
        payload: RequestPayload = {"request_id": rid}
        stream = m.group("stream")
        delta = stream is not None and b"delta" in stream
        pos = 0
        if body.startswith(b"output: "):
            text, pos = _repr_string(body, 8)
            if text is not None and not delta:
                payload["completion"] = text
        at = _find_key(body, _OUTPUT_IDS_KEYS, pos)
        if at >= 0 and not delta:
            count, ids = _id_list(body, at, self.keep_token_ids)
            if count is not None:
                payload["completion_tokens"] = count
            if ids is not None:
                payload["completion_token_ids"] = ids
            pos = at
        fr = body.find(b"finish_reason: ", pos)
        if fr >= 0:
            reason = decode(body[fr + 15 :].split(b",", 1)[0].strip().rstrip(b".").strip(b"'\""))
            if reason == STREAM_DONE and not delta:
                # The end of a stream: vLLM's marker, not a finish reason (that came
                # with the last delta); the line's time is the request's end.
                payload["state"] = "finished"
                if ts is not None:
                    payload["finished_ts"] = ts
            elif reason and reason != "None":
                payload["finish_reason"] = reason
                if not delta:
                    payload["state"] = "aborted" if reason == "abort" else "finished"
                    if ts is not None:
                        payload["finished_ts"] = ts
        return emit_requests(self.pending, [payload], REQUEST, ts)
