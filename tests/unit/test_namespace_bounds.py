"""Many namespaces under the byte cap (issue 20, item 3): a namespace costs what it holds, an empty
one is dropped, and ``max_namespaces`` refuses a write past it."""

from __future__ import annotations

import threading
import tracemalloc
from collections.abc import Callable

import pytest

from shared_core import (
    AtlasConfig,
    ElasticMemoryAtlas,
    HashingEmbedder,
    InvalidInputError,
    InvertedKeywordIndex,
    ManualClock,
    MemoryNotFoundError,
    NamespaceLimitError,
)
from shared_core.engine.lifecycle.capacity import PARTITION_OVERHEAD
from shared_core.store.memory.backend import InProcessBackend, TieredVectorIndex

from .test_lifecycle_caps import _accounted

Build = Callable[..., ElasticMemoryAtlas]


def _atlas384(clock: ManualClock, **config: object) -> ElasticMemoryAtlas:
    """384 dimensions, as MiniLM: a row is 1,536 bytes, so space reserved per namespace shows."""
    return ElasticMemoryAtlas(config=AtlasConfig(**config), embedder=HashingEmbedder(dim=384),  # type: ignore[arg-type]
                              clock=clock)


def test_a_namespace_of_one_memory_costs_about_what_it_holds(clock: ManualClock) -> None:
    """Counted and allocated: a one-memory namespace reserved 64 vector rows (98 KB) before."""
    atlas = _atlas384(clock)
    atlas.add_memory("warm up", namespace="warm")
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        for i in range(200):
            atlas.add_memory(f"tenant {i} likes green tea", namespace=f"t{i}")
        allocated = (tracemalloc.get_traced_memory()[0] - start) / 200
    finally:
        tracemalloc.stop()
    counted = atlas.stats().bytes_used / 201
    assert counted < 3 * 1536 + PARTITION_OVERHEAD, counted
    assert allocated < 3 * 1536 + PARTITION_OVERHEAD, allocated
    assert atlas.stats().bytes_used == _accounted(atlas)


def test_forgetting_every_memory_drops_the_namespace(make_atlas: Build) -> None:
    atlas = make_atlas()
    kept = atlas.add_memory("Bob's PIN is 4921", namespace="bob")
    only_bob = atlas.stats().bytes_used
    nodes = atlas.add_memories([f"alice fact {i}" for i in range(5)], namespace="alice", session_id="s")
    assert atlas.stats().bytes_used > only_bob
    for node in nodes:
        atlas.forget(node.id)
    assert atlas.backend.partition("alice") is None and list(atlas.backend.namespaces()) == ["bob"]
    assert atlas.stats().bytes_used == only_bob == _accounted(atlas)
    atlas.forget(kept.id)
    assert list(atlas.backend.namespaces()) == [] and atlas.stats().bytes_used == 0
    again = atlas.add_memory("alice is back", namespace="alice", session_id="s")  # a new, working partition
    assert [h.node.id for h in atlas.retrieve("alice back", namespace="alice")] == [again.id]
    assert atlas.stats().bytes_used == _accounted(atlas)


def test_a_backend_that_shares_its_partitions_keeps_an_emptied_namespace(clock: ManualClock) -> None:
    """The engine asks the backend (`keeps_partitions_in_process`): a server's namespace may be
    written by another process, so it is never dropped from here, nor charged the in-process cost."""

    class Shared(InProcessBackend):
        def keeps_partitions_in_process(self) -> bool:
            return False

    atlas = ElasticMemoryAtlas(embedder=HashingEmbedder(dim=384), clock=clock,
                               backend=Shared(dim=384, config=AtlasConfig()))
    node = atlas.add_memory("Alice likes tea", namespace="alice")
    assert atlas.stats(namespace="alice").bytes_used < PARTITION_OVERHEAD
    atlas.forget(node.id)
    assert atlas.backend.partition("alice") is not None and list(atlas.backend.namespaces()) == ["alice"]


def test_every_way_of_emptying_a_namespace_drops_it(make_atlas: Build, clock: ManualClock) -> None:
    atlas = make_atlas(max_nodes=3, eviction_batch=0.5)
    atlas.add_memories(["one", "two"], namespace="ended", session_id="s")
    assert atlas.end_session("s", namespace="ended", mode="delete") == 2
    atlas.add_memory("short lived", namespace="expiring", ttl=10.0)
    atlas.add_memory("weak", namespace="evicted", importance=0.01)
    clock.advance(60.0)
    atlas.add_memories(["a", "b", "c"], namespace="busy")  # expires one namespace, evicts the other
    assert sorted(atlas.backend.namespaces()) == ["busy"]
    assert atlas.stats().bytes_used == _accounted(atlas)


@pytest.mark.parametrize(("store", "method"), [(InvertedKeywordIndex, "add_many"),
                                              (TieredVectorIndex, "add_and_link")])
def test_a_failed_write_to_a_new_namespace_leaves_no_partition(make_atlas: Build, monkeypatch: pytest.MonkeyPatch,
                                                                store: type, method: str) -> None:
    """The write creates the namespace's partition, then fails in its keyword index (after its
    memories went in) or its vector index (before) and is rolled back: the partition goes too."""
    atlas = make_atlas()
    atlas.add_memory("kept", namespace="old")

    def fail(*args: object, **kwargs: object) -> None:
        raise OSError("disk on fire")

    monkeypatch.setattr(store, method, fail)
    with pytest.raises(OSError, match="disk on fire"):
        atlas.add_memories(["one", "two"], namespace="new")
    monkeypatch.undo()
    assert atlas.backend.partition("new") is None and list(atlas.backend.namespaces()) == ["old"]
    assert atlas.stats().bytes_used == _accounted(atlas)


