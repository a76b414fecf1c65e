"""AtlasRetriever: the langchain-tests standard suite, metadata, k, filters, sessions, async."""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import datetime

import pytest
from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda
from langchain_tests.integration_tests import RetrieversIntegrationTests
from pydantic import ValidationError

from langchain_atlas import AtlasRetriever
from shared_core import ElasticMemoryAtlas, ManualClock, MiniLMEmbedder

from ._fakes import HashingEmbeddings

FACTS = [
    "Alice prefers oat milk in her coffee",
    "Alice's cat is called Miso and is afraid of thunder",
    "Alice is training for the Oslo half marathon in September",
    "The team stand-up moved to 9:30 on Tuesdays",
    "Bob lent Alice his road bike for the summer",
    "Alice is allergic to peanuts",
]


@functools.cache
def _minilm() -> MiniLMEmbedder:
    return MiniLMEmbedder()  # the real offline model, loaded once for this module


@functools.cache
def _standard_atlas() -> ElasticMemoryAtlas:
    """The standard suite's atlas (its recalls reinforce, so no other test shares it)."""
    atlas = ElasticMemoryAtlas(embedder=_minilm())
    atlas.add_memories(FACTS, namespace="alice", session_id="s1")
    return atlas


@pytest.mark.integration
class TestAtlasRetrieverStandard(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[AtlasRetriever]:
        return AtlasRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, object]:
        return {"atlas": _standard_atlas(), "namespace": "alice"}

    @property
    def retriever_query_example(self) -> str:
        return "what does Alice drink?"


@pytest.mark.integration
def test_the_real_model_ranks_by_meaning() -> None:
    atlas = ElasticMemoryAtlas(embedder=_minilm())
    atlas.add_memories(FACTS, namespace="alice")
    retriever = AtlasRetriever(atlas=atlas, namespace="alice", k=1, reinforce=False)
    cases = {"which pet does she have?": FACTS[1], "what race is she preparing for?": FACTS[2],
             "who borrowed a bicycle?": FACTS[4], "which nuts make her ill?": FACTS[5]}
    for query, fact in cases.items():  # no word in common with the fact beyond stop words
        assert retriever.invoke(query)[0].page_content == fact, query


@pytest.fixture
def loaded(atlas: ElasticMemoryAtlas) -> ElasticMemoryAtlas:
    atlas.add_memories(FACTS[:3], namespace="alice", session_id="s1")
    atlas.add_memories([{"content": FACTS[3], "metadata": {"type": "work", "source": "calendar"}},
                        {"content": FACTS[5], "metadata": {"type": "health"}}], namespace="alice", session_id="s2")
    atlas.add_memory("Bob prefers black coffee", namespace="bob")
    return atlas


def test_documents_carry_id_score_breakdown_weight_times_session_and_metadata(loaded: ElasticMemoryAtlas) -> None:
    doc = AtlasRetriever(atlas=loaded, namespace="alice", k=1).invoke("stand-up on Tuesdays")[0]
    meta = doc.metadata
    assert doc.page_content == FACTS[3]
    assert doc.id == meta["id"] and loaded.get(doc.id).content == FACTS[3]
    assert meta["type"] == "work" and meta["source"] == "calendar"  # the caller's metadata
    assert meta["session_id"] == "s2" and meta["namespace"] == "alice"
    assert meta["score"] > 0 and {"relevance", "weight", "recency"} <= set(meta["score_breakdown"])
    assert meta["weight"] > 1.0  # reinforced by this very recall
    for key in ("timestamp", "created_at", "last_accessed_at"):
        assert datetime.fromisoformat(meta[key]).tzinfo is not None
    assert "keyword" in meta["paths"] or "vector" in meta["paths"]


