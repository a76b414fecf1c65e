"""`shared_core.store.memory._ints`: the stores' id -> number dicts share one int object per number."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from shared_core import AtlasConfig, ElasticMemoryAtlas, HashingEmbedder
from shared_core.store.memory import _ints


def test_the_table_numbers_itself_correctly_when_threads_grow_it_at_once() -> None:
    top = len(_ints._table) + 50_000
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda k: _ints.numbers(top - 1000 * k, top + 1000 * k), range(8)))
    assert _ints._table[:top + 7000] == list(range(top + 7000))
    assert _ints.number(top) is _ints.numbers(top, top + 1)[0]


def test_the_stores_of_a_namespace_share_their_number_objects() -> None:
    atlas = ElasticMemoryAtlas(config=AtlasConfig(ann_threshold=64), embedder=HashingEmbedder(dim=16))
    vectors = np.random.default_rng(0).normal(size=(300, 16)).astype(np.float32)
    atlas.add_memories([{"content": f"fact {i}", "embedding": v} for i, v in enumerate(vectors)], namespace="u")
    part = atlas.backend.partition("u")
    assert part is not None and part.vectors.approximate  # type: ignore[attr-defined]
    graph, keywords, ivf = part.graph, part.keywords, part.vectors._impl  # type: ignore[attr-defined]
    shared = 0
    for node in graph.nodes():
        numbers = {graph._slot[node.id], keywords._row[node.id], ivf._labels[node.id], node.turn}  # type: ignore[attr-defined]
        objects = {id(n) for n in numbers}
        assert len(objects) == len(numbers)  # equal numbers are one object
        shared += len(numbers) < 4
    assert shared >= 250  # written in order, most memories have the same slot, row and label