def test_a_byte_cap_keeps_the_memories_of_a_thousand_namespaces(clock: ManualClock) -> None:
    """1,000 one-memory namespaces fit in 20 MB: before, each was charged ~98 KB and all but one
    memory was evicted."""
    cap = 20_000_000
    atlas = _atlas384(clock, max_bytes=cap)
    for i in range(1000):
        clock.advance(1.0)
        atlas.add_memory(f"tenant {i} has a dentist appointment", namespace=f"tenant-{i}")
    assert len(atlas) == 1000 and atlas.stats().evictions == 0
    assert atlas.stats().bytes_used <= cap


def test_eviction_across_namespaces_drops_the_namespaces_it_empties(clock: ManualClock) -> None:
    """Under a cap that holds about half of them, the oldest namespaces are evicted whole and
    their partitions go: the count stays under the cap and matches a recount."""
    atlas = _atlas384(clock, max_bytes=2_000_000)
    for i in range(600):
        clock.advance(1.0)
        atlas.add_memory(f"tenant {i} plays the piano", namespace=f"tenant-{i}")
    stats = atlas.stats()
    kept = list(atlas.backend.namespaces())
    assert stats.evictions > 0 and stats.bytes_used <= 2_000_000 and stats.bytes_used == _accounted(atlas)
    assert 100 < len(atlas) == len(kept) < 600  # no empty partition left, and many tenants kept
    assert "tenant-599" in kept and "tenant-0" not in kept


def test_bytes_stay_exact_with_many_namespaces_on_every_path(make_atlas: Build) -> None:
    """The per-namespace figure is recounted for the namespaces each path touches."""
    atlas = make_atlas(contradiction_check=True)
    for ns in ("a", "b", "c"):
        atlas.add_memories([f"{ns} fact {i} about the garden" for i in range(6)], namespace=ns, session_id="s")
    a = atlas.memories(namespace="a")
    atlas.link(a[0].id, a[3].id, relation="related_to")
    assert atlas.stats().bytes_used == _accounted(atlas)
    atlas.update_memory(a[1].id, "a fact 1 about the garden, corrected")
    atlas.add_memory("The user does not like the garden", namespace="b", session_id="s")
    assert atlas.stats().bytes_used == _accounted(atlas)
    atlas.compress(namespace="c")
    atlas.end_session("s", namespace="c", mode="delete")
    assert atlas.stats().bytes_used == _accounted(atlas)


def test_max_namespaces_refuses_a_new_namespace_past_it_and_stores_nothing(make_atlas: Build) -> None:
    atlas = make_atlas(max_namespaces=2)
    a = atlas.add_memory("alpha", namespace="a")
    atlas.add_memory("beta", namespace="b")
    atlas.add_memory("more alpha", namespace="a")  # an existing namespace is always fine
    with pytest.raises(NamespaceLimitError, match=r"'c'.*3rd namespace.*max_namespaces is 2"):
        atlas.add_memory("gamma", namespace="c")
    with pytest.raises(NamespaceLimitError):  # all or nothing: the item for "a" is not stored either
        atlas.add_memories(["more", {"content": "gamma", "namespace": "c"}], namespace="a")
    assert len(atlas) == 3 and atlas.backend.partition("c") is None and atlas.count(namespace="a") == 2
    for node in atlas.memories(namespace="a"):
        atlas.forget(node.id)
    assert atlas.add_memory("gamma", namespace="c").namespace == "c"  # "a"'s place is free again
    with pytest.raises(MemoryNotFoundError):
        atlas.get(a.id)
    assert sorted(atlas.namespaces()) == ["b", "c"]


def test_max_namespaces_is_checked(make_atlas: Build) -> None:
    for bad in (0, -1, 2.5, "3", True):
        with pytest.raises(InvalidInputError, match="max_namespaces"):
            AtlasConfig(max_namespaces=bad)  # type: ignore[arg-type]
    assert AtlasConfig().max_namespaces is None and AtlasConfig(max_namespaces=1).max_namespaces == 1
    with pytest.raises(TypeError):
        AtlasConfig(5)  # type: ignore[misc]  # keyword-only


def test_a_namespace_emptied_while_other_threads_write_to_it_loses_no_write(make_atlas: Build) -> None:
    """Threads each write a memory to one namespace, check it, forget it: the namespace empties
    and is dropped again and again while others write to it; no write lands in a dropped
    partition (each is found right after), and at the end the namespace is gone."""
    atlas = make_atlas()
    errors: list[BaseException] = []

    def worker(k: int) -> None:
        try:
            for i in range(60):
                node = atlas.add_memory(f"worker {k} note {i}", namespace="shared", session_id=f"s{k}")
                assert atlas.get(node.id, namespace="shared").content == node.content
                atlas.forget(node.id)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(atlas) == 0 and atlas.backend.partition("shared") is None and atlas.stats().bytes_used == 0
