"""The entity layer on every backend: the `EntityIndex` seam, mentions written with memories and
removed with them, namespace isolation, recall's entity path and walk, and a write that fails
leaving no entity behind."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from shared_core import ElasticMemoryAtlas, MemoryNode, Partition
from shared_core.store.contract import EntityIndex

from .conftest import PART_DIM

DIM = PART_DIM  # the `part` fixture's (conftest)
Make = Callable[..., ElasticMemoryAtlas]


def _store(part: Partition, node_id: str) -> None:
    import numpy as np

    node = MemoryNode(id=node_id, content=f"text of {node_id}", namespace="ns", timestamp=1.0, created_at=1.0,
                      last_accessed_at=1.0)
    part.graph.put_node(node)
    part.vectors.add([node_id], np.eye(DIM, dtype=np.float32)[[sum(map(ord, node_id)) % DIM]])


def test_entity_index_links_and_unlinks(part: Partition) -> None:
    assert isinstance(part.entities, EntityIndex) and len(part.entities) == 0
    for node_id in ("m1", "m2", "m3"):
        _store(part, node_id)
    part.entities.add_many([("m1", ["caroline", "lake tahoe"]), ("m2", ["caroline"]), ("m3", [])])
    assert len(part.entities) == 2
    assert sorted(part.entities.entities()) == [("caroline", 2), ("lake tahoe", 1)]
    assert {k: sorted(v) for k, v in part.entities.entities_of(["m1", "m2", "m3", "zz"]).items()} == \
        {"m1": ["caroline", "lake tahoe"], "m2": ["caroline"]}
    found = part.entities.mentions(["caroline", "nobody"], limit=10)
    assert list(found) == ["caroline"] and found["caroline"][0] == 2 and sorted(found["caroline"][1]) == ["m1", "m2"]
    count, some = part.entities.mentions(["caroline"], limit=1)["caroline"]
    assert count == 2 and len(some) == 1 and some[0] in ("m1", "m2")
    part.entities.remove("m1")  # "lake tahoe" has no memory left: it goes
    assert sorted(part.entities.entities()) == [("caroline", 1)] and part.entities.entities_of(["m1"]) == {}
    part.entities.remove("m1")  # twice is fine
    part.entities.remove("m2")
    assert len(part.entities) == 0 and part.entities.entities() == []


def _keys(atlas: ElasticMemoryAtlas, namespace: str) -> dict[str, int]:
    part = atlas.backend.partition(namespace)
    return {} if part is None else dict(part.entities.entities())


ON = {"entity_extraction": "keyphrases"}


def test_memories_mention_their_entities_until_forgotten(make_atlas: Make) -> None:
    atlas = make_atlas(**ON)
    first, second = atlas.add_memories(["Caroline: I went to a support group near Lake Tahoe.",
                                        "Melanie: we camped at Lake Tahoe with the kids."], namespace="a")
    atlas.add_memory("Melanie: Lake Tahoe again, with Caroline.", namespace="b")
    keys = _keys(atlas, "a")
    assert keys["lake tahoe"] == 2 and keys["caroline"] == 1 and keys["melanie"] == 1
    assert _keys(atlas, "b")["lake tahoe"] == 1  # each namespace its own entities
    atlas.forget(first.id)
    keys = _keys(atlas, "a")
    assert "caroline" not in keys and keys["lake tahoe"] == 1 and keys["melanie"] == 1
    atlas.forget(second.id)
    assert _keys(atlas, "a") == {}
    assert _keys(atlas, "b")["caroline"] == 1


def test_extraction_is_off_by_default(make_atlas: Make) -> None:
    atlas = make_atlas()
    atlas.add_memory("Caroline went to Lake Tahoe.", namespace="a")
    assert _keys(atlas, "a") == {}


def test_a_failed_write_leaves_no_entity(make_atlas: Make, monkeypatch: pytest.MonkeyPatch) -> None:
    atlas = make_atlas(**ON)
    atlas.add_memory("Melanie paints at Lake Tahoe.", namespace="a")
    before = _keys(atlas, "a")
    part = atlas.backend.partition("a")
    assert part is not None
    kind = type(part.entities)
    real = kind.add_many

    def failing(self: Any, rows: Any) -> None:
        real(self, rows)  # the mentions are written, then the store fails
        raise RuntimeError("store down")

    monkeypatch.setattr(kind, "add_many", failing)
    with pytest.raises(RuntimeError):
        atlas.add_memories(["Caroline met John in Boston.", "John moved to Boston."], namespace="a")
    monkeypatch.undo()
    assert _keys(atlas, "a") == before and atlas.count(namespace="a") == 1


def test_a_query_naming_an_entity_finds_its_memories(make_atlas: Make) -> None:
    atlas = make_atlas(**ON, entity_weight=1.0, similar_top=0, link_temporal=False, keyword_weight=0.0,
                       relevance_floor=None)
    target = atlas.add_memory("Yesterday Jolene adopted two cats.", namespace="a")
    atlas.add_memories([f"a note about weather number {i}" for i in range(30)], namespace="a")
    hits = atlas.retrieve("What did Jolene do?", namespace="a", top_k=3)
    assert hits[0].node.id == target.id and "entity" in hits[0].paths


def test_the_walk_goes_through_shared_entities(make_atlas: Make) -> None:
    common = {**ON, "similar_top": 0, "link_temporal": False, "relevance_floor": None, "graph_seeds": 1}
    memories = [{"content": "At dawn Jolene fed the cats.", "session_id": "s1"},
                {"content": "Later on Jolene drove north to Portland.", "session_id": "s2"}]
    with_walk = make_atlas(entity_walk=1.0, **common)
    seed, other = with_walk.add_memories(memories, namespace="a")
    hits = with_walk.retrieve("at dawn fed the cats", namespace="a", top_k=2)
    assert [h.node.id for h in hits] == [seed.id, other.id] and "graph" in hits[1].paths
    without = make_atlas(entity_walk=0.0, **common)
    without.add_memories(memories, namespace="a")
    assert all("graph" not in h.paths for h in without.retrieve("at dawn fed the cats", namespace="a", top_k=2))
