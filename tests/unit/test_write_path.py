"""The batched write path: same links as one-by-one inserts, one keyword batch per chunk,
namespace runs, and all-or-nothing batches; plus the graph store contract on both stores."""

from __future__ import annotations

import pytest

from shared_core import AtlasConfig, ElasticMemoryAtlas, HashingEmbedder, ManualClock, NetworkXGraphStore
from shared_core.engine import writes as write_module
from shared_core.store.base import VectorIndexBase
from shared_core.store.memory.graph_store import DictGraphStore, GraphStore
from shared_core.values.model import MemoryEdge, MemoryNode, Relation

from ._state import snapshot

FACTS = [
    "Alice plans a trip to Lisbon in June", "Alice booked the Lisbon flight for June",
    "Alice likes oat milk in her coffee", "Bob prefers soy milk in his coffee",
    "The Lisbon hotel is near the river", "Alice's sister lives in Porto",
    "Porto is a short train ride from Lisbon", "Alice drinks coffee every morning",
    "Bob is learning Portuguese for the trip", "The June flight leaves at 7:05",
    "Alice packs light for short trips", "Coffee in Lisbon is strong",
]


def make(**config: object) -> ElasticMemoryAtlas:
    return ElasticMemoryAtlas(config=AtlasConfig(similar_threshold=0.25, **config),  # type: ignore[arg-type]
                              embedder=HashingEmbedder(dim=128), clock=ManualClock(1_700_000_000.0))


def edges_by_content(atlas: ElasticMemoryAtlas, namespace: str) -> set[tuple[str, str, str, float]]:
    nodes = {n.id: n.content for n in atlas.memories(namespace=namespace)}
    return {(nodes[e.source], nodes[e.target], e.relation.value, round(e.strength, 5))
            for nid in nodes for e in atlas.edges(nid)}


