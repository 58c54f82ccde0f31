"""The filter's words: each operator glued to its neighbours, as the regex
``\\s*(op)\\s*`` -> ``op`` did, but split at the operators, so a run of spaces costs time
linear in its length (a pasted query of spaces held serve's event loop and froze the
TUI's filter prompt)."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from sparseety_tui.core.query._query import _split_words, parse_filter

#: The regex the words were made with before: quadratic in a run of spaces.
_OLD = re.compile(r"\s*(>=|<=|!=|=|>|<|~)\s*")


def old_words(text: str) -> list[str]:
    return [w for w in _OLD.sub(r"\1", text.strip()).split() if w]


ALPHABET = st.sampled_from(
    [
        " ",
        "  ",
        "\t",
        "\u3000",
        "\n",
        ">",
        "<",
        "=",
        "!",
        "~",
        ">=",
        "a",
        "latency",
        "2",
        "s",
        "why",
        "queue",
    ]
)


@settings(max_examples=500)
@given(st.lists(ALPHABET, max_size=14).map("".join))
def test_the_words_are_those_the_regex_made(text: str) -> None:
    assert _split_words(text) == old_words(text)


def test_examples() -> None:
    assert _split_words("latency > 2  why = queue") == ["latency>2", "why=queue"]
    assert _split_words("  !state != finished ") == ["!state!=finished"]
    assert _split_words("a >= b c") == ["a>=b", "c"]


def test_a_long_run_of_spaces_is_one_pass() -> None:
    """By work, not by time: the split looks at each character a bounded number of times,
    a long run of spaces on both sides of an operator is read once (the old regex went
    back over the run at each of its spaces)."""
    text = "latency" + " " * 200_000 + ">" + " " * 200_000 + "2"
    assert _split_words(text) == ["latency>2"]
    assert len(parse_filter(text)) == 1
