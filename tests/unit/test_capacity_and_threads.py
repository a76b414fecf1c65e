"""Eviction under max_nodes (order, pins, event log) and one atlas shared by threads and tasks."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

from shared_core import AtlasConfig, AtlasEvent, ElasticMemoryAtlas, HashingEmbedder, ManualClock


def test_eviction_takes_the_weakest_isolated_memories_first(clock: ManualClock) -> None:
    atlas = ElasticMemoryAtlas(config=AtlasConfig(max_nodes=4, eviction_batch=0.25, similar_top=0,
                                                  link_temporal=False),
                               embedder=HashingEmbedder(dim=64), clock=clock)
    events: list[AtlasEvent] = []
    atlas.subscribe(events.append)
    weak = atlas.add_memory("weak and isolated", namespace="u", importance=0.2)
    weak_linked = atlas.add_memory("weak but linked", namespace="u", importance=0.2)
    strong = atlas.add_memory("strong and isolated", namespace="u", importance=2.0)
    atlas.link(weak_linked.id, strong.id, relation="related_to")
    pin = atlas.add_memory("pinned and weakest", namespace="u", importance=0.01, pinned=True)
    assert len(atlas) == 4
    clock.advance(days=1)
    atlas.add_memory("one more", namespace="u")  # over the cap: evict to 3 (4 * 0.75)
    remaining = {n.content for n in atlas.memories(namespace="u")}
    assert "weak and isolated" not in remaining  # isolated goes before linked
    assert {"pinned and weakest", "weak but linked", "strong and isolated", "one more"} - remaining == {
        "weak but linked"}
    evicted = [e for e in events if e.kind == "evict"]
    assert [e.node_id for e in evicted] == [weak.id, weak_linked.id]
    assert all("capacity 4" in e.reason for e in evicted)
    assert atlas.get(pin.id).pinned
    assert atlas.stats().evictions == 2


def test_pins_are_never_evicted_even_when_everything_is_pinned(clock: ManualClock) -> None:
    atlas = ElasticMemoryAtlas(config=AtlasConfig(max_nodes=2), embedder=HashingEmbedder(dim=32), clock=clock)
    atlas.add_memories([{"content": f"pinned {i}", "pinned": True} for i in range(5)], namespace="u")
    assert len(atlas) == 5 and atlas.stats().evictions == 0


def test_capacity_holds_under_a_long_stream(clock: ManualClock) -> None:
    atlas = ElasticMemoryAtlas(config=AtlasConfig(max_nodes=50), embedder=HashingEmbedder(dim=32), clock=clock)
    for i in range(300):
        clock.advance(1)
        atlas.add_memory(f"stream item {i}", namespace=f"ns{i % 3}")
        assert len(atlas) <= 50
    assert atlas.stats().evictions == 250


def test_concurrent_threads_lose_no_writes(clock: ManualClock) -> None:
    atlas = ElasticMemoryAtlas(embedder=HashingEmbedder(dim=64), clock=clock)
    errors: list[BaseException] = []
    barrier = threading.Barrier(8)

    def worker(w: int) -> None:
        try:
            barrier.wait()
            for i in range(40):
                atlas.add_memory(f"worker {w} fact {i}", namespace=f"ns{w % 2}", session_id=f"s{w}")
                atlas.retrieve(f"fact {i}", namespace=f"ns{w % 2}", top_k=3)
                atlas.build_context("fact", namespace=f"ns{w % 2}", session_id=f"s{w}", token_budget=100)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(worker, range(8)))
    assert errors == []
    assert len(atlas) == 320
    assert atlas.count(namespace="ns0") == atlas.count(namespace="ns1") == 160
    for w in range(8):
        contents = [n.content for n in atlas.memories(namespace=f"ns{w % 2}", session_id=f"s{w}")]
        assert contents == [f"worker {w} fact {i}" for i in range(40)]  # in order, none lost
    stats = atlas.stats()
    assert stats.nodes == 320 and stats.edges_by_relation.get("before") == 8 * 39


def test_asyncio_tasks_share_one_atlas() -> None:
    atlas = ElasticMemoryAtlas(embedder=HashingEmbedder(dim=64), clock=ManualClock())

    async def task(t: int) -> int:
        await atlas.aadd_memories([f"task {t} note {i}" for i in range(10)], namespace="u", session_id=f"t{t}")
        hits = await atlas.aretrieve(f"task {t} note", namespace="u", session_id=f"t{t}", top_k=10)
        return len(hits)

    async def main() -> list[int]:
        return await asyncio.gather(*(task(t) for t in range(10)))

    assert asyncio.run(main()) == [10] * 10
    assert len(atlas) == 100
