"""Oversized queries are refused at ``AtlasConfig.max_query_chars``, on both backends and through
every caller that passes the caller's own query (the adapters' retrievers and tools, MCP).

The issue's attack: a 10 MB query took 42 s in `retrieve` and 43 s in `build_context`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from shared_core import AtlasConfig, ElasticMemoryAtlas, InvalidInputError

LIMIT = 300


@pytest.fixture
def small(make_atlas: Callable[..., ElasticMemoryAtlas]) -> ElasticMemoryAtlas:
    atlas = make_atlas(max_query_chars=LIMIT)
    atlas.add_memories(["The spare key is under the blue pot", "Bob plays the cello"], namespace="n",
                       session_id="s")
    return atlas


def test_the_default_limit_is_a_few_thousand_characters() -> None:
    assert AtlasConfig().max_query_chars == 8192
    for bad in (0, -1, 1.5, True, None):
        with pytest.raises(InvalidInputError, match="max_query_chars"):
            AtlasConfig(max_query_chars=bad)


def test_a_query_at_the_limit_is_answered(small: ElasticMemoryAtlas) -> None:
    query = ("spare key " * LIMIT)[:LIMIT]
    assert small.retrieve(query, namespace="n", top_k=1)[0].node.content == "The spare key is under the blue pot"
    assert "spare key" in small.build_context(query, namespace="n", token_budget=100).text


@pytest.mark.parametrize("size", [LIMIT + 1, 10 * LIMIT, 10_000_000])
async def test_a_longer_query_is_refused_naming_the_limit(small: ElasticMemoryAtlas, size: int) -> None:
    query = "spare key " * (size // 10) + "x" * (size % 10)
    before = [(n.id, n.weight, n.access_count) for n in small.memories(namespace="n")]
    calls: list[Callable[[], Any]] = [
        lambda: small.retrieve(query, namespace="n"),
        lambda: small.build_context(query, namespace="n", token_budget=100),
        lambda: small.retrieve(query, namespace="nobody"),
    ]
    for call in calls:
        with pytest.raises(InvalidInputError, match=f"max_query_chars={LIMIT}") as info:
            call()
        assert f"{size:,} characters" in str(info.value) and len(str(info.value)) < 300
    with pytest.raises(InvalidInputError, match="max_query_chars"):
        await small.aretrieve(query, namespace="n")
    with pytest.raises(InvalidInputError, match="max_query_chars"):
        await small.abuild_context(query, namespace="n", token_budget=100)
    assert [(n.id, n.weight, n.access_count) for n in small.memories(namespace="n")] == before


def test_the_langchain_retriever_and_tools_refuse_it(small: ElasticMemoryAtlas) -> None:
    from langchain_atlas import AtlasRetriever, create_memory_tools

    query = "spare key " * LIMIT
    with pytest.raises(InvalidInputError, match="max_query_chars"):
        AtlasRetriever(atlas=small, namespace="n").invoke(query)
    _, recall, _ = create_memory_tools(small, namespace="n")
    with pytest.raises(InvalidInputError, match="max_query_chars"):
        recall.invoke({"query": query})


def test_the_llamaindex_retriever_refuses_it(small: ElasticMemoryAtlas) -> None:
    from llamaindex_atlas import AtlasRetriever

    with pytest.raises(InvalidInputError, match="max_query_chars"):
        AtlasRetriever(atlas=small, namespace="n").retrieve("spare key " * LIMIT)


def test_chat_memories_recall_for_the_end_of_a_long_message(small: ElasticMemoryAtlas) -> None:
    """A chat memory's query is the conversation itself, not a search the caller wrote: a long
    message is cut to its last ``max_query_chars`` characters instead of breaking the chat."""
    from langchain_atlas import AtlasMemory

    pasted = "lorem ipsum dolor " * 1000 + " where is the spare key?"
    memory = AtlasMemory(atlas=small, namespace="n", session_id="other", token_budget=200, cross_session=True)
    assert "blue pot" in memory.load_memory_variables({"input": pasted})["history"]


def test_chat_memories_of_llamaindex_recall_for_the_end_of_a_long_message(small: ElasticMemoryAtlas) -> None:
    from llama_index.core.base.llms.types import ChatMessage

    from llamaindex_atlas import AtlasMemory, AtlasMemoryBlock

    pasted = "lorem ipsum dolor " * 1000 + " where is the spare key?"
    memory = AtlasMemory.from_defaults(atlas=small, namespace="n", session_id="other", token_limit=2000)
    assert any("blue pot" in str(m.content) for m in memory.get(input=pasted))
    block = AtlasMemoryBlock(atlas=small, namespace="n", token_limit=200)
    import asyncio

    assert "blue pot" in asyncio.run(block._aget([ChatMessage(role="user", content=pasted)]))
