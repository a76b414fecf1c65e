"""The FalkorDB backend's own features: namespace TTL, one memory seen from several atlases,
the vector index under churn, dimension checks, save/load and a server-side copy."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from shared_core import ElasticMemoryAtlas, HashingEmbedder, InvalidInputError, ManualClock, MemoryNotFoundError
from shared_core.store.falkordb import FalkorDBBackend


def test_a_namespace_ttl_is_applied_again_after_each_write(prefixed_url: str, clock: ManualClock) -> None:
    atlas = ElasticMemoryAtlas(embedder=HashingEmbedder(dim=64), clock=clock, backend=f"{prefixed_url}&ttl=2")
    backend = atlas.backend
    assert isinstance(backend, FalkorDBBackend)
    node = atlas.add_memory("a note that lives two seconds after the last write", namespace="tmp")
    key = backend.key("tmp")
    assert 0 < backend.conn.command("TTL", key) <= 2
    time.sleep(1.2)
    atlas.add_memory("a later write", namespace="tmp")  # extends the namespace's life
    assert backend.conn.command("PTTL", key) > 1500
    assert atlas.get(node.id).content.startswith("a note")
    deadline = time.monotonic() + 10
    while atlas.count(namespace="tmp") and time.monotonic() < deadline:
        time.sleep(0.2)
    assert atlas.count(namespace="tmp") == 0 and atlas.retrieve("note", namespace="tmp") == []
    with pytest.raises(MemoryNotFoundError):
        atlas.get(node.id)
    assert "tmp" not in atlas.namespaces()


def test_every_atlas_on_the_server_sees_one_memory(shared_atlas: Callable[..., ElasticMemoryAtlas]) -> None:
    one, two = shared_atlas(), shared_atlas()
    a = one.add_memory("the deploy is on Tuesday", namespace="team", session_id="s")
    b = two.add_memory("the deploy moved to Wednesday", namespace="team", session_id="s")
    assert two.get(a.id) == one.get(a.id) and len(one) == len(two) == 2
    assert [e.source for e in one.edges(b.id) if e.relation.value == "before"] == [a.id]
    two.link(b.id, a.id, relation="caused_by")  # ids written by another process resolve
    newer = one.update_memory(a.id, "the deploy is on Thursday")
    assert two.get(a.id).valid_to is not None and a.id in {n.id for n in two.history(newer.id)}
    assert [h.node.id for h in two.retrieve("deploy Thursday", namespace="team", top_k=1)] == [newer.id]
    two.forget(b.id)
    with pytest.raises(MemoryNotFoundError):
        one.get(b.id)
    assert one.count(namespace="team") == 2


def test_vector_search_keeps_k_results_under_updates_and_deletes(shared_atlas: Callable[..., ElasticMemoryAtlas]
                                                                 ) -> None:
    """FalkorDB 4.16's HNSW index keeps stale entries that count towards k; the backend
    compensates, so recall still sees k memories after heavy reinforcement and deletion."""
    atlas = shared_atlas(similar_top=0, link_temporal=False, keyword_weight=0.0, graph_weight=0.0)
    nodes = atlas.add_memories([f"memory number {i} about topic {i % 7}" for i in range(60)], namespace="u")
    for _ in range(5):
        atlas.retrieve("memory about topic 3", namespace="u", top_k=20)  # every recall updates the nodes
    for node in nodes[:30]:
        atlas.forget(node.id)
    part = atlas.backend.partition("u")
    assert part is not None
    vector = atlas.get(nodes[45].id).embedding
    assert vector is not None
    hits = part.vectors.search(vector, 25)
    assert len(hits) == 25 and hits[0][0] == nodes[45].id
    assert len(atlas.retrieve("memory about topic 3", namespace="u", top_k=25, reinforce=False)) == 25


def test_a_namespace_of_another_dimension_is_refused(prefixed_url: str) -> None:
    FalkorDBBackend.from_url(prefixed_url, dim=64).partition("vec", create=True)
    with pytest.raises(InvalidInputError, match="64-dimensional"):
        FalkorDBBackend.from_url(prefixed_url, dim=32).partition("vec")


def test_save_to_a_file_and_copy_on_the_server(shared_atlas: Callable[..., ElasticMemoryAtlas], tmp_path: Path,
                                               clock: ManualClock) -> None:
    atlas = shared_atlas()
    atlas.add_memories(["first fact", "second fact", "third fact"], namespace="team", session_id="s")
    path = atlas.save(tmp_path / "team.atlas")
    loaded = ElasticMemoryAtlas.load(path, embedder=HashingEmbedder(dim=64), clock=clock)  # in process
    assert [n.content for n in loaded.memories(namespace="team", session_id="s")] == [
        "first fact", "second fact", "third fact"]
    backend = atlas.backend
    assert isinstance(backend, FalkorDBBackend)
    backend.conn.command("GRAPH.COPY", backend.key("team"), backend.key("team-backup"))  # not DUMP/RESTORE
    assert atlas.count(namespace="team-backup") == 3
    assert [h.node.content for h in atlas.retrieve("second", namespace="team-backup", top_k=1)] == ["second fact"]


def test_each_call_reads_the_server_afresh(shared_atlas: Callable[..., ElasticMemoryAtlas], clock: ManualClock) -> None:
    """Reads within one call may be served from that call's cache; the next call sees what other
    processes wrote meanwhile."""
    one, two = shared_atlas(), shared_atlas()
    node = one.add_memory("the office moves to Lyon", namespace="team", session_id="s")
    assert one.retrieve("office Lyon", namespace="team", reinforce=False)[0].node.weight == 1.0
    two.retrieve("office Lyon", namespace="team")  # another process reinforces it
    assert one.get(node.id).weight == pytest.approx(1.2) and one.get(node.id).access_count == 1
    newer = two.update_memory(node.id, "the office moves to Lille")
    assert [h.node.id for h in one.retrieve("office moves", namespace="team", reinforce=False)] == [newer.id]
    assert one.memories(namespace="team", session_id="s")[-1].id == newer.id
