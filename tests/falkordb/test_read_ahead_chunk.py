"""A call that asks for a node of its read-ahead list that it lacks reads it with the next
`graph.MISS_CHUNK` of the list in one request (the ranking of a chat's namespace runs far past
what the walk's hops read), and reads nothing it already holds."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from shared_core import ElasticMemoryAtlas
from shared_core.store.falkordb import FalkorPartition
from shared_core.store.falkordb.graph import MISS_CHUNK

from ._probes import round_trips


def test_a_miss_reads_the_next_chunk_of_the_read_ahead_list(shared_atlas: Callable[..., ElasticMemoryAtlas],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    atlas = shared_atlas()
    written = atlas.add_memories([f"note {i} about topic {i % 7}" for i in range(MISS_CHUNK + 20)], namespace="c")
    ids = [n.id for n in written]
    part = atlas.backend.partition("c")
    assert isinstance(part, FalkorPartition)
    graph = part.graph
    graph.cache.nodes.clear()
    graph.get_node(ids[5])  # held before the list is made: never read again
    graph.read_ahead(ids)
    with round_trips(monkeypatch) as seen:
        got = [graph.get_node(i) for i in ids[:MISS_CHUNK + 1]]  # node 5 held: one chunk
        assert len(seen) == 1, seen
        got.append(graph.get_node(ids[MISS_CHUNK + 1]))  # one past it: the next chunk
    assert [n.id for n in got if n is not None] == ids[:MISS_CHUNK + 2]
    assert len(seen) == 2, seen
    assert MISS_CHUNK > 32
