"""formats.vllm.recent.RecentIds keeps the window an OrderedDict of the last ``size`` ids
remembered would keep (the vLLM parser's window before it), in bulk and with a look back
into a run (formats/vllm/native.py)."""

from __future__ import annotations

from collections import OrderedDict

from hypothesis import given, settings
from hypothesis import strategies as st

from sparseety_tui.formats.vllm.recent import RecentIds

SIZE = 4


class Model:
    """The window as the parser kept it before: an OrderedDict dropping its oldest."""

    def __init__(self) -> None:
        self.window: OrderedDict[str, None] = OrderedDict()
        self.remembered = 0

    def remember(self, rid: str) -> bool:
        if rid in self.window:
            return False
        self.window[rid] = None
        self.remembered += 1
        if len(self.window) > SIZE:
            self.window.popitem(last=False)
        return True

    def copy(self) -> Model:
        other = Model()
        other.window, other.remembered = OrderedDict(self.window), self.remembered
        return other


def _same(recent: RecentIds, model: Model, alphabet: list[str]) -> None:
    assert list(recent) == list(model.window)
    assert recent.remembered == model.remembered
    assert [rid in recent for rid in alphabet] == [rid in model.window for rid in alphabet]


# Many more ids than a window: generations are dropped along the way.
IDS = [f"r{i}" for i in range(40)]
step = st.one_of(
    st.tuples(st.just("one"), st.sampled_from(IDS)),
    st.tuples(st.just("run"), st.lists(st.sampled_from(IDS), max_size=7), st.integers(0, 7)),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(step, max_size=40))
def test_the_window_is_the_last_ids_remembered(steps: list[tuple[object, ...]]) -> None:
    recent, model = RecentIds(SIZE), Model()
    for item in steps:
        if item[0] == "one":
            rid = item[1]
            assert isinstance(rid, str)
            assert recent.remember(rid) == model.remember(rid)
        else:
            ids, cut = item[1], item[2]
            assert isinstance(ids, list) and isinstance(cut, int)
            fresh = len(set(ids)) == len(ids) and not any(r in model.window for r in ids)
            assert recent.remember_new(ids) == fresh
            if not fresh:
                continue  # nothing changed: the per-line way takes such a run
            cut = min(cut, len(ids))
            before = model.copy()
            for rid in ids[:cut]:
                before.remember(rid)
            # A line after the first `cut` ids sees the window as it was there...
            recent.look_back(ids[cut:])
            assert [r in recent for r in IDS] == [r in before.window for r in IDS]
            recent.look_ahead()
            # ...and a run cut there keeps only those.
            recent.forget(ids[cut:])
            model = before
        _same(recent, model, IDS)


def test_remembering_an_id_while_looking_back_forgets_the_ids_after_first() -> None:
    recent = RecentIds(SIZE)
    assert recent.remember_new(["a", "b", "c"])
    recent.look_back(["b", "c"])  # at a line after "a" only
    assert "a" in recent and "b" not in recent
    assert recent.remember("x")  # the run ends at this line: "b" and "c" were never read
    assert list(recent) == ["a", "x"] and recent.remembered == 2
