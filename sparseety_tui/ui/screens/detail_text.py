"""The text of the request detail screen's parts, from a ``RequestDetail`` (no widgets):
the legend, the selected token's panel, KV coverage and the raw lines."""

from __future__ import annotations

import json
import math
from typing import Any

from rich.text import Text

from sparseety_tui.core.detail import DETAIL_MAX_TEXT_CHARS, RequestDetail, TokenView
from sparseety_tui.ui.fmt import fmt_count, known_ts
from sparseety_tui.ui.safe_text import display_path, escape, redacting, safe_text
from sparseety_tui.ui.widgets.sparkline import bar, sparkline
from sparseety_tui.ui.widgets.token_trace import SKIP_ORDER, TraceToken

#: What each skip kind means (the legend, when wide enough).
SKIP_MEANING = {
    "cached": "prefix-cache hit",
    "evicted": "KV evicted",
    "masked": "KV not attended",
    "dropped": "expert dropped",
}


def legend(styles: dict[str, Any], width: int = 200) -> Text:
    """Phase and skip-kind styles; meanings too when the width allows (always in help)."""
    wide = width >= 112
    out = Text(end="", no_wrap=True, overflow="ellipsis")
    out.append("legend: ", styles["dim"])
    out.append("prompt", styles["prompt"])
    out.append(" ")
    out.append("completion", styles["completion"])
    out.append("  skipped: " if not wide else "  ", styles["dim"])
    for n, kind in enumerate(SKIP_ORDER):
        if n:
            out.append(" ")
        out.append(kind, styles[kind])
        if wide:
            out.append(f" ({SKIP_MEANING[kind]})", styles["dim"])
    return out


def kv_rest_text(kind: Any, rest: int) -> str:
    """What became of the positions a KV summary left out: only what the record says.
    No kind logged is said so, not guessed as "evicted"; none left out is said so."""
    if rest <= 0:
        return " (none left out)"
    if kind in ("evicted", "masked"):
        return f" ({kind} the rest: {rest:,})"
    return f" ({rest:,} left out; evicted or masked not logged)"


def pretty_line(text: str) -> str:
    """A JSON line indented for reading; other lines as they are."""
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            return json.dumps(json.loads(stripped), indent=2, ensure_ascii=False)
        except ValueError:
            pass
    return text


def kv_text(detail: RequestDetail) -> Text:
    """The KV coverage tab: kept / visible per step, or the last step's, and the policy."""
    out = Text(end="")
    out.append("KV coverage\n", "bold")
    sparse = detail.fields.get("sparse") or {}
    if detail.kv_points:
        kept = [p.get("kept") for p in detail.kv_points]
        visible = [p.get("visible") for p in detail.kv_points]
        ratios: list[float | None] = [
            k / v if isinstance(k, int) and isinstance(v, int) and v else None
            for k, v in zip(kept, visible)
        ]
        out.append("kept / visible per step ", "dim")
        out.append(sparkline(ratios, 40))
        total_v = sum(v for v in visible if isinstance(v, int))
        total_k = sum(k for k in kept if isinstance(k, int))
        skip = {p.get("skip") for p in detail.kv_points} - {None}
        out.append(
            f"\n{len(detail.kv_points):,} steps: kept {total_k:,} of {total_v:,} "
            f"position-slots; skip kind: {', '.join(map(str, skip)) or '—'}"
        )
    elif isinstance(sparse.get("kv_total"), int):
        last_kept, total = sparse.get("kv_kept"), sparse["kv_total"]
        if isinstance(last_kept, int) and total > 0:
            out.append(bar(last_kept / total, 30), "green")
            out.append(f" kept {last_kept:,} of {total:,} positions at the last step")
            out.append(kv_rest_text(sparse.get("kv_skip"), total - last_kept), "dim")
    else:
        out.append(
            "no KV selection data: `sparse.kv` per-token summaries or "
            "`kv_kept`/`kv_total` would show it here",
            "dim",
        )
    policy = sparse.get("kv_policy")
    if policy:
        out.append(f"\npolicy: {escape(str(policy))}", "dim")
    return out


def token_text(detail: RequestDetail, index: int, styles: dict[str, Any]) -> Text:
    """The token panel for token ``index`` of ``detail.tokens``: its text, skips, experts
    per layer, heads skipped, KV, and where the tokens came from."""
    views = detail.tokens
    token = views[index]
    out = Text(end="")
    out.append(f"token {index + 1:,} of {len(views):,}", "bold")
    out.append(f"  pos {token.pos}  {token.phase}\n", "dim")
    out.append("text ", "dim")
    out.append(repr_text(token.text))
    if token.token_id is not None:
        out.append(f"  id {token.token_id}", "dim")
    out.append("\n")
    if token.skips:
        out.append("skipped: ", "dim")
        for n, kind in enumerate(k for k in SKIP_ORDER if k in token.skips):
            if n:
                out.append(", ")
            out.append(kind, styles[kind])
        out.append("\n")
    _token_experts(out, detail, token)
    if token.heads_skipped:
        out.append("heads skipped\n", "bold")
        for layer, heads in sorted(token.heads_skipped.items()):
            out.append(f"L{layer:<3}", "dim")
            out.append(escape(" ".join(str(h) for h in heads)) + "\n")
    if token.kv:
        kv = token.kv
        out.append(
            escape(
                f"KV: kept {kv.get('kept', '—')} of {kv.get('visible', '—')} "
                f"({kv.get('skip', '—')})"
            )
            + "\n"
        )
    if detail.token_source:
        out.append(f"\ntokens from {detail.token_source}", "dim")
    if detail.tokens_omitted:
        out.append(
            f"\nthe trace holds the first {len(detail.tokens):,} tokens; "
            f"{detail.tokens_omitted:,} more are not shown (counts and heatmaps "
            "include them)",
            "dim",
        )
    return out


