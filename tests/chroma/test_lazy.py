"""The chroma backend opens an index and loads each namespace on first use; the directory
alone restores everything `save` keeps (bookkeeping included)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from shared_core import AtlasConfig, ElasticMemoryAtlas, HashingEmbedder, ManualClock
from shared_core.engine.persistence import _snapshot
from shared_core.store.chroma import ChromaBackend
from shared_core.store.chroma._store import Store

from .test_durable import busy_atlas, open_atlas, partitions


def stats_fields(atlas: ElasticMemoryAtlas, namespace: str | None = None, *, events: bool = True) -> dict[str, Any]:
    """The stats but the bytes (a rebuilt vector index is allocated to fit, a grown one has spare
    rows) and, without ``events``, the figures drawn from the event log."""
    stats = atlas.stats(namespace=namespace)
    skip = {"bytes_used", "vector_bytes"} | (set() if events else {"events", "key_hit_rate", "evictions",
                                                                   "expirations"})
    return {k: getattr(stats, k) for k in stats.__dataclass_fields__ if k not in skip}


@pytest.mark.parametrize("checkpointed", [True, False])
def test_open_loads_no_namespace_and_lists_them_all(tmp_path: Path, clock: ManualClock,
                                                    checkpointed: bool) -> None:
    atlas = busy_atlas(tmp_path / "mem", clock)
    atlas.add_memories([f"note {i} of carol" for i in range(7)], namespace="carol")
    atlas.add_memory("to be dropped", namespace="dave")
    atlas.forget(atlas.memories(namespace="dave")[0].id)  # dave is empty, then dropped
    listed, total = atlas.namespaces(), len(atlas)
    counts = {ns: atlas.count(namespace=ns) for ns in listed}
    # the event log is bookkeeping, stored at checkpoints and on close: a crash keeps the memories
    stats_all, stats_alice = stats_fields(atlas, events=checkpointed), stats_fields(atlas, "alice", events=checkpointed)
    if checkpointed:
        atlas.close()
    else:  # the process 'died' after its last sync: the log alone holds everything
        atlas.flush()
        atlas.backend._release_lock()  # type: ignore[attr-defined]
    again = open_atlas(tmp_path / "mem", clock)
    backend = again.backend
    assert isinstance(backend, ChromaBackend)
    assert backend.loaded() == []
    assert again.namespaces() == listed and len(again) == total and "dave" not in listed
    assert {ns: again.count(namespace=ns) for ns in listed} == counts
    assert backend.loaded() == []  # listing and counting read the index only
    assert stats_fields(again, "alice", events=checkpointed) == stats_alice
    assert backend.loaded() == ["alice"]
    again.get(again.memories(namespace="carol")[0].id)
    assert sorted(backend.loaded()) == ["alice", "carol"]
    assert stats_fields(again, events=checkpointed) == stats_all  # the whole atlas: loads what is left
    assert sorted(backend.loaded()) == sorted(listed)
    again.close()


def test_two_threads_touching_a_new_namespace_load_it_once(tmp_path: Path, clock: ManualClock,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    atlas = open_atlas(tmp_path / "mem", clock)
    atlas.add_memories([f"fact {i} about boats" for i in range(40)], namespace="alice")
    atlas.close()
    calls = []
    real = Store.load_namespace

    def slow(self: Store, ns: str) -> Any:
        calls.append(ns)
        time.sleep(0.3)  # both threads arrive while the first one loads
        return real(self, ns)

    monkeypatch.setattr(Store, "load_namespace", slow)
    again = open_atlas(tmp_path / "mem", clock)
    results: list[list[str]] = []
    start = threading.Barrier(2)

    def read() -> None:
        start.wait()
        results.append([h.node.id for h in again.retrieve("boats", namespace="alice", reinforce=False)])

    threads = [threading.Thread(target=read) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert calls == ["alice"]
    assert len(results) == 2 and results[0] == results[1] and results[0]
    again.close()


def bookkeeping_atlas(path: Path, clock: ManualClock) -> ElasticMemoryAtlas:
    """An atlas with every kind of bookkeeping: events, held turns, counters, a custom relation."""
    atlas = ElasticMemoryAtlas(embedder=HashingEmbedder(dim=64), clock=clock,
                               config=AtlasConfig(write_filter=True, compress_every=1000),
                               backend=ChromaBackend(path))
    atlas.register_relation("mentors")
    first = atlas.add_memory("Alice mentors Bob on the compiler project", namespace="team", session_id="s1",
                             keep=True)
    second = atlas.add_memory("Bob is writing the register allocator", namespace="team", session_id="s1",
                              keep=True)
    atlas.link(first.id, second.id, relation="mentors")
    atlas.add_memories(["ok", "thanks", "Carol owns the parser and its tests"], namespace="team", session_id="s1")
    atlas.add_memories([f"trip detail {i}: the train leaves at {i}:15" for i in range(12)], namespace="trips")
    atlas.retrieve("who mentors Bob?", namespace="team")
    atlas.compress(namespace="trips")
    return atlas


def everything(atlas: ElasticMemoryAtlas) -> tuple[dict[str, Any], list[Any], list[np.ndarray[Any, Any]]]:
    saved, _ = _snapshot(atlas._state, atlas._life.state)
    kept = {k: saved[k] for k in ("events", "lifecycle", "relations")}
    parts, vectors = partitions(atlas)
    return kept, parts, vectors


def test_a_reopened_directory_equals_a_save_load_round_trip(tmp_path: Path, clock: ManualClock) -> None:
    atlas = bookkeeping_atlas(tmp_path / "mem", clock)
    assert atlas.working_memory(namespace="team", session_id="s1")  # held turns exist
    atlas.save(tmp_path / "atlas.zip")
    atlas.close()
    loaded = ElasticMemoryAtlas.load(tmp_path / "atlas.zip", embedder=HashingEmbedder(dim=64), clock=clock,
                                     config=AtlasConfig(write_filter=True, compress_every=1000))
    reopened = ElasticMemoryAtlas(embedder=HashingEmbedder(dim=64), clock=clock,
                                  config=AtlasConfig(write_filter=True, compress_every=1000),
                                  backend=ChromaBackend(tmp_path / "mem"))
    kept_a, parts_a, vectors_a = everything(loaded)
    kept_b, parts_b, vectors_b = everything(reopened)
    for key in ("events", "lifecycle", "relations"):
        assert kept_b[key] == kept_a[key], key
    assert kept_b["events"]["records"] and kept_b["lifecycle"]["held"] and kept_b["relations"] == ["mentors"]
    assert parts_b == parts_a
    for a, b in zip(vectors_a, vectors_b, strict=True):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-6)
    assert reopened.working_memory(namespace="team", session_id="s1") == \
        loaded.working_memory(namespace="team", session_id="s1")
    # the custom relation is registered again: link takes it without register_relation
    ids = [n.id for n in reopened.memories(namespace="team")]
    reopened.link(ids[-1], ids[0], relation="mentors")
    reopened.close()


def test_a_directory_of_the_first_format_is_copied_into_the_store_once(tmp_path: Path, clock: ManualClock) -> None:
    """Before the store kept its own copy of each memory, the collections alone held them."""
    import sqlite3

    atlas = busy_atlas(tmp_path / "mem", clock)
    before, vectors_before = partitions(atlas)
    atlas.close()
    with sqlite3.connect(tmp_path / "mem" / "elastic_atlas.sqlite3") as db:
        db.execute("DROP TABLE memories")
    again = open_atlas(tmp_path / "mem", clock)
    after, vectors_after = partitions(again)
    assert after == before
    for a, b in zip(vectors_before, vectors_after, strict=True):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-6)
    again.close()


def test_a_damaged_record_raises_at_first_use_and_loads_nothing(tmp_path: Path, clock: ManualClock) -> None:
    import sqlite3

    from shared_core.values.errors import CorruptFileError

    atlas = open_atlas(tmp_path / "mem", clock)
    atlas.add_memories([f"memory {i}" for i in range(10)], namespace="alice")
    atlas.add_memory("fine", namespace="bob")
    atlas.close()
    with sqlite3.connect(tmp_path / "mem" / "elastic_atlas.sqlite3") as db:
        db.execute("UPDATE memories SET record = '{\"id\": 1' WHERE rowid = (SELECT min(rowid) FROM memories)")
    again = open_atlas(tmp_path / "mem", clock)
    for _ in range(2):
        with pytest.raises(CorruptFileError, match="alice"):
            again.memories(namespace="alice")
    assert again.backend.loaded() == []  # type: ignore[attr-defined]
    assert [n.content for n in again.memories(namespace="bob")] == ["fine"]
    again.close()


def test_an_exit_without_chromadb_still_stores_the_bookkeeping(tmp_path: Path, clock: ManualClock) -> None:
    """At interpreter exit the backend closes with ``checkpoint=False`` when chromadb is not
    loaded (it cannot be imported then): the log keeps the memories, the store the bookkeeping."""
    atlas = open_atlas(tmp_path / "mem", clock)
    atlas.register_relation("mentors")
    first = atlas.add_memory("Alice mentors Bob", namespace="team")
    second = atlas.add_memory("Bob writes the parser", namespace="team")
    atlas.link(first.id, second.id, relation="mentors")
    events = atlas.events.records()
    atlas.backend.close(checkpoint=False)  # type: ignore[attr-defined]
    assert list((tmp_path / "mem").glob("wal-*.log"))  # not checkpointed
    again = open_atlas(tmp_path / "mem", clock)
    assert again.events.records() == events
    again.link(second.id, first.id, relation="mentors")  # registered again by the reopen
    again.close()
