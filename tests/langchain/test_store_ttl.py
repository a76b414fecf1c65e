"""AtlasStore's TTL as LangGraph's BaseStore defines it: put(ttl=minutes), refresh on read,
TTLConfig defaults, and sweeping (issue 26, item 5)."""

from __future__ import annotations

import time

import pytest
from langgraph.store.base import BaseStore

from langchain_atlas import AtlasStore
from shared_core import ElasticMemoryAtlas, HashingEmbedder, InvalidInputError, ManualClock


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(1_700_000_000.0)


@pytest.fixture
def atlas(clock: ManualClock) -> ElasticMemoryAtlas:
    return ElasticMemoryAtlas(embedder=HashingEmbedder(), clock=clock)


def test_the_store_declares_ttl_support_as_basestore_expects(atlas: ElasticMemoryAtlas) -> None:
    store = AtlasStore(atlas=atlas, ttl={"default_ttl": 10, "refresh_on_read": False})
    assert isinstance(store, BaseStore) and store.supports_ttl is True
    assert store.ttl_config == {"default_ttl": 10, "refresh_on_read": False}


def test_an_item_expires_ttl_minutes_after_its_write(atlas: ElasticMemoryAtlas, clock: ManualClock) -> None:
    store = AtlasStore(atlas=atlas, fields=["text"])
    store.put(("cache",), "short", {"text": "short lived answer"}, ttl=1)
    store.put(("cache",), "long", {"text": "long lived answer"}, ttl=10)
    store.put(("cache",), "forever", {"text": "answer kept forever"})
    clock.advance(minutes=0.5)
    assert store.get(("cache",), "short", refresh_ttl=False) is not None
    clock.advance(minutes=0.6)
    assert store.get(("cache",), "short") is None
    assert sorted(i.key for i in store.search(("cache",))) == ["forever", "long"]
    assert "short" not in [i.key for i in store.search(("cache",), query="short lived answer")]
    assert store.get(("cache",), "long").value == {"text": "long lived answer"}  # type: ignore[union-attr]


def test_reads_refresh_the_ttl_unless_told_not_to(atlas: ElasticMemoryAtlas, clock: ManualClock) -> None:
    store = AtlasStore(atlas=atlas, fields=["text"])
    store.put(("s",), "read", {"text": "read often"}, ttl=1)
    store.put(("s",), "searched", {"text": "searched often"}, ttl=1)
    store.put(("s",), "unrefreshed", {"text": "read without refresh"}, ttl=1)
    clock.advance(seconds=45)
    assert store.get(("s",), "unrefreshed", refresh_ttl=False) is not None
    assert store.search(("s",), query="read without refresh", refresh_ttl=False)[0].key == "unrefreshed"
    for _ in range(3):
        assert store.get(("s",), "read") is not None
        assert [i.key for i in store.search(("s",), query="searched often", limit=1)] == ["searched"]
        clock.advance(seconds=45)
    assert store.get(("s",), "unrefreshed") is None  # 180 s after its write, never refreshed
    assert store.get(("s",), "read") is not None and store.get(("s",), "searched") is not None


def test_the_config_sets_default_ttl_and_refresh_on_read(atlas: ElasticMemoryAtlas, clock: ManualClock) -> None:
    store = AtlasStore(atlas=atlas, ttl={"default_ttl": 1, "refresh_on_read": False})
    store.put(("a",), "k", {"text": "t"})  # default_ttl applies
    store.put(("a",), "kept", {"text": "t"}, ttl=None)  # an explicit None keeps it forever
    clock.advance(seconds=40)
    assert store.get(("a",), "k") is not None  # a read that does not refresh
    clock.advance(seconds=40)
    assert store.get(("a",), "k") is None and store.get(("a",), "kept") is not None


def test_a_new_put_restarts_the_ttl(atlas: ElasticMemoryAtlas, clock: ManualClock) -> None:
    store = AtlasStore(atlas=atlas)
    store.put(("a",), "k", {"text": "v1"}, ttl=1)
    clock.advance(seconds=50)
    store.put(("a",), "k", {"text": "v2"}, ttl=1)
    clock.advance(seconds=50)
    assert store.get(("a",), "k").value == {"text": "v2"}  # type: ignore[union-attr]


