"""The trace of issue #14 with its planted secrets, shared by the CLI (unit) and the
``serve`` (integration) halves of the ``--redact`` tests."""

from __future__ import annotations

from pathlib import Path

import orjson

EMAIL = "ann.lee@example.com"
PLANTED = {
    "email": EMAIL,
    "us_phone": "+1 (415) 555-0132",
    "cn_phone": "13800138000",
    "ipv4": "10.20.30.40",
    "sk_key": "sk-proj-Abcdefghijklmnop123456",
    "card": "4111 1111 1111 1111",
}


def planted_trace(tmp_path: Path) -> Path:
    """Issue #14's trace: an email twice in two requests, a US and a Chinese phone number,
    an IPv4 address, an sk- key and a card number, in prompts and a completion."""
    records = [
        {
            "request_id": "r-1",
            "user": "alice-77",
            "prompt": f"I am {EMAIL}, call +1 (415) 555-0132 or 13800138000.",
            "completion": "Noted.",
            "prompt_tokens": 20,
            "completion_tokens": 2,
            "latency_s": 0.5,
        },
        {
            "request_id": "r-2",
            "prompt": f"Again {EMAIL} from 10.20.30.40 with key sk-proj-Abcdefghijklmnop123456",
            "completion": "Card 4111 1111 1111 1111 charged.",
            "prompt_tokens": 30,
            "completion_tokens": 6,
            "latency_s": 0.7,
        },
    ]
    path = tmp_path / "planted.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return path


def no_planted(text: str) -> None:
    for name, value in PLANTED.items():
        assert value not in text, name
    assert "alice-77" not in text
