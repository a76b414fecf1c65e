"""A restarted server rebuilds its indexes in the background; a process that had a namespace
open goes on once they are built, instead of failing.

After replaying its append-only file, FalkorDB 4.16 builds every graph's indexes again, one
index after another on one thread, and refuses a vector query on a graph whose index is not
built yet ("Invalid arguments for procedure 'db.idx.vector.queryNodes'"). A process that opened
the namespace before the restart does not ask `FalkorDBBackend.until_built` again, so its next
write (whose similar-memory search is a vector query) and recall meet the refusal; they wait
until the index is built (at most the settings' ``timeout``) and then answer as before. Writes
made in that window are indexed once: no k-nearest search comes back short
(benchmarks/README.md, "Restarts and the index build").
"""

from __future__ import annotations

import time
from pathlib import Path

from shared_core import AtlasConfig, ElasticMemoryAtlas, HashingEmbedder, ManualClock
from shared_core.store.falkordb import FalkorDBBackend
from shared_core.store.falkordb import cypher as q
from shared_core.store.falkordb.server import start_server

DIM = 64
BULK = 20_000  # vectors whose index the restarted server builds first: seconds on two cores


def _building(backend: FalkorDBBackend, namespace: str) -> bool:
    return any(status != "OPERATIONAL" for _, _, status in backend.conn.run(backend.key(namespace), q.INDEX_STATES))


def test_a_namespace_open_before_a_restart_waits_for_its_rebuilt_indexes(tmp_path: Path) -> None:
    server = start_server(tmp_path / "data", appendfsync="always")
    try:
        url = f"{server.url}?retry_for=30&timeout=20"
        # first, a namespace with many vectors (one plain statement, replayed in a second or two):
        # the restarted server rebuilds its index before the next namespace's
        backend = FalkorDBBackend.from_url(url, dim=DIM)
        bulk = backend.partition("bulk", create=True)
        assert bulk is not None
        bulk.graph_key.write(f"UNWIND range(1, {BULK}) AS i CREATE (:Embedding {{id: 'b' + toString(i), "
                             f"embedding: vecf32([j IN range(1, {DIM}) | rand() - 0.5])}})")
        atlas = ElasticMemoryAtlas(config=AtlasConfig(), embedder=HashingEmbedder(dim=DIM),
                                   clock=ManualClock(1_700_000_000.0), backend=url)
        notes = [f"note {i} about the {w} deployment" for i, w in enumerate(["blue", "green", "red", "amber"])]
        for note in notes:
            atlas.add_memory(note, namespace="ops", session_id="run")
        assert atlas.retrieve(notes[0], namespace="ops", top_k=1)[0].node.content == notes[0]  # open, cached
        server.stop(kill=True)
        server = start_server(server.directory, port=server.port, appendfsync="always", wait=60)
        # the premise: the index of "ops" is not built yet when the atlas goes on
        states = {ns: _building(backend, ns) for ns in ("bulk", "ops")}
        assert states["ops"], f"built at once: the window is not provoked ({states})"
        started = time.monotonic()
        added = atlas.add_memory("note 4 about the violet deployment", namespace="ops", session_id="run")
        notes.append(added.content)
        for k in range(1, 6):
            for note in notes:
                hits = atlas.retrieve(note, namespace="ops", top_k=k)
                assert len(hits) == k and hits[0].node.content == note
        assert time.monotonic() - started < 20
        assert [m.content for m in atlas.memories(namespace="ops", session_id="run")] == notes
        backend.close()
    finally:
        server.stop()
