"""A recall's reinforcement sends its hits' vectors back only to the call that reads them next
(`Partition.reinforce_many`'s ``vectors``): a `retrieve`'s does, a `build_context`'s does not,
and the nodes written and returned are the same either way."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from shared_core import ElasticMemoryAtlas, ManualClock
from shared_core.store.falkordb import FalkorPartition
from shared_core.store.falkordb.client import GraphKey

TEXTS = ("Ann: we took the train to Lyon on Friday", "Bob: ok", "Ann: the coffee there was great",
         "Bob: I booked the dentist for Monday", "Ann: oat milk in my coffee please", "Bob: lol",
         "Ann: Lyon has the best coffee", "Bob: trains are late again")


def _writes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every write statement sent from now on."""
    seen: list[str] = []
    write = GraphKey.write

    def recorded(self: GraphKey, query: str, params: Any = None) -> Any:
        seen.append(query)
        return write(self, query, params)

    monkeypatch.setattr(GraphKey, "write", recorded)
    return seen


def _filled(atlas: ElasticMemoryAtlas, clock: ManualClock) -> None:
    for text in TEXTS:
        clock.advance(60.0)
        atlas.add_memory(text, namespace="v", session_id="s")


def test_build_context_reinforces_without_reading_vectors(shared_atlas: Callable[..., ElasticMemoryAtlas],
                                                          clock: ManualClock,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    atlas = shared_atlas()
    _filled(atlas, clock)
    writes = _writes(monkeypatch)
    ctx = atlas.build_context("coffee in Lyon", namespace="v", token_budget=200)
    reinforcements = [w for w in writes if w.startswith("UNWIND $ids AS id")]
    assert ctx.memories and len(reinforcements) == 1
    assert "e.raw" not in reinforcements[0] and "Embedding" not in reinforcements[0]
    writes.clear()
    hits = atlas.retrieve("coffee in Lyon", namespace="v", top_k=3)
    reinforcements = [w for w in writes if w.startswith("UNWIND $ids AS id")]
    assert len(reinforcements) == 1 and "e.raw" in reinforcements[0]
    assert all(h.node.embedding is not None for h in hits)


def test_the_reinforced_nodes_are_the_same_with_or_without_vectors(
        shared_atlas: Callable[..., ElasticMemoryAtlas], clock: ManualClock) -> None:
    """On two copies of one graph (`GRAPH.COPY`), the same reinforcement with and without the
    vectors: the same nodes returned (weights to the last digit), then stored."""
    atlas = shared_atlas(weight_model="rich")
    _filled(atlas, clock)
    part = atlas.backend.partition("v")
    assert isinstance(part, FalkorPartition)
    conn, key = part.graph_key.conn, part.graph_key.key
    ids = [*[n.id for n in part.graph.nodes()][::2], "missing"]
    clock.advance(4321.5)
    found = []
    for n, vectors in enumerate((True, False)):
        copy = f"{key}:copy{n}"
        conn.command("GRAPH.COPY", key, copy)
        try:
            other = FalkorPartition(GraphKey(conn, copy), "v", part.vectors.dim)
            got = other.reinforce_many(ids, now=clock.now(), config=atlas.config, vectors=vectors)
            stored = [other.graph.get_node(i) for i in ids]
            found.append((got, stored))
        finally:
            conn.command("DEL", copy)
    assert found[0] == found[1]
    assert found[0][0][-1] is None and all(node is not None for node in found[0][0][:-1])
    assert [node.access_count for node in found[0][0][:-1]] == [1] * (len(ids) - 1)  # type: ignore[union-attr]
