"""The server killed and restarted during a run: the client reconnects within its retry budget
and every acknowledged write is still there (append-only file, fsync on every write)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from shared_core import AtlasConfig, ElasticMemoryAtlas, HashingEmbedder, ManualClock
from shared_core.store.falkordb.server import start_server


def test_acknowledged_writes_survive_a_killed_server(tmp_path: Path) -> None:
    server = start_server(tmp_path / "data", appendfsync="always")
    try:
        url = f"{server.url}?retry_for=20&timeout=5"
        atlas = ElasticMemoryAtlas(config=AtlasConfig(similar_top=1), embedder=HashingEmbedder(dim=32),
                                   clock=ManualClock(1_700_000_000.0), backend=url)
        acknowledged: list[str] = []
        errors: list[BaseException] = []
        stop = threading.Event()

        def writer() -> None:
            i = 0
            try:
                while not stop.is_set() and i < 400:
                    node = atlas.add_memory(f"note {i} written during the restart test", namespace="ops",
                                            session_id="run")
                    acknowledged.append(node.id)
                    i += 1
            except BaseException as exc:  # reported below
                errors.append(exc)

        thread = threading.Thread(target=writer)
        thread.start()
        while len(acknowledged) < 30:
            time.sleep(0.01)
            assert thread.is_alive(), errors
        server.stop(kill=True)  # no clean shutdown
        killed_at = len(acknowledged)
        time.sleep(0.5)
        server = start_server(server.directory, port=server.port, appendfsync="always")
        while len(acknowledged) < killed_at + 30 and thread.is_alive():
            time.sleep(0.01)
        stop.set()
        thread.join(timeout=60)
        assert errors == [] and len(acknowledged) >= killed_at + 30  # it went on after the restart
        assert atlas.count(namespace="ops") == len(acknowledged)
        stored = [m.id for m in atlas.memories(namespace="ops", session_id="run")]
        assert stored == acknowledged  # all there, in order
        assert atlas.retrieve("note 3 written", namespace="ops", top_k=1)[0].node.content.startswith("note 3")
    finally:
        server.stop()