def test_k_field_and_per_call_k(loaded: ElasticMemoryAtlas) -> None:
    retriever = AtlasRetriever(atlas=loaded, namespace="alice", k=2)
    assert len(retriever.invoke("Alice")) == 2
    assert len(retriever.invoke("Alice", k=4)) == 4
    assert retriever.invoke("Alice", k=0) == []
    assert len(AtlasRetriever(atlas=loaded, namespace="alice").invoke("Alice")) == 4  # LangChain's usual default


def test_namespace_is_a_wall(loaded: ElasticMemoryAtlas) -> None:
    docs = AtlasRetriever(atlas=loaded, namespace="alice", k=10).invoke("black coffee")
    assert docs and all(d.metadata["namespace"] == "alice" for d in docs)
    assert "Bob prefers black coffee" not in [d.page_content for d in docs]
    assert AtlasRetriever(atlas=loaded, namespace="nobody").invoke("coffee") == []


def test_session_and_filters(loaded: ElasticMemoryAtlas) -> None:
    in_s1 = AtlasRetriever(atlas=loaded, namespace="alice", session_id="s1", k=10).invoke("Alice")
    assert {d.metadata["session_id"] for d in in_s1} == {"s1"}
    typed = AtlasRetriever(atlas=loaded, namespace="alice", k=10, filters={"type": "health"}).invoke("Alice")
    assert [d.page_content for d in typed] == [FACTS[5]]
    per_call = AtlasRetriever(atlas=loaded, namespace="alice", k=10).invoke("Alice", filters={"$session": "s2"})
    assert {d.metadata["session_id"] for d in per_call} == {"s2"}


def test_reinforce_false_leaves_weights_alone(loaded: ElasticMemoryAtlas) -> None:
    retriever = AtlasRetriever(atlas=loaded, namespace="alice", k=1, reinforce=False)
    doc = retriever.invoke("oat milk")[0]
    assert loaded.get(doc.id).access_count == 0
    AtlasRetriever(atlas=loaded, namespace="alice", k=1).invoke("oat milk")
    assert loaded.get(doc.id).access_count == 1


async def test_async_matches_sync(loaded: ElasticMemoryAtlas) -> None:
    retriever = AtlasRetriever(atlas=loaded, namespace="alice", k=3, reinforce=False)
    sync = retriever.invoke("marathon training")
    asynchronous = await retriever.ainvoke("marathon training")
    assert [d.id for d in asynchronous] == [d.id for d in sync]
    assert len(await retriever.ainvoke("marathon training", k=1)) == 1


def test_in_an_lcel_chain(loaded: ElasticMemoryAtlas) -> None:
    def join(docs: list[Document]) -> str:
        return "\n".join(d.page_content for d in docs)

    chain = AtlasRetriever(atlas=loaded, namespace="alice", k=1) | RunnableLambda(join)
    assert chain.invoke("peanuts") == FACTS[5]


def test_any_langchain_embeddings_can_be_the_embedder(clock: ManualClock) -> None:
    embeddings = HashingEmbeddings()
    atlas = ElasticMemoryAtlas(embedder=embeddings, clock=clock)
    atlas.add_memories(FACTS, namespace="alice")
    calls = embeddings.calls
    docs = AtlasRetriever(atlas=atlas, namespace="alice", k=1).invoke("Miso the cat")
    assert docs[0].page_content == FACTS[1]
    assert embeddings.calls > calls  # the query went through the LangChain embeddings


@pytest.mark.parametrize("bad", [{"namespace": ""}, {"namespace": "a", "k": -1}, {}])
def test_invalid_arguments_fail_at_construction(make_atlas: Callable[..., ElasticMemoryAtlas],
                                                bad: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        AtlasRetriever(atlas=make_atlas(), **bad)


def test_default_atlas_is_created_when_omitted() -> None:
    retriever = AtlasRetriever(namespace="fresh")
    assert isinstance(retriever.atlas, ElasticMemoryAtlas)
    assert retriever.invoke("anything") == []  # an empty namespace: nothing to embed against
