"""The chroma backend keeps everything `save` would, survives kill -9, and fails clearly.

Real components: a real chromadb directory, real child processes killed with SIGKILL, a real
file-size limit for the failing disk.
"""

from __future__ import annotations

import os
import random
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from shared_core import ElasticMemoryAtlas, HashingEmbedder, ManualClock
from shared_core.engine.persistence import _snapshot
from shared_core.store.chroma import ChromaBackend, collection_name
from shared_core.values.errors import BackendError, CorruptFileError, InvalidInputError

ROOT = Path(__file__).resolve().parents[2]


def open_atlas(path: Path, clock: ManualClock | None = None, **kwargs: Any) -> ElasticMemoryAtlas:
    return ElasticMemoryAtlas(embedder=HashingEmbedder(dim=64), clock=clock or ManualClock(1_700_000_000.0),
                              backend=ChromaBackend(path, **kwargs))


def partitions(atlas: ElasticMemoryAtlas) -> tuple[list[Any], list[np.ndarray[Any, Any]]]:
    """What `save` keeps of the partitions (nodes, edges, sessions, superseded ids, counters,
    embeddings), in a stable order."""
    state, arrays = _snapshot(atlas._state, atlas._life.state)
    out = []
    for part, matrix in zip(state["partitions"], arrays, strict=True):
        order = sorted(range(len(part["nodes"])), key=lambda k: part["nodes"][k]["id"])
        out.append({**part, "nodes": [part["nodes"][k] for k in order],
                    "edges": sorted(part["edges"], key=lambda e: (e["source"], e["target"], e["relation"])),
                    "vectors": None})
        arrays[len(out) - 1] = matrix[order]
    return out, arrays


def busy_atlas(path: Path, clock: ManualClock) -> ElasticMemoryAtlas:
    atlas = open_atlas(path, clock)
    first = atlas.add_memory("User prefers oat milk", namespace="alice", session_id="s1",
                             metadata={"source": "chat", "tags": ["a", "b"]})
    atlas.add_memories([f"fact number {i} about trips" for i in range(30)], namespace="alice", session_id="s2")
    atlas.add_memory("Bob's secret", namespace="bob's notes", importance=3.0, pinned=True, ttl=3600)
    second = atlas.add_memory("User lives in Paris", namespace="alice", session_id="s1", links_to=[first.id])
    clock.advance(60)
    atlas.update_memory(first.id, "User prefers soy milk")
    atlas.link(second.id, first.id, relation="related_to", strength=0.5, metadata={"why": "test"})
    atlas.retrieve("trips", namespace="alice", top_k=4)
    atlas.end_session("s2", namespace="alice", mode="fade")
    atlas.forget(second.id)
    atlas.compress(namespace="alice")
    return atlas


def test_reopen_restores_what_save_keeps(tmp_path: Path, clock: ManualClock) -> None:
    atlas = busy_atlas(tmp_path / "mem", clock)
    before, vectors_before = partitions(atlas)
    atlas.close()
    again = open_atlas(tmp_path / "mem", clock)
    after, vectors_after = partitions(again)
    assert after == before
    for a, b in zip(vectors_before, vectors_after, strict=True):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-6)  # re-normalised on add, as `load` does
    hits = again.retrieve("soy milk", namespace="alice", top_k=1)
    assert hits[0].node.content == "User prefers soy milk"
    again.close()


def test_reopen_without_close_replays_the_log(tmp_path: Path, clock: ManualClock) -> None:
    """No checkpoint at all (the process 'died' after its last sync): the log alone restores it."""
    atlas = busy_atlas(tmp_path / "mem", clock)
    atlas.flush()
    before, _ = partitions(atlas)
    backend = atlas.backend
    assert isinstance(backend, ChromaBackend)
    backend._release_lock()  # what the OS does for a killed process
    again = open_atlas(tmp_path / "mem", clock)
    assert partitions(again)[0] == before
    again.close()


