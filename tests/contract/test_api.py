"""The atlas's public behaviour, the same on every backend."""

from __future__ import annotations

import numpy as np
import pytest

from shared_core import (
    ElasticMemoryAtlas,
    InvalidInputError,
    InvalidRelationError,
    ManualClock,
    MemoryNotFoundError,
    NamespaceViolationError,
    Relation,
)
from shared_core.formulas.decay import decayed_weight

from .conftest import Make


def test_a_stored_memory_reads_back_whole(atlas: ElasticMemoryAtlas, clock: ManualClock) -> None:
    clock.advance(0.123456)  # fractions of a second survive the round trip exactly
    node = atlas.add_memory("User prefers oat milk", namespace="alice", session_id="s1", importance=2.0,
                            metadata={"type": "preference", "tags": ["milk", "diet"], "n": 3},
                            timestamp="2024-05-01T10:00:00.250000", ttl=3600.5, pinned=True)
    assert (node.namespace, node.session_id, node.type, node.pinned) == ("alice", "s1", "preference", True)
    assert node.created_at == clock.now() and node.expires_at == clock.now() + 3600.5
    assert node.timestamp == pytest.approx(1714557600.25, abs=0)
    assert node.metadata == {"type": "preference", "tags": ["milk", "diet"], "n": 3}
    assert node.embedding is not None and np.linalg.norm(node.embedding) == pytest.approx(1.0, abs=1e-5)
    again = atlas.get(node.id)
    assert again == node and np.array_equal(again.embedding, node.embedding)  # type: ignore[arg-type]
    assert atlas.get(node.id, namespace="alice") == node
    with pytest.raises(MemoryNotFoundError):
        atlas.get(node.id, namespace="bob")
    with pytest.raises(MemoryNotFoundError):
        atlas.get("0" * 32)


def test_writes_link_turns_and_similar_memories(make_atlas: Make) -> None:
    atlas = make_atlas(similar_threshold=0.3)
    a = atlas.add_memory("we planned a trip to Lisbon in June", namespace="u", session_id="s")
    b = atlas.add_memory("the weather forecast says rain", namespace="u", session_id="s")
    c = atlas.add_memory("booked flights for our trip to Lisbon in June", namespace="u", session_id="other")
    assert [a.turn, b.turn, c.turn] == [1, 2, 3]
    assert (a.id, b.id, Relation.BEFORE) in {(e.source, e.target, e.relation) for e in atlas.edges(b.id)}
    similar = [e for e in atlas.edges(c.id) if e.relation is Relation.SIMILAR_TO]
    assert [(e.source, e.target) for e in similar] == [(c.id, a.id)] and 0.3 <= similar[0].strength <= 1.0
    assert not any(e.relation is Relation.BEFORE for e in atlas.edges(c.id))


def test_batches_keep_order_sessions_and_fields(atlas: ElasticMemoryAtlas) -> None:
    nodes = atlas.add_memories(["first", {"content": "second", "metadata": {"k": 1}, "pinned": True},
                                {"content": "third", "session_id": "s9"}, "fourth"], namespace="u", session_id="s1")
    assert [n.content for n in nodes] == ["first", "second", "third", "fourth"]
    assert [n.turn for n in nodes] == [1, 2, 3, 4]
    assert atlas.sessions(namespace="u") == ["s1", "s9"]
    assert [n.content for n in atlas.memories(namespace="u", session_id="s1")] == ["first", "second", "fourth"]
    assert [n.content for n in atlas.memories(namespace="u")] == ["first", "second", "third", "fourth"]
    befores = {(e.source, e.target) for n in nodes for e in atlas.edges(n.id) if e.relation is Relation.BEFORE}
    assert befores == {(nodes[0].id, nodes[1].id), (nodes[1].id, nodes[3].id)}
    assert atlas.count(namespace="u") == 4 and len(atlas) == 4 and atlas.namespaces() == ["u"]


def test_links_replace_and_never_cross(atlas: ElasticMemoryAtlas) -> None:
    a = atlas.add_memory("the server crashed", namespace="u")
    b = atlas.add_memory("the disk was full", namespace="u")
    other = atlas.add_memory("elsewhere", namespace="v")
    atlas.link(a.id, b.id, relation="caused_by", strength=0.7, metadata={"why": "logs"})
    atlas.link(a.id, b.id, relation="caused_by", strength=0.9)  # replaces, never duplicates
    caused = [e for e in atlas.edges(a.id) if e.relation is Relation.CAUSED_BY]
    assert [(e.source, e.target, e.strength, dict(e.metadata)) for e in caused] == [(a.id, b.id, 0.9, {})]
    with pytest.raises(NamespaceViolationError):
        atlas.link(a.id, other.id)
    with pytest.raises(MemoryNotFoundError):
        atlas.link(a.id, "nope")
    with pytest.raises(InvalidInputError):
        atlas.link(a.id, a.id)


