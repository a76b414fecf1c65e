"""`Directory` (the atlas's id -> namespace) against a dict, through one namespace and many."""

from __future__ import annotations

import random

import pytest

from shared_core import ElasticMemoryAtlas, HashingEmbedder, MemoryNode
from shared_core.store.memory._directory import Directory
from shared_core.store.memory.backend import InProcessBackend


@pytest.mark.parametrize("seed", range(12))
def test_directory_answers_like_a_dict(seed: int) -> None:
    rng = random.Random(seed)
    backend = InProcessBackend(dim=4)
    where = Directory(lambda: backend)
    model: dict[str, str] = {}
    spaces = ["a"] * 6 + ["b", "c"] if seed % 3 else ["a"]  # some runs never leave one namespace
    for step in range(400):
        if rng.random() < 0.7 or not model:
            ns, node_id = rng.choice(spaces), f"m{step}"
            part = backend.partition(ns, create=True)
            assert part is not None
            part.graph.put_node(MemoryNode(id=node_id, content="x", namespace=ns))
            where[node_id] = ns  # registered after the graph holds it, as the atlas does
            model[node_id] = ns
        else:  # removed from the graph, then unregistered, as Lifecycle.remove does
            node_id = rng.choice(list(model))
            part = backend.partition(model[node_id])
            assert part is not None
            part.graph.remove_node(node_id)
            where.pop(node_id, None)  # (with one namespace, the graph's removal was the unregistering)
            del model[node_id]
        probe = f"m{rng.randrange(step + 1)}"
        assert where.get(probe) == model.get(probe) and (probe in where) == (probe in model)
        assert len(where) == len(model)
    assert dict(where) == model and where.get("nope") is None and "nope" not in where
    with pytest.raises(KeyError):
        where["nope"]


def test_the_atlas_finds_memories_of_one_and_of_several_namespaces() -> None:
    atlas = ElasticMemoryAtlas(embedder=HashingEmbedder(dim=32))
    first = atlas.add_memories(["alpha fact", "beta fact"], namespace="u")
    assert isinstance(atlas._where, Directory) and atlas._where._map is None and len(atlas) == 2
    assert atlas.get(first[0].id).content == "alpha fact"
    other = atlas.add_memory("gamma fact", namespace="v")
    assert atlas._where._map is not None and len(atlas) == 3
    assert atlas.get(other.id, namespace="v").content == "gamma fact" and atlas.get(first[1].id).content == "beta fact"
