"""Ids shortened for the table never read the same for two rows (ui/idlabels.py)."""

from __future__ import annotations

from sparseety_tui.ui.fmt import fit
from sparseety_tui.ui.idlabels import unique_labels

VLLM = [  # real vLLM ids (tests/data/real_logs): the same first nine characters
    "chatcmpl-017ee87d69ed40e9b67198e5c5e0ee7d",
    "chatcmpl-239693779a124ccab2ba3a7fae5c2ee4",
    "chatcmpl-67ed206b1edc4811911bcc917c0a0f72",
    "chatcmpl-b73b4b2df7fd461ca116a2d6cc7a1316",
]
SUBREQUESTS = [f"cmpl-3ce84ffb82764f45b028dd8e6c4beed1-{n}" for n in range(4)]  # n > 1
SGLANG = ["3ce84ffb82764f45b028dd8e6c4beed1", "3ce84ffb82764f45b028dd8e6c4beed2"]


def test_the_old_end_cut_made_rows_read_the_same() -> None:
    # What the column did before: the reason for this module.
    assert len({fit(i, 10, "left") for i in VLLM}) == 1  # "chatcmpl-…"
    assert len({fit(i, 20, "left") for i in SUBREQUESTS}) == 1


def test_labels_are_distinct_and_fit_at_every_width() -> None:
    for ids in (VLLM, SUBREQUESTS, SGLANG, VLLM + SUBREQUESTS + SGLANG):
        for width in range(3, 45):
            labels = unique_labels(ids, width)
            assert all(len(label) <= width for label in labels)
            assert len(set(labels)) == len(ids), (width, labels)


def test_ids_that_fit_are_whole_and_a_cut_one_shows_its_head_and_tail() -> None:
    assert unique_labels(["req-0001", "req-0002"], 12) == ["req-0001", "req-0002"]
    label = unique_labels(VLLM[:1], 12)[0]
    assert label == "chat…5e0ee7d"


def test_ids_differing_only_in_the_middle_get_a_window_there() -> None:
    a = "x" * 20 + "A" + "y" * 20
    b = "x" * 20 + "B" + "y" * 20
    labels = unique_labels([a, b], 10)
    assert labels[0] != labels[1]
    assert "A" in labels[0] and "B" in labels[1]


def test_the_same_id_twice_may_read_the_same() -> None:
    # Two rows of one id (a repeated id in a log) are the same request name: not a clash.
    labels = unique_labels([VLLM[0], VLLM[0], VLLM[1]], 12)
    assert labels[0] == labels[1] != labels[2]