def test_versions_history_and_recall_of_the_newest(atlas: ElasticMemoryAtlas, clock: ManualClock) -> None:
    old = atlas.add_memory("User prefers oat milk", namespace="alice", metadata={"type": "preference"})
    clock.advance(hours=1)
    new = atlas.update_memory(old.id, "User now prefers soy milk")
    assert new.metadata == {"type": "preference"}
    assert [n.content for n in atlas.history(old.id)] == ["User prefers oat milk", "User now prefers soy milk"]
    assert atlas.get(old.id).valid_to == clock.now()
    assert [h.node.id for h in atlas.retrieve("milk", namespace="alice", reinforce=False)] == [new.id]
    with_history = atlas.retrieve("milk", namespace="alice", include_history=True, reinforce=False)
    assert {h.node.id for h in with_history} == {old.id, new.id}
    assert atlas.stats(namespace="alice").superseded == 1
    with pytest.raises(InvalidInputError, match="already superseded"):
        atlas.update_memory(old.id, "again")


def test_forget_and_end_session(atlas: ElasticMemoryAtlas, clock: ManualClock) -> None:
    a, b, c = atlas.add_memories(["one", "two", {"content": "pinned three", "pinned": True}],
                                 namespace="u", session_id="s")
    atlas.forget(a.id)
    assert atlas.count(namespace="u") == 2 and atlas.edges(b.id) == [e for e in atlas.edges(b.id) if a.id not in
                                                                     (e.source, e.target)]
    with pytest.raises(MemoryNotFoundError):
        atlas.get(a.id)
    clock.advance(days=30)
    assert atlas.end_session("s", namespace="u", mode="fade", fade_factor=0.5) == 1  # the pin is left alone
    expected = decayed_weight(1.0, 30 * 86_400.0, half_life=atlas.config.half_life, floor=0.05) * 0.5
    faded = atlas.get(b.id)
    assert faded.weight == pytest.approx(expected, rel=1e-12) and faded.last_accessed_at == clock.now()
    assert atlas.get(c.id).weight == 1.0
    assert atlas.end_session("s", namespace="u", mode="delete") == 1
    assert [n.id for n in atlas.memories(namespace="u")] == [c.id]
    assert atlas.end_session("nobody", namespace="u") == 0


def test_reinforcement_decays_then_multiplies(make_atlas: Make, clock: ManualClock) -> None:
    atlas = make_atlas(half_life=86_400.0)
    node = atlas.add_memory("the cat is called Miso", namespace="u")
    clock.advance(days=1)
    hit = atlas.retrieve("cat called Miso", namespace="u", top_k=1)[0]
    assert hit.node.weight == pytest.approx(0.5 * 1.2, rel=1e-12)
    assert (hit.node.access_count, hit.node.last_accessed_at) == (1, clock.now())
    for _ in range(10):
        atlas.retrieve("cat called Miso", namespace="u", top_k=1)
    stored = atlas.get(node.id)
    assert stored.weight == atlas.config.weight_cap and stored.access_count == 11
    atlas.retrieve("cat", namespace="u", reinforce=False)
    assert atlas.get(node.id).access_count == 11


def test_decay_in_turns_counts_the_namespace_writes(make_atlas: Make) -> None:
    atlas = make_atlas(decay_unit="turns", half_life=2)
    node = atlas.add_memory("the first thing said", namespace="u")
    atlas.add_memories(["filler a", "filler b"], namespace="u")
    atlas.add_memory("another tenant", namespace="v")  # its own counter
    hit = next(h for h in atlas.retrieve("first thing said", namespace="u", explain=True) if h.node.id == node.id)
    assert hit.components["weight"] == pytest.approx(0.5)
    assert atlas.get(node.id).accessed_turn == 3


def test_recall_paths_sessions_filters_and_budget(make_atlas: Make) -> None:
    atlas = make_atlas(keyword_weight=0.5)
    atlas.add_memories(["the dog is called Rex", "Rex likes the park", "we ate pizza on Friday"],
                       namespace="u", session_id="s1")
    atlas.add_memory("the weather was grey", namespace="u", session_id="s2", metadata={"type": "weather"})
    hits = atlas.retrieve("dog called Rex", namespace="u", top_k=2, reinforce=False, explain=True)
    assert hits[0].node.content == "the dog is called Rex" and {"vector", "keyword"} <= set(hits[0].paths)
    assert atlas.retrieve("dog", namespace="u", session_id="s2", reinforce=False)[0].node.session_id == "s2"
    crossed = atlas.retrieve("dog called Rex", namespace="u", session_id="s2", cross_session=True, reinforce=False)
    rex = next(h for h in crossed if h.node.content == "the dog is called Rex")
    assert rex.other_session and rex.components["session"] < 1.0
    assert [h.node.content for h in atlas.retrieve("grey", namespace="u", filters={"type": "weather"},
                                                   reinforce=False)] == ["the weather was grey"]
    ctx = atlas.build_context("what is the dog called?", namespace="u", session_id="s1", token_budget=60,
                              style="bullet", reinforce=False)
    assert 0 < ctx.tokens <= 60 and "Rex" in ctx.text and atlas.count_tokens(ctx.text) == ctx.tokens
    shown = {m.node.content for m in ctx.memories}
    assert "we ate pizza on Friday" in shown  # the session's latest turns come first


