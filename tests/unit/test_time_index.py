"""The partition's time index against a sorted list of (timestamp, id) over random adds and
removes, with chunks small enough to split and empty out many times."""

from __future__ import annotations

import bisect

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared_core import _time_index
from shared_core._time_index import TimeIndex

ENTRY = st.tuples(st.sampled_from([0.0, 1.0, 1.5, 2.0, 7.0]), st.sampled_from([f"n{i}" for i in range(12)]))
OPS = st.lists(st.tuples(st.booleans(), ENTRY), max_size=120)
Ops = list[tuple[bool, tuple[float, str]]]


@settings(max_examples=300, deadline=None)
@given(ops=OPS, window=st.tuples(st.sampled_from([-1.0, 0.0, 1.0, 1.2, 2.0]), st.sampled_from([0.0, 1.5, 2.0, 9.0])))
def test_time_index_matches_a_sorted_list(ops: Ops, window: tuple[float, float]) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_time_index, "CHUNK", 4)
        _check(ops, window)


def _check(ops: Ops, window: tuple[float, float]) -> None:
    index, ref = TimeIndex(), list[tuple[float, str]]()
    for add, (ts, node_id) in ops:
        if add:
            index.add(ts, node_id)
            bisect.insort(ref, (ts, node_id))
        else:
            present = (ts, node_id) in ref
            assert index.remove(ts, node_id) is present
            if present:
                ref.remove((ts, node_id))
        assert len(index) == len(ref)
        assert index.between(-9.0, 99.0) == [i for _, i in ref]
    start, end = window
    assert index.between(start, end) == [i for ts, i in ref if start <= ts < end]
    assert all(len(ids) <= 4 for ids in index._ids) and all(index._ids[1:])  # split, and no empty chunk left
    other = TimeIndex()
    for ts, node_id in reversed(ref):
        other.add(ts, node_id)
    assert other == index


def test_an_emptied_first_chunk_takes_entries_again() -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_time_index, "CHUNK", 2)
        index = TimeIndex()
        for node_id in "abc":
            index.add(1.0, node_id)
        assert index.remove(1.0, "a")
        index.add(0.5, "z")
        index.add(1.0, "a")
        assert index.between(0.0, 2.0) == ["z", "a", "b", "c"]
