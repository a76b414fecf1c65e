"""`IntLists.append_each` with numpy (`BULK` values or more) against `append` one by one: the
same lists, the same blocks, the same free blocks, from random histories of appends and removals."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared_core.store.memory import _int_lists
from shared_core.store.memory._int_lists import IntLists

SLOTS = 12
HISTORY = st.lists(st.tuples(st.booleans(), st.integers(0, SLOTS - 1), st.integers(0, 9)), max_size=80)
BATCH = st.lists(st.tuples(st.integers(0, SLOTS - 1), st.integers(-5, 10**6)), max_size=60)


def _state(lists: IntLists) -> tuple[object, ...]:
    return (bytes(lists.data), bytes(lists.starts), bytes(lists.lengths), bytes(lists.classes),
            [bytes(f) for f in lists._free])


def _made(history: list[tuple[bool, int, int]]) -> IntLists:
    lists = IntLists()
    lists.add_slots(SLOTS)
    for add, slot, value in history:
        if add:
            lists.append(slot, value)
        elif lists.length(slot):
            lists.remove(slot, lists.get(slot)[value % lists.length(slot)])
    return lists


@settings(max_examples=400, deadline=None)
@given(history=HISTORY, batches=st.lists(BATCH, min_size=1, max_size=4), bulk=st.sampled_from([0, 1, 5, 64]),
       arrays=st.booleans())
def test_append_each_is_append_one_by_one(history: list[tuple[bool, int, int]],
                                          batches: list[list[tuple[int, int]]], bulk: int, arrays: bool) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_int_lists, "BULK", bulk)  # numpy from this many values (the default is larger)
        each = _made(history)
        one = copy.deepcopy(each)
        assert _state(each) == _state(one)
        for batch in batches:
            slots, values = [s for s, _ in batch], [v for _, v in batch]
            if arrays:
                each.append_each(np.array(slots, dtype=np.int64), np.array(values, dtype=np.int64))
            else:
                each.append_each(slots, values)
            for slot, value in batch:
                one.append(slot, value)
            assert _state(each) == _state(one)
        assert [each.get(s).tolist() for s in range(SLOTS)] == [one.get(s).tolist() for s in range(SLOTS)]


def test_append_each_long_runs_and_bad_input() -> None:
    each, one = IntLists(), IntLists()
    for lists in (each, one):
        lists.add_slots(3)
    slots = [0] * 40 + [1, 2] * 30  # a list changing blocks many times in one call
    each.append_each(slots, list(range(len(slots))))
    for slot, value in zip(slots, range(len(slots)), strict=True):
        one.append(slot, value)
    assert _state(each) == _state(one)
    with pytest.raises(ValueError, match="slots for"):
        each.append_each([0] * 70, [1])
    with pytest.raises(OverflowError):
        each.append_each([0] * 70, [1 << 40] * 70)
    with pytest.raises(IndexError):
        each.append_each([5] * 70, [1] * 70)