def test_sweep_deletes_expired_items_from_the_atlas(atlas: ElasticMemoryAtlas, clock: ManualClock) -> None:
    store = AtlasStore(atlas=atlas)
    store.put(("a", "b"), "gone", {"text": "x"}, ttl=1)
    store.put(("a", "b"), "stays", {"text": "y"}, ttl=5)
    assert store.sweep_ttl() == 0
    clock.advance(minutes=2)
    assert atlas.count(namespace="a.b") == 2  # expired but not yet swept: hidden, still stored
    assert store.sweep_ttl() == 1
    assert [n.metadata["langgraph.key"] for n in atlas.memories(namespace="a.b")] == ["stays"]


def test_a_reopened_store_counts_the_ttl_from_the_last_write(atlas: ElasticMemoryAtlas, clock: ManualClock) -> None:
    AtlasStore(atlas=atlas).put(("a",), "k", {"text": "t"}, ttl=1)
    reopened = AtlasStore(atlas=atlas)
    clock.advance(seconds=30)
    assert reopened.get(("a",), "k").value == {"text": "t"}  # type: ignore[union-attr]
    fresh = AtlasStore(atlas=atlas)
    clock.advance(seconds=40)
    assert fresh.get(("a",), "k") is None
    assert fresh.search(("a",), query="t") == []
    assert fresh.sweep_ttl() == 1


async def test_async_ttl(atlas: ElasticMemoryAtlas, clock: ManualClock) -> None:
    store = AtlasStore(atlas=atlas)
    await store.aput(("a",), "k", {"text": "t"}, ttl=1)
    clock.advance(minutes=2)
    assert await store.aget(("a",), "k") is None
    assert await store.asweep_ttl() == 1


def test_the_sweeper_thread_sweeps_and_stops(atlas: ElasticMemoryAtlas, clock: ManualClock) -> None:
    store = AtlasStore(atlas=atlas)
    store.put(("a",), "k", {"text": "t"}, ttl=1)
    clock.advance(minutes=2)
    done = store.start_ttl_sweeper(sweep_interval_minutes=0.001)  # every 60 ms of wall time
    with pytest.raises(InvalidInputError, match="already running"):
        store.start_ttl_sweeper()
    deadline = time.monotonic() + 30
    while atlas.count(namespace="a") and time.monotonic() < deadline:
        time.sleep(0.02)
    assert atlas.count(namespace="a") == 0
    assert store.stop_ttl_sweeper(timeout=10) is True
    assert done.result(timeout=10) is None


@pytest.mark.parametrize("ttl", [0, -1, float("nan"), "5", True])
def test_a_bad_ttl_is_refused_and_nothing_is_written(atlas: ElasticMemoryAtlas, ttl: object) -> None:
    store = AtlasStore(atlas=atlas)
    with pytest.raises(InvalidInputError, match="ttl must be"):
        store.put(("a",), "k", {"text": "t"}, ttl=ttl)  # type: ignore[arg-type]
    assert atlas.count(namespace="a") == 0


@pytest.mark.parametrize("config", [{"default_ttl": 0}, {"sweep_interval": 5}, {"sweep_interval_minutes": -1}])
def test_a_bad_ttl_config_is_refused(atlas: ElasticMemoryAtlas, config: dict[str, object]) -> None:
    with pytest.raises(InvalidInputError):
        AtlasStore(atlas=atlas, ttl=config)  # type: ignore[arg-type]


def test_ttl_is_not_part_of_the_value(atlas: ElasticMemoryAtlas) -> None:
    store = AtlasStore(atlas=atlas)
    store.put(("a",), "k", {"text": "t"}, ttl=3)
    assert store.get(("a",), "k").value == {"text": "t"}  # type: ignore[union-attr]
    assert store.search(("a",))[0].value == {"text": "t"}
