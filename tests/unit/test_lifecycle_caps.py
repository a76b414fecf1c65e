"""Caps and expiry: byte accounting, the byte cap, pins, the cleanup rule and TTL bookkeeping."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared_core import AtlasConfig, ElasticMemoryAtlas, HashingEmbedder, ManualClock
from shared_core.engine.lifecycle import namespaces as _namespaces
from shared_core.engine.lifecycle.capacity import EDGE_OVERHEAD, NODE_OVERHEAD, PARTITION_OVERHEAD, node_bytes
from shared_core.store.base import KeywordIndexBase

Build = Callable[..., ElasticMemoryAtlas]


def _accounted(atlas: ElasticMemoryAtlas) -> int:
    """The byte count recomputed from scratch, to check the incremental one."""
    total = 0
    for ns in atlas.backend.namespaces():
        part = atlas.backend.partition(ns)
        assert part is not None
        total += sum(node_bytes(n, part.vectors.dim) for n in part.graph.nodes())
        total += part.graph.edge_count() * EDGE_OVERHEAD
        total += part.vectors.nbytes() - len(part.vectors) * part.vectors.dim * 4  # type: ignore[attr-defined]
        total += PARTITION_OVERHEAD
    held = atlas._life.held  # turns the write filter kept in working memory: text and overhead, no vector
    return total + sum(NODE_OVERHEAD + 2 * len(n.content.encode("utf-8")) for n in held)


def test_bytes_are_accounted_incrementally_and_exactly(make_atlas: Build) -> None:
    atlas = make_atlas()
    assert atlas.stats().bytes_used == 0
    a = atlas.add_memory("User prefers oat milk", namespace="u", session_id="s", metadata={"type": "pref"})
    atlas.add_memories([f"fact number {i} about the kitchen" for i in range(40)], namespace="u", session_id="s")
    atlas.update_memory(a.id, "User now prefers soy milk")
    atlas.add_memory("Bob's PIN is 4921", namespace="bob")
    assert atlas.stats().bytes_used == _accounted(atlas) > 40 * 1000
    per_ns = atlas.stats(namespace="bob").bytes_used
    assert 0 < per_ns < atlas.stats().bytes_used
    for node in atlas.memories(namespace="u", include_history=True)[:30]:
        atlas.forget(node.id)
    atlas.add_memories(["the garage door is painted green", "The garage door is painted green!"], namespace="u")
    assert atlas.compress().absorbed == 1  # the merged text is indexed and counted (`node_bytes`)
    assert atlas.stats().bytes_used == _accounted(atlas)


def test_the_byte_cap_holds_under_a_stream_of_writes(clock: ManualClock) -> None:
    cap = 300_000
    atlas = ElasticMemoryAtlas(config=AtlasConfig(max_bytes=cap, eviction_batch=0.1), embedder=HashingEmbedder(dim=16),
                               clock=clock)
    pins = [atlas.add_memory(f"pinned fact {i}", namespace="u", pinned=True).id for i in range(5)]
    vectors = np.random.default_rng(0).normal(size=(100, 16)).astype(np.float32)
    for start in range(0, 20_000, 100):
        atlas.add_memories([{"content": f"stream item {i} about topic {i % 13}", "embedding": vectors[i % 100]}
                            for i in range(start, start + 100)], namespace=f"ns{start % 3}", session_id="s")
        clock.advance(30)
        assert atlas.stats().bytes_used <= cap
    assert all(atlas.get(p).pinned for p in pins)
    stats = atlas.stats()
    assert stats.evictions == 20_005 - stats.nodes and stats.bytes_used == _accounted(atlas) > cap * 0.8
    reasons = {e.reason.split(";")[0] for e in atlas.events.events(kind="evict")}
    assert reasons == {f"max_bytes {cap}"}


@settings(max_examples=30, deadline=None)
@given(writes=st.lists(st.tuples(st.booleans(), st.floats(0.0, 3.0), st.integers(0, 3)), min_size=1, max_size=60),
       cap=st.sampled_from([("max_nodes", 5), ("max_bytes", 20_000)]))
def test_property_eviction_never_removes_pins(writes: list[tuple[bool, float, int]], cap: tuple[str, int]) -> None:
    clock = ManualClock(1_700_000_000.0)
    atlas = ElasticMemoryAtlas(config=AtlasConfig(**{cap[0]: cap[1]}, prune_below=0.5, prune_every=3),
                               embedder=HashingEmbedder(dim=16), clock=clock)
    pinned = []
    for i, (pin, importance, ns) in enumerate(writes):
        node = atlas.add_memory(f"memory {i} in space {ns}", namespace=f"n{ns}", pinned=pin, importance=importance)
        if pin:
            pinned.append(node.id)
        clock.advance(days=5)
    assert all(atlas.get(p).pinned for p in pinned)
    evicted = {e.node_id for e in atlas.events.events(kind="evict")}
    assert not evicted & set(pinned)


def test_the_cleanup_rule_removes_weak_unused_memories(clock: ManualClock) -> None:
    atlas = ElasticMemoryAtlas(config=AtlasConfig(prune_below=0.2, prune_every=1), embedder=HashingEmbedder(dim=32),
                               clock=clock)
    weak = atlas.add_memory("a passing remark about clouds", namespace="u", importance=0.3)
    used = atlas.add_memory("the wifi password is hunter2", namespace="u", importance=0.3)
    pin = atlas.add_memory("pinned but weak", namespace="u", importance=0.1, pinned=True)
    strong = atlas.add_memory("the user's name is Ana", namespace="u", importance=3.0)
    clock.advance(days=20)
    atlas.retrieve("wifi password", namespace="u", top_k=1)  # used 20 days ago: not idle for 30 days
    clock.advance(days=15)  # weak: 0.3 * 2^(-35/30) = 0.13 < 0.2 and unused 35 days
    atlas.add_memory("a new write runs the rule", namespace="u")
    left = {n.id for n in atlas.memories(namespace="u")}
    assert weak.id not in left and {used.id, pin.id, strong.id} <= left
    [event] = atlas.events.events(kind="evict")
    assert event.node_id == weak.id and event.reason == "cleanup rule: weight 0.13 < 0.2 and unused for 35 days"


def test_above_the_pressure_mark_cleanup_is_stronger(clock: ManualClock) -> None:
    def run(cap: int | None) -> tuple[set[str], int]:
        c = ManualClock(clock.now())
        atlas = ElasticMemoryAtlas(config=AtlasConfig(max_bytes=cap, prune_below=0.2, prune_every=4),
                                   embedder=HashingEmbedder(dim=16), clock=c)
        atlas.add_memories([{"content": f"old note {i}", "importance": 0.3} for i in range(20)], namespace="u")
        c.advance(days=20)  # weight 0.3 * 2^(-20/30) = 0.19 < 0.2, unused for 20 days (< 30, > 30 / 4)
        atlas.add_memory("trigger", namespace="u")
        return {e.reason for e in atlas.events.events(kind="evict")}, atlas.stats().bytes_used

    reasons, used = run(None)
    assert reasons == set()  # no cap: the rule waits for 30 idle days
    reasons, _ = run(int(used / 0.8))  # the same memories fill 80% of this cap: pressure, not over
    assert reasons == {"cleanup rule: weight 0.19 < 0.2 and unused for 20 days (memory pressure)"}


def test_expiry_bookkeeping_does_not_grow_with_forgotten_ttls(clock: ManualClock) -> None:
    atlas = ElasticMemoryAtlas(embedder=HashingEmbedder(dim=16), clock=clock)
    for i in range(3000):
        node = atlas.add_memory(f"temporary {i}", namespace="u", ttl=10 * 86_400)
        atlas.forget(node.id)
    assert len(atlas._life._expiry) <= 2 * len(atlas) + 1024 + 1
    atlas.add_memory("short", namespace="u", ttl=5)
    clock.advance(6)
    atlas.add_memory("sweep", namespace="u")
    assert atlas.count(namespace="u") == 1 and atlas.stats().expirations == 1


def test_threads_writing_compressing_and_saving_keep_the_books_exact(clock: ManualClock, tmp_path: object) -> None:
    import threading
    from concurrent.futures import ThreadPoolExecutor
    from pathlib import Path

    atlas = ElasticMemoryAtlas(config=AtlasConfig.managed(max_bytes=400_000, compress_every=25, chapter_size=30),
                               embedder=HashingEmbedder(dim=32), clock=clock)
    barrier = threading.Barrier(6)
    errors: list[BaseException] = []

    def worker(w: int) -> None:
        try:
            barrier.wait()
            for i in range(60):
                atlas.add_memory(f"worker {w} logged value {i % 7} for sensor {w}", namespace=f"n{w % 2}",
                                 session_id=f"s{w}")
                atlas.add_memory("ok thanks", namespace=f"n{w % 2}", session_id=f"s{w}")
                if i % 20 == 0:
                    atlas.compress()
                    atlas.save(Path(str(tmp_path)) / f"w{w}.atlas")
                atlas.build_context("sensor value", namespace=f"n{w % 2}", session_id=f"s{w}", token_budget=80)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    with ThreadPoolExecutor(6) as pool:
        list(pool.map(worker, range(6)))
    assert errors == []
    assert len(atlas._life.held) > 0 and atlas.stats().bytes_used == _accounted(atlas)
    assert atlas._life._node_bytes == sum(atlas._life.size(p, n) for ns in atlas.namespaces()
                                          if (p := atlas.backend.partition(ns)) is not None for n in p.graph.nodes())
    loaded = ElasticMemoryAtlas.load(Path(str(tmp_path)) / "w0.atlas")
    assert len(loaded) > 0


def test_a_failed_write_leaves_the_byte_count_as_it_was(make_atlas: Build) -> None:
    """The memories of a failed write are removed without ever being counted (a memory's bytes
    are recomputed from its node, not kept per id): the count must not drop below the truth."""
    atlas = make_atlas()
    atlas.add_memories(["alpha", "beta"], namespace="u", session_id="s")
    part = atlas.backend.partition("u")
    assert part is not None
    before, memories_before = atlas.stats().bytes_used, atlas._life._node_bytes
    inner = part.keywords

    class Failing(KeywordIndexBase):
        def add(self, *args: object, **kwargs: object) -> None:
            raise OSError("disk on fire")

        def __getattr__(self, name: str) -> object:
            return getattr(inner, name)

    part.keywords = Failing()  # type: ignore[assignment]
    with pytest.raises(OSError, match="disk on fire"):
        atlas.add_memories(["gamma", "delta", "epsilon"], namespace="u", session_id="s")
    part.keywords = inner
    # the memories' count is as it was; the total may rise by the vector rows the failed write
    # made room for, which the index keeps (as spare capacity)
    assert atlas._life._node_bytes == memories_before
    after = atlas.stats().bytes_used
    assert after == _accounted(atlas) >= before
    atlas.forget(atlas.memories(namespace="u")[0].id)
    assert atlas.stats().bytes_used == _accounted(atlas) < after


def _after_write_one_by_one(life: object, now: float, *, protect: set[str]) -> None:
    """`Lifecycle.after_write` as it was, memory by memory: the reference for the batched one."""
    state = life.engine  # type: ignore[attr-defined]
    for nid in protect:
        ns = state.where.get(nid)
        part = state.backend.partition(ns) if ns is not None else None
        node = part.graph.get_node(nid) if part is not None else None
        if part is not None and node is not None:
            life.account(part, node)  # type: ignore[attr-defined]
            life._mark(part.namespace, nid)  # type: ignore[attr-defined]
            life._since_compress[part.namespace] += 1  # type: ignore[attr-defined]
    life._since_prune += len(protect)  # type: ignore[attr-defined]
    life.enforce(now, protect=protect)  # type: ignore[attr-defined]


def _dirty_texts(atlas: ElasticMemoryAtlas) -> dict[str, list[str] | None]:
    out: dict[str, list[str] | None] = {}
    for ns, dirty in atlas._life._dirty.items():
        part = atlas.backend.partition(ns)
        assert part is not None
        out[ns] = None if dirty is None else sorted(n.content for i in dirty if (n := part.graph.get_node(i)))
    return out


def test_after_write_accounts_and_marks_as_memory_by_memory(make_atlas: Build, monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    """Bytes, dirty sets (one namespace's past its limit, so set to "everything"), compression
    counters: the same whether each memory is settled alone or a write's memories together."""
    atlases = [make_atlas(), make_atlas()]
    monkeypatch.setattr(atlases[1]._life, "after_write", _after_write_one_by_one.__get__(atlases[1]._life))
    for atlas in atlases:
        atlas.add_memories([f"note {i} on the garden" for i in range(30)], namespace="a", session_id="s")
        atlas.compress()  # dirty sets start empty: later writes mark their memories
        atlas.add_memories([{"content": f"fact {i} of {j}", "namespace": ns, "metadata": {"i": i} if i % 3 else None}
                            for j, ns in enumerate(["a", "b", "a"]) for i in range(40)], namespace="a")
        atlas.add_memories([f"bulk line {i}" for i in range(4200)], namespace="b")  # over 4,096 and half: None
    life, reference = atlases[0]._life, atlases[1]._life
    assert life._node_bytes == reference._node_bytes == _accounted(atlases[0]) - sum(
        p.graph.edge_count() * EDGE_OVERHEAD + p.vectors.nbytes() - len(p.vectors) * p.vectors.dim * 4
        + PARTITION_OVERHEAD
        for ns in atlases[0].backend.namespaces() if (p := atlases[0].backend.partition(ns)) is not None)
    assert _dirty_texts(atlases[0]) == _dirty_texts(atlases[1])  # (ids are random: compared by text)
    assert life._dirty.get("b") is None and life._dirty.get("a")
    assert life._since_compress == reference._since_compress and life._since_prune == reference._since_prune


def test_the_byte_cap_holds_with_float16_approximate_indexes(clock: ManualClock) -> None:
    """Past ``ann_threshold`` a namespace's vectors are stored as float16 (2 bytes a component):
    the accounting counts 4 a row (`capacity.node_bytes`) and corrects the sum to the index's
    own bytes (`_namespaces._vector_slack`: the lists' room, labels, direct map and centroids), so
    the cap holds through evictions and the count is what the index holds, not 4 bytes a
    component."""
    cap = 600_000
    atlas = ElasticMemoryAtlas(config=AtlasConfig(max_bytes=cap, eviction_batch=0.1, ann_threshold=64),
                               embedder=HashingEmbedder(dim=64), clock=clock)
    for start in range(0, 4000, 200):
        atlas.add_memories([f"stream item {i} about topic {i % 17}, colour {i % 7}" for i in range(start, start + 200)],
                           namespace=f"ns{start // 200 % 2}", session_id="s")
        clock.advance(30)
        assert atlas.stats().bytes_used <= cap
    stats = atlas.stats()
    parts = [atlas.backend.partition(ns) for ns in ("ns0", "ns1")]
    assert all(p is not None and p.vectors._impl.vector_dtype == "float16" for p in parts)  # type: ignore[union-attr]
    assert stats.evictions > 0 and stats.bytes_used == _accounted(atlas) > cap * 0.8
    for part in parts:  # the vectors count for what the index holds (at this size, mostly its fixed parts)
        assert part is not None
        rows = len(part.vectors) * part.vectors.dim * 4
        assert _namespaces._vector_slack(part) == part.vectors.nbytes() - rows  # type: ignore[attr-defined]
