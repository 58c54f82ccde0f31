"""formats.vllm._recent.RecentIds keeps the window an OrderedDict of the last ``size`` ids
remembered would keep (the vLLM parser's window before it), in bulk and with a look back
into a run (formats/vllm/_native.py)."""

from __future__ import annotations

from collections import OrderedDict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from native_marks import needs_native

from sparseety_tui.formats.vllm import RecentIds
from sparseety_tui.formats.vllm import _recent as recent_module

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


@pytest.mark.parametrize("native", [True, False], ids=["C", "dicts"])
@settings(max_examples=400, deadline=None)
@given(steps=st.lists(step, max_size=40))
def test_the_window_is_the_last_ids_remembered(
    native: bool, steps: list[tuple[object, ...]]
) -> None:
    recent, model = RecentIds(SIZE, native=native), Model()
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


@needs_native
def test_the_window_keeps_its_ids_in_c_when_built() -> None:
    assert recent_module.Generations is not None  # (.ci/run builds it: gcc is installed)
    assert type(RecentIds(SIZE)._serials) is recent_module.Generations


# Enough ids for the C tables to grow, collide and shift entries back on a discard.
MANY = [f"id-{i:04x}" for i in range(600)]
operation = st.one_of(
    st.tuples(st.just("add"), st.sampled_from(MANY), st.integers(1, 10_000)),
    st.tuples(
        st.just("add_run"),
        st.lists(st.sampled_from(MANY), max_size=80),
        st.integers(1, 10_000),
        st.integers(-50, 10_000),
    ),
    st.tuples(st.just("discard"), st.lists(st.sampled_from(MANY), max_size=80)),
    st.tuples(st.just("next_generation"), st.integers(0, 200)),
)


@needs_native
@settings(max_examples=200, deadline=None)
@given(st.lists(operation, max_size=60))
def test_the_c_generations_keep_what_the_dicts_keep(ops: list[tuple[object, ...]]) -> None:
    assert recent_module.Generations is not None
    native, dicts = recent_module.Generations(), recent_module._Dicts()
    for name, *args in ops:
        assert getattr(native, name)(*args) == getattr(dicts, name)(*args)
        assert [native.serial_of(rid) for rid in MANY] == [dicts.serial_of(rid) for rid in MANY]
    assert native.latest() == dicts.latest()
    with pytest.raises(TypeError):
        native.serial_of(1)  # type: ignore[arg-type]
