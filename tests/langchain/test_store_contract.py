"""A BaseStore contract, written from InMemoryStore's documented behaviour, run against both stores.

LangGraph ships no conformance suite for stores. Each test here follows what ``BaseStore`` and
``InMemoryStore`` document (put/get/delete, prefix search with filters and pagination, semantic
search, namespace listing, validation, async forms) and runs against LangGraph's own
``InMemoryStore`` and against ``AtlasStore``, so a failure on ours alone is a real deviation.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

import pytest
from langgraph.store.base import BaseStore, GetOp, InvalidNamespaceError, ListNamespacesOp, PutOp, SearchOp
from langgraph.store.memory import InMemoryStore

from langchain_atlas import AtlasStore
from shared_core import ElasticMemoryAtlas

from ._fakes import HashingEmbeddings

DOCS = {
    "py": {"text": "Python tutorial: list comprehensions and generators", "kind": "tutorial", "level": 1},
    "ts": {"text": "TypeScript guide to generics and type narrowing", "kind": "guide", "level": 2},
    "rs": {"text": "Rust ownership and borrowing explained", "kind": "guide", "level": 3},
    "go": {"text": "Go concurrency with goroutines and channels", "kind": "tutorial", "level": 2},
}


@pytest.fixture(params=["InMemoryStore", "AtlasStore"])
def store(request: pytest.FixtureRequest, make_atlas: Callable[..., ElasticMemoryAtlas]) -> BaseStore:
    if request.param == "InMemoryStore":
        return InMemoryStore(index={"dims": 256, "embed": HashingEmbeddings(), "fields": ["text"]})
    return AtlasStore(atlas=make_atlas(), fields=["text"])


def _load(store: BaseStore, namespace: tuple[str, ...] = ("docs", "lang")) -> None:
    for key, value in DOCS.items():
        store.put(namespace, key, value)


def test_put_then_get_returns_the_whole_value(store: BaseStore) -> None:
    value = {"text": "hello", "nested": {"a": [1, 2, {"b": None}]}, "flag": True, "n": 1.5}
    store.put(("users", "alice"), "prefs", value)
    item = store.get(("users", "alice"), "prefs")
    assert item is not None
    assert (item.key, item.namespace, item.value) == ("prefs", ("users", "alice"), value)
    assert isinstance(item.created_at, datetime) and item.created_at.tzinfo is not None
    assert item.updated_at >= item.created_at


def test_get_of_a_missing_key_or_namespace_is_none(store: BaseStore) -> None:
    store.put(("users", "alice"), "prefs", {"text": "x"})
    assert store.get(("users", "alice"), "nope") is None
    assert store.get(("users", "bob"), "prefs") is None
    assert store.get(("users",), "prefs") is None  # a prefix is not the namespace


def test_put_replaces_the_value(store: BaseStore) -> None:
    store.put(("a",), "k", {"text": "first", "old_field": 1})
    first = store.get(("a",), "k")
    store.put(("a",), "k", {"text": "second"})
    item = store.get(("a",), "k")
    assert item is not None and first is not None
    assert item.value == {"text": "second"}
    assert item.updated_at >= first.updated_at
    assert len(store.search(("a",))) == 1


def test_the_stored_value_is_a_copy(store: BaseStore) -> None:
    value = {"text": "original"}
    store.put(("a",), "k", value)
    value["text"] = "mutated after put"
    item = store.get(("a",), "k")
    assert item is not None and item.value == {"text": "original"}


def test_delete(store: BaseStore) -> None:
    store.put(("a",), "k", {"text": "bye"})
    store.delete(("a",), "k")
    assert store.get(("a",), "k") is None
    store.delete(("a",), "never-existed")  # no error
    assert store.search(("a",)) == []


def test_search_scopes_to_the_namespace_prefix(store: BaseStore) -> None:
    store.put(("docs", "a"), "1", {"text": "one"})
    store.put(("docs", "b"), "2", {"text": "two"})
    store.put(("other",), "3", {"text": "three"})
    assert sorted(i.key for i in store.search(("docs",))) == ["1", "2"]
    assert [i.key for i in store.search(("docs", "b"))] == ["2"]
    assert sorted(i.key for i in store.search(())) == ["1", "2", "3"]
    assert store.search(("missing",)) == []
    item = store.search(("docs", "a"))[0]
    assert item.namespace == ("docs", "a") and item.value == {"text": "one"}


def test_filters_exact_and_operators(store: BaseStore) -> None:
    _load(store)
    ns = ("docs",)

    def keys(**kwargs: object) -> list[str]:
        return sorted(i.key for i in store.search(ns, limit=10, **kwargs))  # type: ignore[arg-type]

    assert keys(filter={"kind": "tutorial"}) == ["go", "py"]
    assert keys(filter={"kind": {"$eq": "guide"}}) == ["rs", "ts"]
    assert keys(filter={"kind": {"$ne": "guide"}}) == ["go", "py"]
    assert keys(filter={"level": {"$gt": 2}}) == ["rs"]
    assert keys(filter={"level": {"$gte": 2}}) == ["go", "rs", "ts"]
    assert keys(filter={"level": {"$lt": 2}}) == ["py"]
    assert keys(filter={"level": {"$lte": 2}}) == ["go", "py", "ts"]
    assert keys(filter={"level": {"$gte": 2, "$lt": 3}}) == ["go", "ts"]
    assert keys(filter={"kind": "tutorial", "level": 2}) == ["go"]
    assert keys(filter={"kind": "poem"}) == []


def test_limit_and_offset_page_through_results(store: BaseStore) -> None:
    for i in range(7):
        store.put(("log",), f"k{i}", {"text": f"entry {i}", "i": i})
    pages = [store.search(("log",), limit=3, offset=o) for o in (0, 3, 6, 9)]
    assert [len(p) for p in pages] == [3, 3, 1, 0]
    assert sorted(i.key for p in pages for i in p) == [f"k{i}" for i in range(7)]
    assert len(store.search(("log",))) == 7  # the default limit is 10


def test_semantic_search_ranks_by_query(store: BaseStore) -> None:
    _load(store)
    results = store.search(("docs",), query="python list comprehensions", limit=4)
    assert results[0].key == "py"
    assert all(r.score is not None for r in results)
    scores = [r.score for r in results]
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
    assert store.search(("docs",), query="goroutines and channels", limit=1)[0].key == "go"


def test_semantic_search_with_filter_and_pagination(store: BaseStore) -> None:
    _load(store)
    guides = store.search(("docs",), query="generics", filter={"kind": "guide"}, limit=5)
    assert guides[0].key == "ts" and {r.key for r in guides} <= {"ts", "rs"}
    first = store.search(("docs",), query="generics and ownership", limit=1)
    second = store.search(("docs",), query="generics and ownership", limit=1, offset=1)
    assert first and second and first[0].key != second[0].key


def test_list_namespaces(store: BaseStore) -> None:
    for ns in [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f"), ("a", "c", "f"),
               ("x", "v1")]:
        store.put(ns, "k", {"text": "t"})
    assert store.list_namespaces(prefix=("a", "b"), max_depth=3) == [("a", "b", "c"), ("a", "b", "d"), ("a", "b", "f")]
    assert store.list_namespaces(suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(max_depth=1) == [("a",), ("x",)]
    everything = store.list_namespaces()
    assert everything == sorted(everything) and len(everything) == 6
    assert store.list_namespaces(limit=2, offset=1) == everything[1:3]


@pytest.mark.parametrize("namespace", [("a.b",), ("",), ("langgraph", "x"), ()])
def test_invalid_namespaces_are_rejected_on_put(store: BaseStore, namespace: tuple[str, ...]) -> None:
    with pytest.raises(InvalidNamespaceError):
        store.put(namespace, "k", {"text": "t"})


def test_a_period_cannot_address_a_nested_namespace(store: BaseStore) -> None:
    store.put(("foo", "bar"), "k", {"text": "t"})
    try:  # ops sent to batch directly skip BaseStore's checks: a store may refuse them or miss
        result = store.batch([GetOp(("foo.bar",), "k")])[0]
    except InvalidNamespaceError:
        return
    assert result is None


def test_ttl_follows_supports_ttl(store: BaseStore) -> None:
    if not store.supports_ttl:  # LangGraph's InMemoryStore: refused
        with pytest.raises(NotImplementedError):
            store.put(("a",), "k", {"text": "t"}, ttl=5)
        return
    store.put(("a",), "k", {"text": "t"}, ttl=5)  # AtlasStore: tests/langchain/test_store_ttl.py
    assert store.get(("a",), "k").value == {"text": "t"}  # type: ignore[union-attr]


def test_unindexed_items_are_still_stored(store: BaseStore) -> None:
    store.put(("a",), "secret", {"text": "not for search", "kind": "private"}, index=False)
    item = store.get(("a",), "secret")
    assert item is not None and item.value["kind"] == "private"
    assert [i.key for i in store.search(("a",), filter={"kind": "private"})] == ["secret"]


def test_batch_returns_one_result_per_op_in_order(store: BaseStore) -> None:
    _load(store)
    results = store.batch([
        GetOp(("docs", "lang"), "py"),
        SearchOp(("docs",), filter={"kind": "guide"}, limit=10),
        ListNamespacesOp(),
        GetOp(("docs", "lang"), "missing"),
    ])
    assert len(results) == 4
    assert results[0].key == "py"  # type: ignore[union-attr]
    assert sorted(i.key for i in results[1]) == ["rs", "ts"]  # type: ignore[union-attr]
    assert results[2] == [("docs", "lang")]
    assert results[3] is None
    assert store.batch([PutOp(("docs", "lang"), "py", None)]) == [None]
    assert store.get(("docs", "lang"), "py") is None


async def test_async_forms(store: BaseStore) -> None:
    await store.aput(("users", "bob"), "m1", {"text": "Bob enjoys climbing"})
    await store.aput(("users", "bob"), "m2", {"text": "Bob works nights"})
    item = await store.aget(("users", "bob"), "m1")
    assert item is not None and item.value == {"text": "Bob enjoys climbing"}
    hits = await store.asearch(("users",), query="climbing", limit=1)
    assert hits[0].key == "m1"
    assert await store.alist_namespaces() == [("users", "bob")]
    await store.adelete(("users", "bob"), "m1")
    assert await store.aget(("users", "bob"), "m1") is None