def test_ttl_and_time_ranges(make_atlas: Make, clock: ManualClock) -> None:
    atlas = make_atlas()
    keep = atlas.add_memory("we met on 9 May 2024", namespace="u", timestamp="2024-05-09T12:00:00")
    atlas.add_memory("a short-lived note", namespace="u", ttl=60)
    atlas.add_memory("something from June", namespace="u", timestamp="2024-06-20T12:00:00")
    day = [h.node.id for h in atlas.retrieve("what happened on 9 May 2024?", namespace="u", reinforce=False)]
    assert day[0] == keep.id
    clock.advance(61)
    atlas.add_memory("a later write expires the note", namespace="u")
    assert "a short-lived note" not in {n.content for n in atlas.memories(namespace="u")}


def test_vector_rankings_agree_across_backends(make_atlas: Make) -> None:
    """Vector path alone (no keyword, graph or recency terms): the ranking and scores are the
    in-process ones, so a FalkorDB atlas answers like the default."""
    atlas = make_atlas(keyword_weight=0.0, graph_weight=0.0, recent_weight=0.0, time_weight=0.0)
    texts = ["cats purr on the sofa", "dogs bark at the postman", "the night train to Porto",
             "heavy rain all week", "cats and dogs get along", "fresh milk from the farm",
             "oat milk in my coffee please", "soy milk tastes of beans", "trains stop when rain floods tracks"]
    atlas.add_memories(texts, namespace="u")
    reference = ElasticMemoryAtlas(config=atlas.config, embedder=atlas.embedder, clock=atlas.clock)
    reference.add_memories(texts, namespace="u")
    for query in ("oat milk", "cats and dogs", "rain stops the trains"):
        got = atlas.retrieve(query, namespace="u", top_k=4, reinforce=False)
        want = reference.retrieve(query, namespace="u", top_k=4, reinforce=False)
        assert [h.node.content for h in got] == [h.node.content for h in want]
        assert [h.score for h in got] == pytest.approx([h.score for h in want], rel=1e-5)


def test_compression_merges_near_duplicates(make_atlas: Make) -> None:
    atlas = make_atlas(merge_threshold=0.9)
    atlas.add_memories(["User prefers oat milk in coffee", "User prefers oat milk in coffee!",
                        "the train leaves at nine"], namespace="u", session_id="s")
    report = atlas.compress(namespace="u", progress=False)
    assert len(report.merged) == 1 and atlas.count(namespace="u") == 2
    assert [h.node.content for h in atlas.retrieve("oat milk", namespace="u", top_k=1, reinforce=False)] == [
        "User prefers oat milk in coffee!"]  # the newest survives


@pytest.mark.parametrize("query", ['"quoted" AND NOT (x)', "@session:{s1} -milk|oat*", "%fuzzy% ~opt $param",
                                   "ünïcödé 🎉 — 42", "a_b-c.d", "the"])
def test_any_query_text_is_searched_safely(atlas: ElasticMemoryAtlas, query: str) -> None:
    atlas.add_memories(["oat milk please", "ünïcödé text with 42 in it", "a_b-c.d is a file"], namespace="u")
    hits = atlas.retrieve(query, namespace="u", reinforce=False)
    assert len(hits) <= 3 and all(h.node.namespace == "u" for h in hits)


def test_custom_relations_and_as_of_on_every_backend(atlas: ElasticMemoryAtlas, clock: ManualClock) -> None:
    a = atlas.add_memory("the red notebook", namespace="u")
    b = atlas.add_memory("Maya's desk drawer", namespace="u")
    with pytest.raises(InvalidRelationError):
        atlas.link(a.id, b.id, relation="belongs_to")
    atlas.register_relation("belongs_to")
    atlas.link(a.id, b.id, relation="belongs_to", strength=0.8)
    atlas.link(a.id, b.id, relation="belongs_to", strength=0.6)  # replaces, never duplicates
    custom = [e for e in atlas.edges(a.id) if e.relation == "belongs_to"]
    assert [(e.source, e.target, e.strength, e.relation.value) for e in custom] == [(a.id, b.id, 0.6, "belongs_to")]
    start = clock.now()
    clock.advance(days=1)
    new = atlas.update_memory(a.id, "the blue notebook")
    before = atlas.retrieve("notebook", namespace="u", as_of=start + 60, reinforce=False)
    assert a.id in {h.node.id for h in before} and new.id not in {h.node.id for h in before}
    assert a.id not in {h.node.id for h in atlas.retrieve("notebook", namespace="u", reinforce=False)}
