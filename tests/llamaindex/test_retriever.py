"""AtlasRetriever: nodes, metadata shared with every adapter, filters, sessions, query engines."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.llms.mock import MockLLMWithChatMemoryOfLastCall
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import MetadataMode, QueryBundle
from llama_index.core.vector_stores.types import FilterOperator, MetadataFilter, MetadataFilters

from llamaindex_atlas import AtlasRetriever
from shared_core import ElasticMemoryAtlas, HashingEmbedder, InvalidInputError


@pytest.fixture
def seeded(atlas: ElasticMemoryAtlas) -> ElasticMemoryAtlas:
    atlas.add_memory("Alice prefers oat milk in her coffee.", namespace="alice", session_id="s1",
                     metadata={"type": "preference", "tags": ["food", "drinks"]})
    atlas.add_memory("Alice is flying to Lisbon on June 12.", namespace="alice", session_id="s2",
                     metadata={"type": "plan", "priority": 2})
    atlas.add_memory("Bob prefers black coffee.", namespace="bob", session_id="s1")
    return atlas


def test_nodes_carry_the_memory_and_the_shared_metadata(seeded: ElasticMemoryAtlas) -> None:
    retriever = AtlasRetriever(atlas=seeded, namespace="alice", similarity_top_k=1, reinforce=False)
    [hit] = retriever.retrieve("what milk does Alice like?")
    [expected] = seeded.retrieve("what milk does Alice like?", namespace="alice", top_k=1, reinforce=False)
    assert hit.node.node_id == expected.node.id
    assert hit.node.get_content() == "Alice prefers oat milk in her coffee."
    assert hit.score == pytest.approx(expected.score)
    assert hit.node.metadata == expected.to_metadata()  # what the LangChain retriever returns too
    assert hit.node.metadata["type"] == "preference" and hit.node.metadata["namespace"] == "alice"


def test_the_llm_sees_the_text_with_its_date_not_the_bookkeeping(seeded: ElasticMemoryAtlas) -> None:
    [hit] = AtlasRetriever(atlas=seeded, namespace="alice", similarity_top_k=1).retrieve("oat milk")
    for_llm = hit.node.get_content(metadata_mode=MetadataMode.LLM)
    assert "oat milk" in for_llm and "timestamp:" in for_llm and "type: preference" in for_llm
    assert "score_breakdown" not in for_llm and "namespace" not in for_llm
    assert hit.node.get_content(metadata_mode=MetadataMode.EMBED) == hit.node.get_content()


def test_namespaces_and_sessions_are_fenced(seeded: ElasticMemoryAtlas) -> None:
    def texts(**kwargs: object) -> set[str]:
        return {n.node.get_content() for n in AtlasRetriever(atlas=seeded, **kwargs).retrieve("coffee Lisbon")}

    assert texts(namespace="alice") == {"Alice prefers oat milk in her coffee.",
                                        "Alice is flying to Lisbon on June 12."}
    assert texts(namespace="bob") == {"Bob prefers black coffee."}
    assert texts(namespace="alice", session_id="s2") == {"Alice is flying to Lisbon on June 12."}
    both = AtlasRetriever(atlas=seeded, namespace="alice", session_id="s2", cross_session=True).retrieve("coffee")
    assert {n.node.metadata["other_session"] for n in both} == {True, False}
    assert texts(namespace="carol") == set()


def test_metadata_filters_are_translated(seeded: ElasticMemoryAtlas) -> None:
    def texts(filters: MetadataFilters | dict[str, object]) -> list[str]:
        retriever = AtlasRetriever(atlas=seeded, namespace="alice", filters=filters)
        return [n.node.get_content() for n in retriever.retrieve("Alice")]

    eq = MetadataFilters(filters=[MetadataFilter(key="type", value="plan")])
    assert texts(eq) == ["Alice is flying to Lisbon on June 12."]
    contains = MetadataFilters(filters=[MetadataFilter(key="tags", value="food", operator=FilterOperator.CONTAINS)])
    assert texts(contains) == ["Alice prefers oat milk in her coffee."]
    nested = MetadataFilters(filters=[MetadataFilters(filters=[
        MetadataFilter(key="priority", value=1, operator=FilterOperator.GT),
        MetadataFilter(key="priority", value=3, operator=FilterOperator.LT)])])
    assert texts(nested) == ["Alice is flying to Lisbon on June 12."]
    assert texts({"type": {"$in": ["preference"]}}) == ["Alice prefers oat milk in her coffee."]
    with pytest.raises(InvalidInputError, match="text_match"):
        AtlasRetriever(atlas=seeded, filters=MetadataFilters(filters=[
            MetadataFilter(key="type", value="pl", operator=FilterOperator.TEXT_MATCH)]))


def test_reinforce_is_optional(seeded: ElasticMemoryAtlas) -> None:
    [before] = seeded.memories(namespace="alice", session_id="s1")
    AtlasRetriever(atlas=seeded, namespace="alice", reinforce=False).retrieve("oat milk")
    assert seeded.get(before.id).access_count == 0
    AtlasRetriever(atlas=seeded, namespace="alice").retrieve("oat milk")
    assert seeded.get(before.id).access_count == 1


async def test_async_retrieve(seeded: ElasticMemoryAtlas) -> None:
    retriever = AtlasRetriever(atlas=seeded, namespace="alice", similarity_top_k=1)
    [hit] = await retriever.aretrieve("Lisbon flight")
    assert hit.node.get_content() == "Alice is flying to Lisbon on June 12."
    assert await retriever.aretrieve(QueryBundle(query_str="  ")) == []


def test_in_a_retriever_query_engine(seeded: ElasticMemoryAtlas) -> None:
    llm = MockLLMWithChatMemoryOfLastCall(max_tokens=5, is_chat_model=True)
    engine = RetrieverQueryEngine.from_args(AtlasRetriever(atlas=seeded, namespace="alice", similarity_top_k=2),
                                            llm=llm)
    response = engine.query("When is Alice flying to Lisbon?")
    assert "Alice is flying to Lisbon on June 12." in {n.node.get_content() for n in response.source_nodes}
    prompt = "\n".join(m.content or "" for m in llm.last_chat_messages or [])
    assert "Alice is flying to Lisbon on June 12." in prompt and "Bob" not in prompt
    assert str(response) == "text text text text text"


class _HashingLlamaEmbedding(BaseEmbedding):
    """A LlamaIndex embedding model (deterministic, offline) to plug into the atlas."""

    def _vectors(self, texts: Sequence[str]) -> list[list[float]]:
        return np.asarray(HashingEmbedder(dim=32).embed(list(texts))).tolist()  # type: ignore[no-any-return]

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._vectors([query])[0]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._vectors([text])[0]


def test_any_llama_index_embedding_can_embed_for_the_atlas() -> None:
    retriever = AtlasRetriever.from_defaults(namespace="alice", embed_model=_HashingLlamaEmbedding())
    assert retriever.atlas.embedder.dim == 32
    retriever.atlas.add_memories(["Alice plays the cello.", "The train leaves at noon."], namespace="alice")
    assert retriever.retrieve("cello")[0].node.get_content() == "Alice plays the cello."


def test_arguments_are_checked(seeded: ElasticMemoryAtlas) -> None:
    with pytest.raises(ValueError, match="similarity_top_k"):
        AtlasRetriever(atlas=seeded, similarity_top_k=0)
    with pytest.raises(ValueError, match="namespace"):
        AtlasRetriever(atlas=seeded, namespace="")
    assert "namespace='alice'" in repr(AtlasRetriever(atlas=seeded, namespace="alice"))
