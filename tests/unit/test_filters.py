"""Retrieval filters: metadata equality and membership, comparisons, session, kind, pin and time."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from shared_core import InvalidInputError
from shared_core.formulas.filters import compile_filters
from shared_core.values.model import MemoryNode

MAY = datetime(2023, 5, 8, tzinfo=UTC)


def node(**kw: Any) -> MemoryNode:
    base: dict[str, Any] = {"id": "1", "content": "x", "namespace": "u", "session_id": "s1",
                            "timestamp": MAY.timestamp(), "metadata": {}}
    base.update(kw)
    return MemoryNode(**base)


@pytest.mark.parametrize(("filters", "metadata", "expected"), [
    ({"type": "preference"}, {"type": "preference"}, True),
    ({"type": "preference"}, {"type": "fact"}, False),
    ({"type": "preference"}, {}, False),  # a missing key never matches
    ({"tags": ["a", "b"]}, {"tags": "b"}, True),
    ({"tags": {"$in": ["a", "b"]}}, {"tags": ["z", "a"]}, True),  # list-valued field: any item
    ({"tags": {"$nin": ["a"]}}, {"tags": ["z"]}, True),
    ({"tags": {"$nin": ["a"]}}, {"tags": ["a"]}, False),
    ({"n": {"$gte": 3, "$lt": 9}}, {"n": 3}, True),
    ({"n": {"$gte": 3, "$lt": 9}}, {"n": 9}, False),
    ({"n": {"$gt": 3}}, {"n": "text"}, False),  # incomparable values do not match (and do not raise)
    ({"n": {"$ne": 3}}, {"n": 4}, True),
    ({"type": "fact", "n": 1}, {"type": "fact", "n": 2}, False),  # every key must match
])
def test_metadata_filters(filters: dict[str, Any], metadata: dict[str, Any], expected: bool) -> None:
    keep = compile_filters(filters)
    assert keep is not None and keep(node(metadata=metadata)) is expected


def test_reserved_filters() -> None:
    assert compile_filters({"$session": "s1"})(node())  # type: ignore[misc]
    assert not compile_filters({"$session": ["s2", "s3"]})(node())  # type: ignore[misc]
    assert compile_filters({"$kind": "summary"})(node(kind="summary"))  # type: ignore[misc]
    assert compile_filters({"$pinned": True})(node(pinned=True))  # type: ignore[misc]
    window = compile_filters({"$time": {"gte": "2023-05-01", "lt": datetime(2023, 6, 1, tzinfo=UTC)}})
    assert window is not None and window(node()) and not window(node(timestamp=MAY.timestamp() + 40 * 86_400))


def test_no_filters_means_no_predicate() -> None:
    assert compile_filters(None) is None and compile_filters({}) is None


@pytest.mark.parametrize("bad", [
    ["type"], {"": 1}, {"$colour": "red"}, {"n": {"$near": 3}}, {"n": {}}, {"$pinned": "yes"},
    {"$time": {"after": 3}}, {"$time": {"gte": "not a date"}}, {"tags": {"$in": "abc"}},
    {"tags": {"$in": [["unhashable"]]}},
])
def test_bad_filters_raise_a_clear_error(bad: Any) -> None:
    with pytest.raises(InvalidInputError):
        compile_filters(bad)


def test_filter_by_memory_type_through_the_atlas(atlas) -> None:  # type: ignore[no-untyped-def]
    atlas.add_memory("Likes jazz", namespace="u", metadata={"type": "preference"})
    atlas.add_memory("Jazz concert on Friday", namespace="u", metadata={"type": "event"})
    hits = atlas.retrieve("jazz", namespace="u", filters={"type": "preference"}, reinforce=False)
    assert [h.node.content for h in hits] == ["Likes jazz"]