def test_crash_at_random_moments_loses_no_acknowledged_write(tmp_path: Path) -> None:
    path = tmp_path / "mem"
    rng = random.Random(7)
    acknowledged: set[str] = set()
    forgotten: set[str] = set()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    started = time.monotonic()
    for round_ in range(20):
        child = subprocess.Popen([sys.executable, "-m", "tests.chroma._writer", str(path), str(round_)],
                                 cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready", child.stderr.read() if child.stderr else ""
        time.sleep(rng.uniform(0.05, 1.0))
        child.send_signal(signal.SIGKILL)
        out, err = child.communicate()
        assert child.returncode == -signal.SIGKILL, err
        for line in out.splitlines():
            kind, _, node_id = line.partition(" ")
            (acknowledged if kind == "ack" else forgotten).add(node_id)
        atlas = open_atlas(path)  # CorruptFileError here would be a half-written directory
        stored = set(atlas.backend.directory())  # type: ignore[attr-defined]
        missing = acknowledged - forgotten - stored
        assert not missing, f"round {round_}: {len(missing)} acknowledged memories lost"
        for ns in atlas.namespaces():  # no half-applied write: every edge has both ends, every
            part = atlas.backend.partition(ns)  # memory its embedding and keywords
            assert part is not None
            for node in part.graph.nodes():
                assert part.vectors.get(node.id) is not None
                for edge in part.graph.edges(node.id):
                    assert part.graph.get_node(edge.source) and part.graph.get_node(edge.target)
        assert atlas.retrieve("milk tea", namespace="alice", top_k=3, reinforce=False) or not stored
        atlas.backend._release_lock()  # type: ignore[attr-defined]  # killed, not closed: keep the log
    assert len(acknowledged) > 100
    print(f"{len(acknowledged)} acknowledged writes over 20 kills in {time.monotonic() - started:.1f} s")


def test_a_second_writer_gets_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "mem"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen([sys.executable, "-m", "tests.chroma._writer", str(path), "0", "hold"],
                             cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        with pytest.raises(BackendError, match="open for writing in another process"):
            open_atlas(path)
    finally:
        child.kill()
        child.communicate()
    open_atlas(path).close()  # the lock went with the process


@pytest.mark.parametrize("damage", ["truncated record", "flipped byte", "foreign log", "lost collection",
                                    "garbage store"])
def test_a_damaged_directory_raises_and_loads_nothing(tmp_path: Path, clock: ManualClock, damage: str) -> None:
    path = tmp_path / "mem"
    atlas = open_atlas(path, clock, checkpoint_bytes=1 << 30)
    atlas.add_memories([f"memory {i}" for i in range(20)], namespace="alice")
    if damage in ("lost collection", "garbage store"):
        atlas.close()  # checkpointed into chromadb
    else:
        atlas.add_memory("one more", namespace="alice")
        atlas.flush()
        atlas.backend._release_lock()  # type: ignore[attr-defined]
    log = sorted(path.glob("wal-*.log"))[-1]
    data = log.read_bytes()
    if damage == "truncated record":  # a record cut in the middle, followed by another one
        log.write_bytes(data[:20] + data[40:])
    elif damage == "flipped byte":
        log.write_bytes(data[:30] + bytes([data[30] ^ 0xFF]) + data[31:])
    elif damage == "foreign log":
        log.write_bytes(b"not a log at all")
    elif damage == "lost collection":
        import chromadb

        client = chromadb.PersistentClient(path=str(path))
        client.delete_collection(collection_name("alice"))
        client.close()
    else:
        (path / "elastic_atlas.sqlite3").write_bytes(b"garbage" * 100)
    if damage == "lost collection":  # found when the namespace is first used (opening reads only the index)
        atlas = open_atlas(path, clock)
        assert atlas.namespaces() == ["alice"] and atlas.count(namespace="alice") == 20
        for _ in range(2):  # and again: never a half-loaded namespace
            with pytest.raises(CorruptFileError, match="atlas-alice"):
                atlas.retrieve("memory", namespace="alice")
            assert atlas.backend.loaded() == []  # type: ignore[attr-defined]
        atlas.close()
        return
    with pytest.raises(CorruptFileError):
        open_atlas(path, clock)
    open_again = ChromaBackend(path)
    with pytest.raises(CorruptFileError):
        open_again.open(dim=64)
    assert not open_again._partitions and open_again._lock_fd < 0  # nothing half-loaded, lock released


def test_a_torn_last_record_is_dropped(tmp_path: Path, clock: ManualClock) -> None:
    path = tmp_path / "mem"
    atlas = open_atlas(path, clock, checkpoint_bytes=1 << 30)
    kept = atlas.add_memory("kept", namespace="alice")
    atlas.flush()
    torn = atlas.add_memory("torn", namespace="alice")
    atlas.flush()
    atlas.backend._release_lock()  # type: ignore[attr-defined]
    log = sorted(path.glob("wal-*.log"))[-1]
    log.write_bytes(log.read_bytes()[:-7])  # the process died while appending the last record
    again = open_atlas(path, clock)
    assert again.get(kept.id).content == "kept"
    assert torn.id not in again.backend.directory()  # type: ignore[attr-defined]
    again.add_memory("after", namespace="alice")  # appended after the valid end
    again.close()
    third = open_atlas(path, clock)
    assert sorted(n.content for n in third.memories(namespace="alice")) == ["after", "kept"]
    third.close()


FULL_DISK = """
import resource, signal, sys
from shared_core import ElasticMemoryAtlas, HashingEmbedder
from shared_core.store.chroma import ChromaBackend
from shared_core.values.errors import BackendError
from shared_core.engine.persistence import _snapshot
def state(atlas):  # the partitions as save keeps them, memories by id
    parts = _snapshot(atlas._state, atlas._life.state)[0]["partitions"]
    for p in parts:
        p["nodes"].sort(key=lambda n: n["id"])
        p["edges"].sort(key=lambda e: (e["source"], e["target"], e["relation"]))
    return parts
path, mode = sys.argv[1], sys.argv[2]
atlas = ElasticMemoryAtlas(embedder=HashingEmbedder(dim=64), backend=ChromaBackend(path, durability=mode))
atlas.add_memories([f"small {i}" for i in range(5)], namespace="alice")
atlas.flush()
durable = state(atlas)
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
size = sum(p.stat().st_size for p in __import__("pathlib").Path(path).glob("wal-*.log"))
resource.setrlimit(resource.RLIMIT_FSIZE, (size + 200, size + 200))  # the disk is full
try:
    atlas.add_memories([f"big {i} " + "x" * 2000 for i in range(10)], namespace="alice")
    atlas.flush()
except BackendError as exc:
    print("error:", exc)
else:
    print("no error")
after = state(atlas)
print("state equals durable:", after == durable)
try:
    atlas.add_memory("another " + "y" * 2000, namespace="alice")
    atlas.flush()
except BackendError:
    print("still failing")
print("count", atlas.count(namespace="alice"))
"""


@pytest.mark.parametrize("mode", ["sync", "default"])
def test_a_full_disk_fails_the_write_and_keeps_what_is_durable(tmp_path: Path, mode: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", FULL_DISK, str(tmp_path / "mem"), mode], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    lines = done.stdout.splitlines()
    assert lines and lines[0].startswith("error: cannot write the memory log"), done.stdout + done.stderr
    assert "state equals durable: True" in lines
    assert "still failing" in lines
    assert "count 5" in lines
    atlas = open_atlas(tmp_path / "mem")
    assert sorted(n.content for n in atlas.memories(namespace="alice")) == [f"small {i}" for i in range(5)]
    atlas.close()
    assert resource  # the limit is set in the child only


def test_other_chroma_clients_read_the_memories(tmp_path: Path, clock: ManualClock) -> None:
    """A chromadb client and langchain-chroma's `Chroma` open the closed directory and read each
    memory's document and metadata from the namespace's collection."""
    import chromadb
    from langchain_chroma import Chroma
    from langchain_core.embeddings import Embeddings

    path = tmp_path / "mem"
    atlas = open_atlas(path, clock)
    node = atlas.add_memory("User prefers oat milk", namespace="alice", session_id="s1",
                            metadata={"source": "chat", "score": 3})
    atlas.add_memory("Bob's secret", namespace="bob's notes")
    atlas.close()

    client = chromadb.PersistentClient(path=str(path))
    got = client.get_collection(collection_name("alice")).get(ids=[node.id], include=["documents", "metadatas"])
    assert got["documents"] == ["User prefers oat milk"]
    meta = got["metadatas"][0]
    assert (meta["session_id"], meta["source"], meta["score"], meta["kind"]) == ("s1", "chat", 3, "memory")
    assert [c.name for c in client.list_collections()].count(collection_name("bob's notes")) == 1
    client.close()

    class Hashing(Embeddings):  # the atlas's own embedder, for a similarity search
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [list(map(float, v)) for v in HashingEmbedder(dim=64).embed(texts)]

        def embed_query(self, text: str) -> list[float]:
            return self.embed_documents([text])[0]

    store = Chroma(collection_name=collection_name("alice"), persist_directory=str(path), embedding_function=Hashing())
    docs = store.similarity_search("oat milk", k=1)
    assert docs[0].page_content == "User prefers oat milk" and docs[0].metadata["source"] == "chat"
    assert docs[0].id == node.id


def test_expiries_survive_a_reopen(tmp_path: Path, clock: ManualClock) -> None:
    atlas = open_atlas(tmp_path / "mem", clock)
    short = atlas.add_memory("a short-lived note", namespace="alice", ttl=60)
    atlas.add_memory("a lasting note", namespace="alice")
    atlas.close()
    again = open_atlas(tmp_path / "mem", clock)
    clock.advance(120)
    again.add_memory("a later note", namespace="alice")  # a write runs the due expiries
    assert short.id not in again.backend.directory()  # type: ignore[attr-defined]
    assert sorted(n.content for n in again.memories(namespace="alice")) == ["a lasting note", "a later note"]
    again.close()


def test_a_write_that_cannot_be_recorded_is_undone(tmp_path: Path, clock: ManualClock,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from shared_core.store.chroma import backend as module

    atlas = open_atlas(tmp_path / "mem", clock, durability="sync")
    kept = atlas.add_memory("kept", namespace="alice")
    before, _ = partitions(atlas)

    def broken(*args: Any) -> bytes:
        raise ValueError("cannot encode")

    monkeypatch.setattr(module, "encode", broken)
    with pytest.raises(BackendError, match="could not be recorded"):  # sync: found before add_memory returns
        atlas.add_memory("lost", namespace="alice")
    assert partitions(atlas)[0] == before
    monkeypatch.undo()
    atlas.add_memory("after", namespace="alice")
    atlas.close()
    again = open_atlas(tmp_path / "mem", clock)
    assert sorted(n.content for n in again.memories(namespace="alice")) == ["after", "kept"]
    assert again.get(kept.id).content == "kept"
    again.close()


def test_an_idle_durable_atlas_runs_maintenance_on_its_own_timer(tmp_path: Path, clock: ManualClock) -> None:
    backend = ChromaBackend(tmp_path / "mem", durability="sync", maintain_every=0.02)
    atlas = ElasticMemoryAtlas(embedder=HashingEmbedder(dim=32), clock=clock, backend=backend)
    short = atlas.add_memory("a short-lived note", namespace="alice", ttl=60)
    atlas.add_memory("a lasting note", namespace="alice")
    clock.advance(120)  # nothing is written after this: only the timer can expire the note
    deadline = time.monotonic() + 10
    while short.id in atlas.backend.directory() and time.monotonic() < deadline:  # type: ignore[attr-defined]
        time.sleep(0.02)
    assert short.id not in atlas.backend.directory()  # type: ignore[attr-defined]
    atlas.close()
    assert atlas._maintenance is not None and atlas._maintenance.runs >= 1
    runs = atlas._maintenance.runs
    time.sleep(0.1)
    assert atlas._maintenance.runs == runs  # closed: the timer stopped
    assert ChromaBackend.from_url("chroma:x?maintain_every=off").maintenance_interval() is None
    assert ChromaBackend(tmp_path / "other").maintenance_interval() == 600.0
    with pytest.raises(InvalidInputError):
        ChromaBackend(tmp_path / "bad", maintain_every=0)


READ_ONLY = """
import os, sys
from shared_core import ElasticMemoryAtlas, HashingEmbedder
from shared_core.store.chroma import ChromaBackend
from shared_core.values.errors import BackendError
from shared_core.engine.persistence import _snapshot
def state(atlas):  # the partitions as save keeps them, memories by id
    parts = _snapshot(atlas._state, atlas._life.state)[0]["partitions"]
    for p in parts:
        p["nodes"].sort(key=lambda n: n["id"])
    return parts
path, mode = sys.argv[1], sys.argv[2]
print("uid", os.getuid(), "writable", os.access(path, os.W_OK))
atlas = ElasticMemoryAtlas(embedder=HashingEmbedder(dim=64), backend=ChromaBackend(path, durability=mode))
durable = state(atlas)
print("count", atlas.count(namespace="alice"))
try:
    atlas.add_memory("a new memory", namespace="alice")
    atlas.flush()
except BackendError as exc:
    print("error:", exc)
else:
    print("no error")
print("state equals durable:", state(atlas) == durable)
print("recall:", [h.node.content for h in atlas.retrieve("memory 3", namespace="alice", top_k=1, reinforce=False)])
try:
    atlas.close()
except BackendError as exc:
    print("close:", exc)
"""


def _without_write_override() -> None:
    """In the child, before exec: drop CAP_DAC_OVERRIDE and CAP_FOWNER from the capability
    bounding set, so that the root process is held to permission bits (exec recomputes the
    capabilities from the bounding set, so dropping the effective ones would not last)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 3):  # CAP_DAC_OVERRIDE, CAP_FOWNER
        if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            os._exit(97)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="needs root: the child drops its override of permission bits (CAP_DAC_OVERRIDE)")
@pytest.mark.parametrize("mode", ["sync", "default"])
def test_a_read_only_directory_fails_the_write_and_keeps_what_is_durable(mode: str) -> None:
    """The directory belongs to ``nobody`` (uid 65534, mode 0o755 / 0o644) and the child is root
    without CAP_DAC_OVERRIDE: the kernel refuses every write in it (chmod alone would not do:
    root ignores permission bits)."""
    import shutil
    import tempfile

    top = Path(tempfile.mkdtemp(prefix="atlas-ro-"))
    try:
        path = top / "mem"
        atlas = open_atlas(path)
        atlas.add_memories([f"memory {i}" for i in range(8)], namespace="alice")
        atlas.close()
        for p in [path, *path.rglob("*")]:
            os.chown(p, 65534, 65534)
            p.chmod(0o755 if p.is_dir() else 0o644)
        files = {p: p.stat().st_mtime_ns for p in path.rglob("*")}
        env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
        done = subprocess.run([sys.executable, "-c", READ_ONLY, str(path), mode], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=120, preexec_fn=_without_write_override)
        lines = done.stdout.splitlines()
        assert lines[:2] == ["uid 0 writable False", "count 8"], done.stdout + done.stderr
        assert lines[2].startswith("error: cannot write the memory log"), done.stdout + done.stderr
        assert "read-only" in lines[2]
        assert "state equals durable: True" in lines
        assert "recall: ['memory 3']" in lines
        assert {p: p.stat().st_mtime_ns for p in path.rglob("*")} == files  # nothing was written
        again = open_atlas(path)
        assert sorted(n.content for n in again.memories(namespace="alice")) == [f"memory {i}" for i in range(8)]
        again.close()
    finally:
        shutil.rmtree(top, ignore_errors=True)