@pytest.mark.parametrize("chunk", [1024, 5])
def test_a_batch_links_exactly_like_one_by_one_inserts(chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(write_module, "CHUNK", chunk)  # 5: chunks of the batch see earlier chunks
    items = [{"content": text, "session_id": f"s{i % 3}"} for i, text in enumerate(FACTS)]
    one_by_one, batched = make(), make()
    for item in items:
        one_by_one.add_memory(item["content"], namespace="u", session_id=item["session_id"])
    batched.add_memories(items, namespace="u")
    expected = edges_by_content(one_by_one, "u")
    assert edges_by_content(batched, "u") == expected
    relations = {r for _, _, r, _ in expected}
    assert {"before", "similar_to"} <= relations  # the comparison covers both kinds of link
    assert [n.turn for n in batched.memories(namespace="u")] == list(range(1, len(FACTS) + 1))


def test_superseded_memories_get_no_similar_links_in_a_batch() -> None:
    atlas = make()
    old = atlas.add_memory("Alice likes oat milk in her coffee", namespace="u")
    new = atlas.update_memory(old.id, "Alice likes oat milk in her coffee now")
    [node] = atlas.add_memories(["Alice likes oat milk in coffee"], namespace="u")
    targets = {e.target for e in atlas.edges(node.id) if e.relation is Relation.SIMILAR_TO}
    assert new.id in targets and old.id not in targets


def test_one_keyword_batch_per_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    atlas = make()
    atlas.add_memory("warm up the namespace", namespace="u")
    part = atlas.backend.partition("u")
    assert part is not None
    batches: list[int] = []
    keywords_class = type(part.keywords)
    add_many = keywords_class.add_many

    def spy(self: object, rows: list[tuple[str, str, str | None]]) -> None:
        batches.append(len(rows))
        add_many(self, rows)  # type: ignore[arg-type]

    monkeypatch.setattr(keywords_class, "add_many", spy)
    atlas.add_memories([f"{fact} (copy {i})" for i, fact in enumerate(FACTS * 4)], namespace="u")
    assert batches == [4 * len(FACTS)]
    assert len(part.keywords) == 1 + 4 * len(FACTS)


def test_items_of_several_namespaces_go_to_their_own_partitions() -> None:
    atlas = make()
    items = [{"content": "alpha one", "namespace": "a"}, {"content": "beta one", "namespace": "b"},
             {"content": "beta two", "namespace": "b"}, {"content": "alpha two", "namespace": "a"}]
    nodes = atlas.add_memories(items, namespace="a")
    assert [n.namespace for n in nodes] == ["a", "b", "b", "a"]
    assert [n.content for n in atlas.memories(namespace="a")] == ["alpha one", "alpha two"]
    assert [n.content for n in atlas.memories(namespace="b")] == ["beta one", "beta two"]
    for node in nodes:  # no edge crosses a namespace
        assert all(atlas.get(e.source).namespace == atlas.get(e.target).namespace == node.namespace
                   for e in atlas.edges(node.id))


class _VectorsFailingOnAdd(VectorIndexBase):
    def __init__(self, inner: object) -> None:
        self.inner = inner

    def add(self, ids: object, vectors: object) -> None:
        raise MemoryError("no room for vectors")

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    def __len__(self) -> int:
        return len(self.inner)  # type: ignore[arg-type]


def test_a_later_namespace_failing_undoes_the_earlier_ones() -> None:
    atlas = make()
    atlas.add_memories(["alpha zero"], namespace="a", session_id="s")
    atlas.add_memories(["beta zero"], namespace="b", session_id="s")
    part_b = atlas.backend.partition("b")
    assert part_b is not None
    before = snapshot(atlas)
    part_b.vectors = _VectorsFailingOnAdd(part_b.vectors)  # type: ignore[assignment]
    items = [{"content": "alpha one", "namespace": "a"}, {"content": "beta one", "namespace": "b"}]
    with pytest.raises(MemoryError):
        atlas.add_memories(items, namespace="a", session_id="s")
    part_b.vectors = part_b.vectors.inner  # type: ignore[attr-defined]
    assert snapshot(atlas) == before
    assert len(atlas.events.events(kind="add")) == 2


# -- the graph store contract -------------------------------------------------------------------
@pytest.fixture(params=[DictGraphStore, NetworkXGraphStore])
def graph(request: pytest.FixtureRequest) -> GraphStore:
    store: GraphStore = request.param()
    for i in "abcd":
        store.put_node(MemoryNode(id=i, content=f"memory {i}", namespace="u"))
    return store


def edge(source: str, target: str, relation: Relation = Relation.RELATED_TO, strength: float = 1.0) -> MemoryEdge:
    return MemoryEdge(source=source, target=target, relation=relation, strength=strength)


def test_graph_store_edges_and_neighbours(graph: GraphStore) -> None:
    assert isinstance(graph, GraphStore)
    graph.put_edge(edge("a", "b", Relation.BEFORE))
    graph.put_edge(edge("a", "b", Relation.SIMILAR_TO, 0.7))
    graph.put_edge(edge("c", "a", Relation.CAUSED_BY, 0.4))
    graph.put_edge(edge("a", "b", Relation.SIMILAR_TO, 0.9))  # replaces the (a, b, similar_to) edge
    assert graph.edge_count() == 3 and graph.degree("a") == 3 and graph.degree("d") == 0
    assert sorted((e.source, e.target, e.relation.value, e.strength) for e in graph.edges("a")) == [
        ("a", "b", "before", 1.0), ("a", "b", "similar_to", 0.9), ("c", "a", "caused_by", 0.4)]
    assert sorted(graph.neighbors("a")) == [("b", 0.9), ("b", 1.0), ("c", 0.4)]
    assert sorted(graph.neighbors("b")) == [("a", 0.9), ("a", 1.0)]
    assert graph.edges("missing") == [] and graph.neighbors("missing") == []


def test_graph_store_removals(graph: GraphStore) -> None:
    graph.put_edge(edge("a", "b"))
    graph.put_edge(edge("b", "c"))
    graph.put_edge(edge("d", "b", Relation.PART_OF))
    assert graph.remove_edge("a", "b", Relation.RELATED_TO) is True
    assert graph.remove_edge("a", "b", Relation.RELATED_TO) is False
    removed = graph.remove_node("b")
    assert sorted((e.source, e.target) for e in removed) == [("b", "c"), ("d", "b")]
    assert graph.get_node("b") is None and graph.node_count() == 3 and graph.edge_count() == 0
    assert graph.edges("c") == [] and graph.edges("d") == [] and graph.remove_node("b") == []
    replaced = MemoryNode(id="a", content="changed", namespace="u")
    graph.put_node(replaced)
    assert graph.get_node("a") == replaced and graph.node_count() == 3
    assert sorted(n.id for n in graph.nodes()) == ["a", "c", "d"]


def test_the_collector_is_paused_for_the_whole_write(monkeypatch: pytest.MonkeyPatch) -> None:
    import gc

    from shared_core import _atlas_writes as atlas_module

    atlas, seen = make(), []
    validate, account = atlas_module.specs_from_items, atlas._life.after_write

    def spy_validate(*args: object, **kwargs: object) -> object:
        seen.append(("validate", gc.isenabled()))
        return validate(*args, **kwargs)  # type: ignore[arg-type]

    def spy_account(*args: object, **kwargs: object) -> None:
        seen.append(("account", gc.isenabled()))
        account(*args, **kwargs)  # type: ignore[arg-type]

    embed = atlas._embed

    def spy_embed(*args: object, **kwargs: object) -> object:  # the model: collector on (it is process-wide)
        seen.append(("embed", gc.isenabled()))
        return embed(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(atlas_module, "specs_from_items", spy_validate)
    monkeypatch.setattr(atlas._life, "after_write", spy_account)
    monkeypatch.setattr(atlas, "_embed", spy_embed)
    assert gc.isenabled()
    nodes = atlas.add_memories(FACTS[:3], namespace="u")
    atlas.add_memory(FACTS[3], namespace="u")
    assert seen == [("validate", False), ("embed", True), ("account", False), ("embed", True), ("account", False)]
    assert gc.isenabled()
    assert [n.content for n in nodes] == FACTS[:3] and all(n.embedding is not None for n in nodes)


def test_a_chunk_is_tracked_alike_with_or_without_track_many(monkeypatch: pytest.MonkeyPatch) -> None:
    """The partition's sessions (in write order) and time index after a batch are the same
    whether the write path tracks the chunk in one call or memory by memory (`Partition.track`,
    as a server partition does)."""
    from shared_core.store.memory.backend import InProcessPartition

    items = [{"content": text, "session_id": f"s{i % 3}" if i % 4 else None,
              "timestamp": 1_600_000_000.0 + (i % 5) * 60.0} for i, text in enumerate(FACTS)]
    states = []
    for batched in (True, False):
        if not batched:
            monkeypatch.delattr(InProcessPartition, "track_many")
        atlas = make()
        atlas.add_memories(items[:3], namespace="u")
        atlas.add_memories(items[3:], namespace="u")
        part = atlas.backend.partition("u")
        assert part is not None
        by_id = {n.id: n.content for n in atlas.memories(namespace="u")}
        states.append(({s: [by_id[i] for i in ids] for s, ids in part.sessions.items()},
                       sorted(by_id[i] for i in part.between(0.0, 2e9)), edges_by_content(atlas, "u")))
    assert states[0] == states[1]
    assert set(states[0][0]) == {None, "s0", "s1", "s2"}


@pytest.mark.parametrize("where", ["track_many", "put_links"])
def test_a_failure_while_tracking_or_linking_leaves_the_atlas_as_before(
        where: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The chunk's tracking (half done) or its links (half stored) fail: the write is undone."""
    from shared_core.store.memory.backend import InProcessPartition

    atlas = make()
    atlas.add_memories([{"content": text, "session_id": f"s{i % 2}"} for i, text in enumerate(FACTS[:6])],
                       namespace="u")
    before = snapshot(atlas)
    owner = InProcessPartition if where == "track_many" else DictGraphStore
    real = getattr(owner, where)

    def half_then_fail(self: object, *columns: object, **kwargs: object) -> None:
        if where == "track_many":
            real(self, *(c[:3] for c in columns))  # type: ignore[index]
        else:
            real(self, list(columns[0])[:3], **kwargs)  # type: ignore[call-overload]
        raise MemoryError("no room")

    monkeypatch.setattr(owner, where, half_then_fail)
    with pytest.raises(MemoryError):
        atlas.add_memories([{"content": text, "session_id": f"s{i % 3}"} for i, text in enumerate(FACTS[6:])],
                           namespace="u")
    monkeypatch.undo()
    assert snapshot(atlas) == before
    part = atlas.backend.partition("u")
    assert part is not None and sum(map(len, part.sessions.values())) == 6 and len(part.between(0.0, 2e9)) == 6


def test_a_speaker_only_in_the_metadata_is_embedded_as_a_label_and_the_content_is_kept() -> None:
    """A chat application stores who said a message beside it: the embedder reads the turn as the
    labelled line ``"Kate: ..."``, so its vector carries the speaker as a labelled turn's does; the
    stored content is exactly what the caller gave, and a turn with a label of its own is read as is."""
    import numpy as np

    class Recording(HashingEmbedder):
        def __init__(self) -> None:
            super().__init__(dim=128)
            self.seen: list[str] = []

        def embed(self, texts: list[str]):  # type: ignore[no-untyped-def, override]
            self.seen.extend(texts)
            return super().embed(texts)

    embedder = Recording()
    atlas = ElasticMemoryAtlas(embedder=embedder, clock=ManualClock(1_700_000_000.0))
    one = atlas.add_memory("went hiking today", namespace="u", metadata={"speaker": "Kate"})
    many = atlas.add_memories([{"content": "me too!", "metadata": {"speaker": " Jon "}},
                               {"content": "Gina: so fun", "metadata": {"speaker": "Gina"}},
                               {"content": "no speaker"}], namespace="u")
    new = atlas.update_memory(one.id, "went hiking on Sunday")
    assert embedder.seen == ["Kate: went hiking today", "Jon: me too!", "Gina: so fun", "no speaker",
                             "Kate: went hiking on Sunday"]
    assert [n.content for n in (one, *many, new)] == ["went hiking today", "me too!", "Gina: so fun",
                                                      "no speaker", "went hiking on Sunday"]
    assert [atlas.get(i).content for i in (one.id, many[0].id, new.id)] == ["went hiking today", "me too!",
                                                                            "went hiking on Sunday"]
    part = atlas.backend.partition("u")
    assert part is not None
    [stored] = part.vectors.get_many([one.id])
    assert stored is not None
    assert np.allclose(stored, HashingEmbedder(dim=128).embed(["Kate: went hiking today"])[0], atol=1e-6)
