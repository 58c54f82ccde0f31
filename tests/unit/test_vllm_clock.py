"""formats.vllm._clock: a stamp of the minute read last is its time plus its seconds; that
shortcut gives exactly what reading the stamp anew gives, whatever came between (other
minutes, months that roll the year over, a split reader's replayed year state)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sparseety_tui.formats.vllm import VllmParser

REFERENCE = 1_796_040_000.0  # 2026-11-30: the file's mtime, the year's anchor

stamps = st.builds(
    lambda month, day, hour, minute, sec: f"{month:02}-{day:02} {hour:02}:{minute:02}:{sec:02}",
    # Few minutes, so that one comes again after the year state moved (Dec -> Jan).
    st.sampled_from([1, 7, 12]),
    st.sampled_from([1, 31]),
    st.just(23),
    st.sampled_from([0, 59]),
    st.integers(0, 59),
)
#: A split reader's replay of a range's first year-setting line on a year state: a stamp
#: (read as any), or a wrapper's dated stamp, which sets the year without a vLLM stamp.
probes = st.sampled_from([("stamp", b"01-01 00:00:00", None), ("wrap", b"[2030-01-05 10:00:00]")])
states = st.sampled_from([(2025, 12), (2026, 1), (None, 0)])
steps = st.one_of(
    st.tuples(st.just("stamp"), stamps),
    st.tuples(st.just("replay"), st.tuples(probes, states)),
)


@settings(max_examples=500, deadline=None)
@given(st.lists(steps, max_size=30))
def test_a_stamp_of_the_last_minute_reads_as_anew(items: list[tuple[str, object]]) -> None:
    cached = VllmParser(reference_time=REFERENCE)
    fresh = VllmParser(reference_time=REFERENCE)
    for kind, value in items:
        if kind == "replay":
            assert isinstance(value, tuple)
            probe, state = value
            assert cached.replay_year_probe(probe, state) == fresh.replay_year_probe(probe, state)
            continue
        assert isinstance(value, str)
        fresh._minute = (b"", None, 0)  # (no shortcut: every stamp read from its text)
        got, want = cached._stamp_text(value.encode()), fresh._stamp_text(value.encode())
        assert got == want or (got != got and want != want)  # (NaN: equal too)
        assert cached.year_state() == fresh.year_state()
