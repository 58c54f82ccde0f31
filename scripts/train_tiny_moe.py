#!/usr/bin/env python3
"""Train the sample model (scripts/tiny_moe.py) for a few CPU-minutes on the standard
library's docstrings, so that its completions read as words and its experts specialise.

    python scripts/train_tiny_moe.py [--out build/tiny-moe-docstrings] [--steps 600]

Offline and deterministic: the text is the docstrings of a fixed list of standard-library
modules (this Python's; another Python version has other docstrings, so another model),
tokenized with the DeepSeek tokenizer the samples use; one torch thread, fixed seeds.
Writes ``model.safetensors`` (the weights), ``train.json`` (seed, steps, losses, corpus
size and hash, the token ids the corpus uses). The model keeps the tokenizer's full id
space (ids stay real tokenizer ids); the loss is a softmax over the ids the corpus uses,
and generation suppresses the others (make_sample_logs.py does).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import inspect
import json
import math
import sys
import time
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "build" / "tiny-moe-docstrings"
SEED = 20261204
SEQ, BATCH, LR, AUX = 64, 32, 3e-3, 0.01

MODULES = [
    "argparse",
    "asyncio",
    "base64",
    "bisect",
    "calendar",
    "codecs",
    "collections",
    "configparser",
    "contextlib",
    "copy",
    "csv",
    "dataclasses",
    "datetime",
    "decimal",
    "difflib",
    "email.message",
    "enum",
    "fractions",
    "functools",
    "gettext",
    "gzip",
    "hashlib",
    "heapq",
    "html",
    "http.client",
    "http.cookies",
    "inspect",
    "io",
    "ipaddress",
    "itertools",
    "json",
    "locale",
    "logging",
    "mailbox",
    "math",
    "mimetypes",
    "operator",
    "optparse",
    "os",
    "pathlib",
    "pickle",
    "pprint",
    "queue",
    "random",
    "re",
    "sched",
    "secrets",
    "selectors",
    "shlex",
    "shutil",
    "smtplib",
    "socket",
    "sqlite3",
    "ssl",
    "statistics",
    "string",
    "struct",
    "subprocess",
    "tarfile",
    "tempfile",
    "textwrap",
    "threading",
    "time",
    "timeit",
    "tokenize",
    "traceback",
    "types",
    "typing",
    "unittest",
    "urllib.parse",
    "urllib.request",
    "uuid",
    "weakref",
    "xml.etree.ElementTree",
    "zipfile",
    "zlib",
]


def corpus() -> str:
    """Docstrings of the modules, their public members and methods, each once, in a fixed
    order (sorted names)."""
    docs: list[str] = []
    seen: set[str] = set()

    def add(obj: Any) -> None:
        try:
            doc = inspect.getdoc(obj)
        except Exception:  # some objects raise on attribute access
            return
        if doc and len(doc) > 40 and doc not in seen:
            seen.add(doc)
            docs.append(doc)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in MODULES:
            module = importlib.import_module(name)
            add(module)
            for attr in sorted(a for a in dir(module) if not a.startswith("_")):
                obj = getattr(module, attr, None)
                add(obj)
                if inspect.isclass(obj):
                    for method in sorted(a for a in vars(obj) if not a.startswith("_")):
                        add(getattr(obj, method, None))
    return "\n\n".join(docs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--steps", type=int, default=600)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import tiny_moe
    import torch
    from safetensors.torch import save_file
    from transformers.models.qwen3_moe.modeling_qwen3_moe import load_balancing_loss_func

    tiny = tiny_moe.TinyMoe()  # the random init the samples had: same seed, same config
    model = tiny.model.train()
    text = corpus()
    ids = torch.tensor(tiny.encode(text))
    used = torch.unique(ids)  # sorted
    target_of = torch.full((tiny.vocab_size,), -1, dtype=torch.long)
    target_of[used] = torch.arange(len(used))
    print(f"corpus: {len(text):,} characters, {len(ids):,} tokens, {len(used):,} distinct ids")
    torch.manual_seed(SEED)
    # Train only the embedding and output rows of the corpus' ids (copies, written back
    # at the end): the other 120k rows get no gradient anyway, and Adam over them would
    # be most of the time of a step.
    embed = torch.nn.Parameter(model.model.embed_tokens.weight.detach()[used].clone())
    head = torch.nn.Parameter(model.lm_head.weight.detach()[used].clone())
    body = [
        p
        for n, p in model.named_parameters()
        if n not in ("model.embed_tokens.weight", "lm_head.weight")
    ]
    opt = torch.optim.AdamW([*body, embed, head], lr=LR, weight_decay=0.0)
    losses: list[float] = []
    started = time.perf_counter()
    for step in range(args.steps):
        lr = LR * min(1.0, (step + 1) / 50) * 0.5 * (1 + math.cos(math.pi * step / args.steps))
        for group in opt.param_groups:
            group["lr"] = lr
        starts = torch.randint(0, len(ids) - SEQ - 1, (BATCH,))
        batch = target_of[torch.stack([ids[s : s + SEQ + 1] for s in starts])]
        out = model.model(inputs_embeds=embed[batch[:, :-1]], output_router_logits=True)
        logits = out.last_hidden_state @ head.T  # a softmax over the corpus' ids only
        loss = torch.nn.functional.cross_entropy(
            logits.reshape(-1, len(used)), batch[:, 1:].reshape(-1)
        )
        aux = load_balancing_loss_func(
            out.router_logits, tiny.config.num_experts, tiny.config.num_experts_per_tok
        )
        opt.zero_grad()
        (loss + AUX * aux).backward()
        torch.nn.utils.clip_grad_norm_([*body, embed, head], 1.0)
        opt.step()
        losses.append(round(loss.item(), 4))
        if step % 50 == 0 or step == args.steps - 1:
            print(f"step {step:4d}  loss {loss.item():.3f}  aux {aux.item():.3f}  "
                  f"{time.perf_counter() - started:6.1f} s")  # fmt: skip
    with torch.no_grad():
        model.model.embed_tokens.weight[used] = embed
        model.lm_head.weight[used] = head
    args.out.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
    save_file(state, str(args.out / "model.safetensors"))
    info = {
        "seed": SEED,
        "init_seed": tiny_moe.SEED,
        "steps": args.steps,
        "seq_len": SEQ,
        "batch": BATCH,
        "lr": LR,
        "aux_loss_coef": AUX,
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "corpus_characters": len(text),
        "corpus_tokens": len(ids),
        "corpus_sha256": hashlib.sha256(text.encode()).hexdigest(),
        "modules": MODULES,
        "loss_first": losses[0],
        "loss_last_50_mean": round(sum(losses[-50:]) / len(losses[-50:]), 4),
        "seconds": round(time.perf_counter() - started, 1),
        "used_ids": used.tolist(),
    }
    (args.out / "train.json").write_text(json.dumps(info) + "\n")
    print(f"wrote {args.out} ({info['seconds']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
