"""vLLM engine statistics lines -> ``("stats", StatsPayload)``: V1 ``Engine NNN:`` and
aggregated lines, V0 lines, the V0 prefix-cache hit rate line, speculative decoding
metrics, and any future order of ``Key: value unit`` fields."""

from __future__ import annotations

from sparseety_tui.events import ParsedLine, StatsPayload
from sparseety_tui.formats._numbers import count, real
from sparseety_tui.formats.vllm._kinds import STATS
from sparseety_tui.formats.vllm._patterns import V0_HIT_RE, V0_STATS_RE, V1_STATS_RE

_ENGINE_NAMES = {b"000": "0", b"001": "1", b"002": "2", b"003": "3"}
#: Generic ``Key: N`` fields that are counts: a value that is not a whole number from 0 to
#: 2**53 (where floats still count by one) leaves them unknown.
_COUNT_FIELDS = {
    b"Running": "running",
    b"Waiting": "waiting",
    b"Pending": "waiting",
    b"Swapped": "swapped",
}
_COUNT_MAX = 2**53
#: Fields newer V1 builds print only when they apply (vllm/v1/metrics/loggers.py):
#: name -> (payload field, True for a percentage read as a fraction, False for a count).
_EXTRA_FIELDS: dict[bytes, tuple[str, bool]] = {
    b"Deferred": ("deferred", False),
    b"Preemptions": ("preemptions", False),
    b"Corrupted": ("corrupted", False),
    b"External prefix cache hit rate": ("external_prefix_cache_hit_rate", True),
    b"MM cache hit rate": ("mm_cache_hit_rate", True),
}


def _extra_field(name: bytes, raw: bytes, payload: StatsPayload) -> None:
    """One of ``_EXTRA_FIELDS`` into the payload; anything else, or a value that is not
    a plain number of its kind, is left out (unknown)."""
    spec = _EXTRA_FIELDS.get(name)
    if spec is None:
        return
    key, percent = spec
    if percent:
        num = real(raw)
        if num is not None:
            payload[key] = round(num / 100.0, 6)  # type: ignore[literal-required]
    else:
        n = count(raw)
        if n is not None:
            payload[key] = n  # type: ignore[literal-required]


class StatsLines:
    """The engine stats methods of ``VllmParser`` (a mixin; they keep no state)."""

    def _stats(self, msg: bytes, ts: float | None) -> ParsedLine:
        payload: StatsPayload = {"phase": "engine"}
        if ts is not None:
            payload["ts"] = ts
        m = V1_STATS_RE.match(msg)
        if m is not None:
            engine, nagg, p, g, run, wait, deferred, pre, kv, hit = m.groups()
            if engine is not None:
                payload["engine"] = _ENGINE_NAMES.get(engine) or str(int(engine))
            elif nagg is not None:
                payload["engine"] = "all"
                engines = count(nagg)
                if engines is not None:
                    payload["aggregated_engines"] = engines
            payload["prompt_throughput"] = float(p)
            payload["generation_throughput"] = float(g)
            payload["running"] = int(run)
            payload["waiting"] = int(wait)
            if deferred is not None:
                payload["deferred"] = int(deferred)
            if pre is not None:
                payload["preemptions"] = int(pre)
            payload["kv_usage"] = round(float(kv) / 100.0, 6)
            payload["prefix_cache_hit_rate"] = round(float(hit) / 100.0, 6)
            if m.end() < len(msg):  # ``, Corrupted: …``, ``, MM cache hit rate: …``
                self._stats_tail(msg[m.end() :], payload)
            return STATS, ("stats", payload)
        m = V0_STATS_RE.match(msg)
        if m is not None:
            payload["prompt_throughput"] = float(m.group("p"))
            payload["generation_throughput"] = float(m.group("g"))
            payload["running"] = int(m.group("run"))
            payload["swapped"] = int(m.group("sw"))
            payload["waiting"] = int(m.group("pend"))
            payload["kv_usage"] = round(float(m.group("kv")) / 100.0, 6)
            return STATS, ("stats", payload)
        self._generic_stats(msg, payload)
        return STATS, ("stats", payload)

    @staticmethod
    def _stats_tail(tail: bytes, payload: StatsPayload) -> None:
        """The optional fields after ``Prefix cache hit rate`` (newer V1 builds)."""
        for part in tail.split(b", "):
            name, sep, value = part.partition(b": ")
            if sep:
                _extra_field(name, value.split(b" ", 1)[0].rstrip(b"%."), payload)

    @staticmethod
    def _generic_stats(msg: bytes, payload: StatsPayload) -> None:
        """Fields in any order / unknown extras (future versions): ``Key: value unit``."""
        for part in msg.split(b", "):
            name, sep, value = part.rpartition(b": ")
            if not sep:
                continue
            if name.startswith(b"Engine ") and b": " in name:
                eng, _, name = name.partition(b": ")
                engine = count(eng[7:])
                if engine is not None:
                    payload["engine"] = str(engine)
            elif name.find(b" Engines Aggregated: ") > 0:
                nagg, _, name = name.partition(b" Engines Aggregated: ")
                payload["engine"] = "all"
                engines = count(nagg)
                if engines is not None:
                    payload["aggregated_engines"] = engines
            raw = value.split(b" ", 1)[0].rstrip(b"%.")
            if name in _EXTRA_FIELDS:
                _extra_field(name, raw, payload)
                continue
            num = real(raw)
            if num is None:
                continue
            if name in _COUNT_FIELDS:
                if num.is_integer() and 0 <= num <= _COUNT_MAX:
                    payload[_COUNT_FIELDS[name]] = int(num)  # type: ignore[literal-required]
            elif name == b"Avg prompt throughput":
                payload["prompt_throughput"] = num
            elif name == b"Avg generation throughput":
                payload["generation_throughput"] = num
            elif name.endswith(b"KV cache usage") and not name.startswith(b"CPU"):
                payload["kv_usage"] = round(num / 100.0, 6)
            elif name == b"Prefix cache hit rate":
                payload["prefix_cache_hit_rate"] = round(num / 100.0, 6)

    def _spec_or_hit(self, msg: bytes, ts: float | None) -> ParsedLine | None:
        payload: StatsPayload = {}
        if ts is not None:
            payload["ts"] = ts
        hm = V0_HIT_RE.search(msg)
        if hm is not None:
            payload["phase"] = "engine"
            payload["prefix_cache_hit_rate"] = round(float(hm.group("gpu")) / 100.0, 6)
            return STATS, ("stats", payload)
        start = msg.find(b"SpecDecoding metrics: ")
        width = 22
        if start < 0:
            start = msg.find(b"Speculative metrics: ")
            width = 21
        if start < 0:
            return None
        payload["phase"] = "spec"
        for part in msg[start + width :].split(b", "):
            name, sep, value = part.partition(b": ")
            if not sep:
                continue
            raw = value.split(b" ", 1)[0]
            num = real(raw.rstrip(b"%"))
            if num is None:
                continue
            if raw.endswith(b"%"):
                num = round(num / 100.0, 6)
            if name in (b"Draft acceptance rate", b"Avg Draft acceptance rate"):
                payload["spec_accept_rate"] = num
            elif name == b"Mean acceptance length":
                payload["spec_accept_length"] = num
        return STATS, ("stats", payload)
