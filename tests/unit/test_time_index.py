"""The partition's time index against a sorted list of (timestamp, id) over random adds and
removes, with chunks small enough to split and empty out many times."""

from __future__ import annotations

import bisect

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared_core.store.memory import _time_index
from shared_core.store.memory._time_index import TimeIndex

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


BATCH = st.one_of(
    st.tuples(st.sampled_from([0.0, -0.0, 1.0, 1.5, 2.0, 7.0]),  # one timestamp: the merged path
              st.lists(st.sampled_from([f"n{i}" for i in range(40)]), max_size=30)).map(
        lambda b: [(b[0], node_id) for node_id in b[1]]),
    st.lists(ENTRY, max_size=12))  # mixed timestamps: entry by entry


@settings(max_examples=300, deadline=None)
@given(batches=st.lists(st.tuples(st.booleans(), BATCH), max_size=12), chunk=st.sampled_from([2, 3, 4, 8]))
def test_add_many_leaves_what_adds_one_by_one_leave(batches: list[tuple[bool, list[tuple[float, str]]]],
                                                    chunk: int) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_time_index, "CHUNK", chunk)
        bulk, single = TimeIndex(), TimeIndex()
        twins = False  # an id held twice at once: a removal may then take either entry (0.0 or -0.0)
        for remove_some, batch in batches:
            bulk.add_many([ts for ts, _ in batch], [node_id for _, node_id in batch])
            for ts, node_id in batch:
                single.add(ts, node_id)
            assert bulk._flat() == single._flat()
            twins = twins or len(set(single._flat()[1])) < len(single)
            if not twins:  # no id twice so far: the very same floats (-0.0 too)
                assert [str(ts) for ts in bulk._flat()[0]] == [str(ts) for ts in single._flat()[0]]
            assert len(bulk) == len(single)
            assert all(len(ids) <= chunk for ids in bulk._ids) and all(bulk._ids[1:])
            assert bulk._firsts == [(s[0], i[0]) for s, i in zip(bulk._stamps[1:], bulk._ids[1:], strict=True)]
            for stamps, ids in zip(bulk._stamps, bulk._ids, strict=True):
                assert list(zip(stamps, ids, strict=True)) == sorted(zip(stamps, ids, strict=True))
            if remove_some:  # removals between batches, from both
                for ts, node_id in batch[::2]:
                    assert bulk.remove(ts, node_id) is single.remove(ts, node_id)
        assert bulk == single
        assert bulk.between(-1.0, 99.0) == single.between(-1.0, 99.0)


def test_add_many_checks_lengths() -> None:
    with pytest.raises(ValueError, match="2 timestamps for 1 ids"):
        TimeIndex().add_many([1.0, 1.0], ["a"])