def _token_experts(out: Text, detail: RequestDetail, token: TokenView) -> None:
    """The token's experts (and weights) per MoE layer, or why there are none."""
    if token.experts:
        layers = detail.moe_layers
        out.append("experts (weight) per layer\n", "bold")
        for j, chosen in enumerate(token.experts):
            layer = layers[j] if j < len(layers) else j
            layer_w: Any = token.weights[j] if token.weights and j < len(token.weights) else None
            parts = []
            for i, expert in enumerate(chosen if isinstance(chosen, list) else []):
                w = layer_w[i] if isinstance(layer_w, list) and i < len(layer_w) else None
                parts.append(f"e{expert}" + (f" {w:.2f}" if isinstance(w, float) else ""))
            out.append(f"L{layer:<3}", "dim")
            out.append(("  ".join(parts) or "—") + "\n")
    elif detail.expert_counts and redacting():
        out.append("per-token routing not shown: --redact (--keep-routing shows it)\n", "dim")
    elif detail.expert_counts:
        why = (
            "prefill skipped: served from the prefix cache"
            if "cached" in token.skips
            else "e.g. the last sampled token is never fed back"
        )
        out.append(f"no routing recorded for this token ({why})\n", "dim")


def repr_text(text: str) -> Text:
    """A token's text quoted, with every invisible character made visible."""
    shown = escape(text).replace(" ", "·")
    return safe_text("").append(f"“{shown}”")


def trace_tokens(detail: RequestDetail) -> list[TraceToken]:
    """Trace tokens from the detail; the text (bounded) when there are no tokens."""
    if detail.tokens:
        return [TraceToken(t.text, t.phase, frozenset(t.skips)) for t in detail.tokens]
    out = []
    for phase in ("prompt", "completion"):
        text = detail.fields.get(phase)
        if isinstance(text, str) and text:
            if len(text) > DETAIL_MAX_TEXT_CHARS:
                elided = len(text) - DETAIL_MAX_TEXT_CHARS
                text = f"{text[:DETAIL_MAX_TEXT_CHARS]} [… {elided:,} characters not shown]"
            out.append(TraceToken(text, phase))
    return out


def _elided_marker(elided: int) -> str:
    return f"[… {elided:,} bytes elided …]"


def raw_lines_text(detail: RequestDetail) -> Text:
    """The Raw lines tab: each source line under its place, log text literal; a long line
    as its head and tail around an "N bytes elided" marker (bounded in core.detail)."""
    out = Text(end="")
    for n, line in enumerate(detail.raw_lines):
        if n:
            out.append("\n\n")
        out.append(f"{escape(display_path(line.path))} @ byte {line.offset:,}\n", "bold")
        if line.whole:
            for i, part in enumerate(pretty_line(line.head).split("\n")):
                if i:
                    out.append("\n")
                out.append(escape(part))
        else:
            out.append(escape(line.head))
            out.append(f" {_elided_marker(line.elided)} ", "reverse")
            out.append(escape(line.tail))
    if detail.raw_omitted:
        out.append(f"\n\n{detail.raw_omitted:,} more source lines not shown", "dim")
    if not detail.raw_lines:
        out.append("no source lines could be re-read", "dim")
    return out


def raw_lines_plain(detail: RequestDetail) -> str:
    """The raw lines as plain text for the clipboard (bounded like the tab)."""
    parts = []
    for line in detail.raw_lines:
        body = (
            pretty_line(line.head)
            if line.whole
            else f"{line.head} {_elided_marker(line.elided)} {line.tail}"
        )
        parts.append(f"# {line.path} @ byte {line.offset}\n{body}")
    return "\n\n".join(parts)


def number(value: Any) -> float:
    """A known timestamp as a float, anything else as NaN (unknown)."""
    return float(value) if known_ts(value) else math.nan


def sampling_text(columns: Any, row: int) -> str:
    """``max_tokens 100  temperature 0.7  top_p 0.95  n 1``: the sampling parameters the
    log gave (those it did not give are left out; "" when none)."""
    parts = []
    for name, column, is_count in (
        ("max_tokens", "max_tokens", True),
        ("temperature", "temperature", False),
        ("top_p", "top_p", False),
        ("n", "sampling_n", True),
    ):
        value = columns[column][row]
        if is_count and value >= 0:
            parts.append(f"{name} {fmt_count(value)}")
        elif not is_count and not math.isnan(value):
            parts.append(f"{name} {round(value, 6):g}")
    return "  ".join(parts)
