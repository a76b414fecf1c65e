"""The atlas's public API: writes, links, versions, sessions, errors and their atomicity."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shared_core import (
    AtlasConfig,
    AtlasError,
    ElasticMemoryAtlas,
    HashingEmbedder,
    InvalidEmbeddingError,
    InvalidInputError,
    InvalidMemoryError,
    InvalidRelationError,
    ManualClock,
    MemoryNotFoundError,
    NamespaceViolationError,
    Relation,
)
from shared_core.store.base import KeywordIndexBase

from ._state import snapshot


def test_add_memory_returns_a_complete_node(atlas: ElasticMemoryAtlas, clock: ManualClock) -> None:
    node = atlas.add_memory("User prefers oat milk", namespace="alice", session_id="s1",
                            metadata={"type": "preference"}, importance=2.0, timestamp="2024-05-01T10:00:00")
    assert node.content == "User prefers oat milk"
    assert (node.namespace, node.session_id, node.type) == ("alice", "s1", "preference")
    assert node.weight == 2.0 and node.importance == 2.0
    assert node.created_at == clock.now() and node.valid_from == clock.now()
    assert node.timestamp == pytest.approx(1714557600.0)  # when it happened, not when it was stored
    assert node.embedding is not None and node.embedding.shape == (256,)
    assert np.linalg.norm(node.embedding) == pytest.approx(1.0, abs=1e-5)
    assert atlas.get(node.id) == node


def test_auto_links_temporal_and_similar(make_atlas) -> None:  # type: ignore[no-untyped-def]
    atlas = make_atlas(similar_threshold=0.3)
    a = atlas.add_memory("we planned a trip to Lisbon in June", namespace="u", session_id="s")
    b = atlas.add_memory("the weather forecast says rain", namespace="u", session_id="s")
    c = atlas.add_memory("booked flights for our trip to Lisbon in June", namespace="u", session_id="other")
    rels = {(e.source, e.target, e.relation) for e in atlas.edges(b.id)}
    assert (a.id, b.id, Relation.BEFORE) in rels  # the session's previous memory
    similar = {(e.source, e.target) for e in atlas.edges(c.id) if e.relation is Relation.SIMILAR_TO}
    assert (c.id, a.id) in similar
    assert not any(e.relation is Relation.BEFORE for e in atlas.edges(c.id))  # another session


def test_add_memories_batch_and_dicts(atlas: ElasticMemoryAtlas) -> None:
    nodes = atlas.add_memories(["first", {"content": "second", "metadata": {"k": 1}, "pinned": True},
                                {"content": "third", "session_id": "s9"}], namespace="u", session_id="s1")
    assert [n.content for n in nodes] == ["first", "second", "third"]
    assert nodes[1].pinned and nodes[1].metadata == {"k": 1}
    assert [n.session_id for n in nodes] == ["s1", "s1", "s9"]
    assert [n.content for n in atlas.memories(namespace="u", session_id="s1")] == ["first", "second"]


def test_link_and_relation_validation(atlas: ElasticMemoryAtlas) -> None:
    a = atlas.add_memory("the server crashed", namespace="u")
    b = atlas.add_memory("the disk was full", namespace="u")
    edge = atlas.link(a.id, b.id, relation="caused_by", strength=0.7)
    assert edge.relation is Relation.CAUSED_BY and edge.strength == 0.7
    with pytest.raises(InvalidRelationError, match="'causes'"):
        atlas.link(a.id, b.id, relation="causes")
    with pytest.raises(MemoryNotFoundError, match="nope"):
        atlas.link(a.id, "nope")


def test_update_links_the_versions_both_ways(atlas: ElasticMemoryAtlas, clock: ManualClock) -> None:
    # the history and recall contract is tests/contract/test_api.py::test_versions_history_and_recall_of_the_newest;
    # this adds the supersedes edge and the history seen from either end
    old = atlas.add_memory("User prefers oat milk", namespace="alice")
    clock.advance(hours=1)
    new = atlas.update_memory(old.id, "User now prefers soy milk")
    assert atlas.history(new.id) == atlas.history(old.id)
    assert any(e.relation is Relation.SUPERSEDES and e.source == new.id for e in atlas.edges(old.id))
    with pytest.raises(InvalidInputError, match="superseded"):
        atlas.update_memory(old.id, "again")


def test_forget_and_end_session(atlas: ElasticMemoryAtlas) -> None:
    a = atlas.add_memory("to forget", namespace="u", session_id="s1")
    atlas.forget(a.id)
    with pytest.raises(MemoryNotFoundError):
        atlas.get(a.id)
    with pytest.raises(MemoryNotFoundError):
        atlas.forget(a.id)
    atlas.add_memories(["one", "two"], namespace="u", session_id="s2")
    keep = atlas.add_memory("pinned fact", namespace="u", session_id="s2", pinned=True)
    assert atlas.end_session("s2", namespace="u", mode="fade") == 2
    assert all(n.weight == 0.5 for n in atlas.memories(namespace="u", session_id="s2") if not n.pinned)
    assert atlas.end_session("s2", namespace="u", mode="delete") == 2
    assert [n.id for n in atlas.memories(namespace="u")] == [keep.id]
    assert atlas.end_session("missing", namespace="u") == 0


def test_ttl_expires(make_atlas, clock: ManualClock) -> None:  # type: ignore[no-untyped-def]
    atlas = make_atlas()
    atlas.add_memory("temporary code 4411", namespace="u", ttl=60)
    assert atlas.retrieve("temporary code", namespace="u", reinforce=False)
    clock.advance(61)
    assert atlas.retrieve("temporary code", namespace="u", reinforce=False) == []  # excluded at once
    atlas.add_memory("another write sweeps expired memories", namespace="u")
    assert atlas.count(namespace="u") == 1
    assert atlas.stats().expirations == 1


def test_async_forms(atlas: ElasticMemoryAtlas) -> None:
    import asyncio

    async def run() -> None:
        node = await atlas.aadd_memory("async memory about kites", namespace="u")
        hits = await atlas.aretrieve("kites", namespace="u")
        assert hits[0].node.id == node.id
        ctx = await atlas.abuild_context("kites", namespace="u", token_budget=50, style="bullet")
        assert "kites" in ctx.text
        await atlas.aforget(node.id)

    asyncio.run(run())
    assert len(atlas) == 0


# -- errors ------------------------------------------------------------------------------------
BAD_CALLS = [
    ("empty content", lambda a: a.add_memory("", namespace="u"), InvalidMemoryError, "''"),
    ("blank content", lambda a: a.add_memory("   ", namespace="u"), InvalidMemoryError, "blank"),
    ("non-string content", lambda a: a.add_memory(42, namespace="u"), InvalidMemoryError, "int"),
    ("wrong dimension", lambda a: a.add_memory("x", namespace="u", embedding=[0.1] * 3), InvalidEmbeddingError, "3"),
    ("nan embedding", lambda a: a.add_memory("x", namespace="u", embedding=[math.nan] * 256),
     InvalidEmbeddingError, "NaN"),
    ("zero embedding", lambda a: a.add_memory("x", namespace="u", embedding=[0.0] * 256),
     InvalidEmbeddingError, "zero"),
    ("empty namespace", lambda a: a.add_memory("x", namespace=""), InvalidInputError, "namespace"),
    ("bad metadata", lambda a: a.add_memory("x", namespace="u", metadata={"f": object()}), InvalidMemoryError,
     "JSON"),
    ("negative ttl", lambda a: a.add_memory("x", namespace="u", ttl=-1), InvalidInputError, "-1"),
    ("negative importance", lambda a: a.add_memory("x", namespace="u", importance=-2), InvalidInputError, "-2"),
    ("unknown link target", lambda a: a.add_memory("x", namespace="u", links_to=["missing-id"]),
     MemoryNotFoundError, "missing-id"),
    ("bad batch item", lambda a: a.add_memories(["ok", ""], namespace="u"), InvalidMemoryError, "item 1"),
    ("unknown batch field", lambda a: a.add_memories([{"content": "x", "colour": 1}], namespace="u"),
     InvalidMemoryError, "colour"),
    ("unknown id", lambda a: a.get("no-such-id"), MemoryNotFoundError, "no-such-id"),
    ("unknown relation", lambda a: a.link(a.memories(namespace="u")[0].id, a.memories(namespace="u")[1].id,
                                          relation="loves"), InvalidRelationError, "loves"),
    ("negative top_k", lambda a: a.retrieve("x", namespace="u", top_k=-1), InvalidInputError, "-1"),
    ("negative budget", lambda a: a.build_context("x", namespace="u", token_budget=-5), InvalidInputError, "-5"),
    ("unknown style", lambda a: a.build_context("x", namespace="u", token_budget=5, style="poem"),
     InvalidInputError, "poem"),
    ("empty query", lambda a: a.retrieve("", namespace="u"), InvalidInputError, "query"),
    ("bad filter", lambda a: a.retrieve("x", namespace="u", filters={"$colour": 1}), InvalidInputError, "colour"),
    ("bad end mode", lambda a: a.end_session("s", namespace="u", mode="explode"), InvalidInputError, "explode"),
    ("forget wrong namespace", lambda a: a.forget(a.memories(namespace="u")[0].id, namespace="v"),
     MemoryNotFoundError, "namespace"),
]


@pytest.mark.parametrize(("name", "call", "error", "fragment"), BAD_CALLS, ids=[c[0] for c in BAD_CALLS])
def test_bad_input_raises_a_clear_error_and_changes_nothing(atlas: ElasticMemoryAtlas, name, call, error,  # type: ignore[no-untyped-def]
                                                            fragment) -> None:
    atlas.add_memories(["alpha memory", "beta memory"], namespace="u", session_id="s")
    before = snapshot(atlas)
    with pytest.raises(error) as info:
        call(atlas)
    assert isinstance(info.value, AtlasError)
    assert fragment in str(info.value)
    assert snapshot(atlas) == before


def test_errors_also_inherit_the_builtins() -> None:
    assert issubclass(InvalidMemoryError, ValueError)
    assert issubclass(MemoryNotFoundError, KeyError)
    assert issubclass(NamespaceViolationError, PermissionError)


class _FailingKeywords(KeywordIndexBase):
    """Wraps a keyword index and fails on the n-th add, to test rollback of a half-done write."""

    def __init__(self, inner, fail_at: int) -> None:  # type: ignore[no-untyped-def]
        self.inner, self.fail_at, self.calls = inner, fail_at, 0

    def add(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        self.calls += 1
        if self.calls == self.fail_at:
            raise OSError("disk on fire")
        return self.inner.add(*args, **kwargs)

    def __getattr__(self, name):  # type: ignore[no-untyped-def]
        return getattr(self.inner, name)


def test_a_store_failing_halfway_rolls_the_whole_batch_back(atlas: ElasticMemoryAtlas) -> None:
    atlas.add_memories(["alpha", "beta"], namespace="u", session_id="s")
    part = atlas.backend.partition("u")
    assert part is not None
    before = snapshot(atlas)
    part.keywords = _FailingKeywords(part.keywords, fail_at=3)  # type: ignore[assignment]
    with pytest.raises(OSError, match="disk on fire"):
        atlas.add_memories(["gamma", "delta", "epsilon"], namespace="u", session_id="s")
    part.keywords = part.keywords.inner  # type: ignore[attr-defined]
    assert snapshot(atlas) == before


_junk = st.one_of(st.none(), st.integers(), st.text(max_size=3), st.floats(allow_nan=True),
                  st.lists(st.floats(), max_size=4), st.dictionaries(st.text(max_size=2), st.integers(), max_size=2))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(content=_junk, namespace=st.one_of(st.just("u"), _junk), ttl=st.one_of(st.none(), _junk),
       importance=st.one_of(st.just(1.0), _junk), embedding=st.one_of(st.none(), _junk))
def test_property_a_failed_add_leaves_the_atlas_unchanged(content, namespace, ttl, importance,  # type: ignore[no-untyped-def]
                                                           embedding) -> None:
    atlas = ElasticMemoryAtlas(config=AtlasConfig(max_nodes=3), embedder=HashingEmbedder(dim=16),
                               clock=ManualClock(1_700_000_000.0))
    atlas.add_memories(["one fact", "two facts", "three facts"], namespace="u")
    before = snapshot(atlas)
    try:
        atlas.add_memory(content, namespace=namespace, ttl=ttl, importance=importance, embedding=embedding)
    except AtlasError:
        assert snapshot(atlas) == before
    else:  # the junk happened to be valid: the write must be complete and the cap must hold
        assert len(atlas) <= 3


def test_write_order_survives_recall_and_fade(atlas: ElasticMemoryAtlas) -> None:
    atlas.add_memories(["alpha one", "beta two", "gamma three"], namespace="u", session_id="s")
    atlas.retrieve("alpha", namespace="u", top_k=1)  # reinforcing must not reorder
    atlas.end_session("s", namespace="u", mode="fade")
    assert [n.content for n in atlas.memories(namespace="u")] == ["alpha one", "beta two", "gamma three"]
    assert [n.turn for n in atlas.memories(namespace="u")] == [1, 2, 3]


def test_framework_embedders_embed_queries_with_their_query_method() -> None:
    class QueryAware:  # the shape of a LangChain Embeddings with asymmetric query/document models
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [[1.0, 0.0, 0.0] if "doc" in t else [0.0, 1.0, 0.0] for t in texts]

        def embed_query(self, text: str) -> list[float]:
            return [1.0, 0.1, 0.0]  # questions map next to documents

    atlas = ElasticMemoryAtlas(embedder=QueryAware(), clock=ManualClock())
    atlas.add_memories(["doc about tea", "note about coffee"], namespace="u")
    hits = atlas.retrieve("anything", namespace="u", top_k=2, reinforce=False)
    assert hits[0].node.content == "doc about tea" and hits[0].components["vector"] > 0.99


def test_exclude_ids_keeps_shown_turns_out_of_recall_and_context(atlas: ElasticMemoryAtlas) -> None:
    shown = atlas.add_memory("we talked about tea", namespace="u", session_id="s")
    other = atlas.add_memory("tea from Darjeeling is my favourite", namespace="u", session_id="s")
    hits = atlas.retrieve("tea", namespace="u", exclude_ids={shown.id}, reinforce=False)
    assert [h.node.id for h in hits] == [other.id]
    ctx = atlas.build_context("tea", namespace="u", session_id="s", token_budget=200, exclude_ids=[shown.id])
    assert "we talked about tea" not in ctx.text and "Darjeeling" in ctx.text
    with pytest.raises(InvalidInputError, match="exclude_ids"):
        atlas.retrieve("tea", namespace="u", exclude_ids="abc")


@pytest.mark.parametrize("query", ["0_0", "snake_case_word", '"quoted"', "a-b", "NEAR(x y)", "x*", "AND OR NOT", "^"])
def test_keyword_path_accepts_any_query_text(atlas: ElasticMemoryAtlas, query: str) -> None:
    atlas.add_memories(["0_0 snake_case_word", "plain text"], namespace="u")
    assert isinstance(atlas.retrieve(query, namespace="u", reinforce=False), list)


def test_stats_name_no_session_for_memories_stored_without_one() -> None:
    from shared_core import HashingEmbedder

    atlas = ElasticMemoryAtlas(embedder=HashingEmbedder())
    atlas.add_memory("no session here", namespace="n")
    atlas.add_memory("in a session", namespace="n", session_id="s1")
    stats = atlas.stats()
    assert stats.nodes == 2 and stats.nodes_by_session == {"s1": 1}
    assert "None" not in stats.as_table()
