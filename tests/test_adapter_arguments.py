"""Adapters take their framework's argument names, reject misnamed ones with the right name, and
agree on their defaults (issue 26, item 3)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import langchain_atlas as lc
import llamaindex_atlas as li
from shared_core import ElasticMemoryAtlas, HashingEmbedder, InvalidInputError


@pytest.fixture
def atlas() -> ElasticMemoryAtlas:
    return ElasticMemoryAtlas(embedder=HashingEmbedder())


MISNAMED: list[tuple[str, Callable[..., Any], dict[str, Any], str]] = [
    ("langchain retriever top_k", lc.AtlasRetriever, {"namespace": "a", "top_k": 1}, "use k="),
    ("langchain retriever similarity_top_k", lc.AtlasRetriever, {"namespace": "a", "similarity_top_k": 1}, "use k="),
    ("langchain memory token_limit", lc.AtlasMemory, {"namespace": "a", "token_limit": 50}, "use token_budget="),
    ("langchain memory misspelt", lc.AtlasMemory, {"namespace": "a", "token_budgte": 50}, "use token_budget="),
    ("llamaindex memory token_budget", li.AtlasMemory, {"token_budget": 50}, "use token_limit="),
    ("llamaindex memory from_defaults", li.AtlasMemory.from_defaults, {"token_budget": 50}, "use token_limit="),
    ("llamaindex retriever k", li.AtlasRetriever, {"k": 1}, "use similarity_top_k="),
    ("llamaindex retriever top_k", li.AtlasRetriever, {"top_k": 1}, "use similarity_top_k="),
    ("llamaindex block token_budget", li.AtlasMemoryBlock, {"token_budget": 50}, "use token_limit="),
    ("llamaindex block unknown", li.AtlasMemoryBlock, {"colour": "red"}, "it takes "),
]


@pytest.mark.parametrize(("factory", "kwargs", "hint"), [m[1:] for m in MISNAMED], ids=[m[0] for m in MISNAMED])
def test_a_misnamed_argument_is_an_error_naming_the_right_one(atlas: ElasticMemoryAtlas, factory: Callable[..., Any],
                                                              kwargs: dict[str, Any], hint: str) -> None:
    with pytest.raises(InvalidInputError, match=hint) as info:
        factory(atlas=atlas, **kwargs)
    assert repr(next(k for k in kwargs if k != "namespace")) in str(info.value)


def test_langchain_memory_takes_langchains_max_token_limit(atlas: ElasticMemoryAtlas) -> None:
    assert lc.AtlasMemory(atlas=atlas, namespace="a", max_token_limit=50).token_budget == 50
    with pytest.raises(InvalidInputError, match="pass one"):
        lc.AtlasMemory(atlas=atlas, namespace="a", max_token_limit=50, token_budget=60)


def test_right_names_still_work(atlas: ElasticMemoryAtlas) -> None:
    assert lc.AtlasRetriever(atlas=atlas, namespace="a", k=1, tags=["t"]).k == 1
    assert li.AtlasRetriever(atlas=atlas, similarity_top_k=1).similarity_top_k == 1
    assert li.AtlasMemory(atlas=atlas, token_limit=50).token_limit == 50


def test_defaults_agree_across_adapters(atlas: ElasticMemoryAtlas) -> None:
    lc_memory, li_memory = lc.AtlasMemory(atlas=atlas, namespace="a"), li.AtlasMemory(atlas=atlas, namespace="a")
    assert lc_memory.token_budget == li_memory.token_limit == li.AtlasMemory.from_defaults(atlas=atlas).token_limit
    assert lc_memory.cross_session is li_memory.cross_session is True
    assert lc_memory.style == li_memory.style
    lc_retriever, li_retriever = lc.AtlasRetriever(atlas=atlas, namespace="a"), li.AtlasRetriever(atlas=atlas)
    assert lc_retriever.k == li_retriever.similarity_top_k
    assert lc_retriever.cross_session == li_retriever.cross_session
    assert lc_retriever.reinforce == li_retriever.reinforce
