"""Two processes writing to and recalling from one namespace at once: nothing lost."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from shared_core import ElasticMemoryAtlas

WORKER = """
import sys
from shared_core import AtlasConfig, ElasticMemoryAtlas, HashingEmbedder, ManualClock
url, name, shared_id, writes = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
config = AtlasConfig(reinforce_factor=1.01, weight_cap=100.0, half_life=1e12, similar_top=2)
atlas = ElasticMemoryAtlas(config=config, embedder=HashingEmbedder(dim=64), clock=ManualClock(1_700_000_000.0),
                           backend=url)
for i in range(writes):
    atlas.add_memory(f"{name} fact {i} about the project", namespace="team", session_id=name)
    atlas.add_memories([f"{name} batch {i} a", f"{name} batch {i} b"], namespace="team", session_id=name)
    hits = atlas.retrieve("the shared plan", namespace="team", session_id="shared", top_k=1)
    assert [h.node.id for h in hits] == [shared_id], hits
print("done")
"""
WRITES = 25


def test_two_processes_share_one_namespace(shared_atlas: Callable[..., ElasticMemoryAtlas], prefixed_url: str,
                                           tmp_path: Path) -> None:
    atlas = shared_atlas(reinforce_factor=1.01, weight_cap=100.0, half_life=1e12)
    shared = atlas.add_memory("the shared plan", namespace="team", session_id="shared")
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    workers = [subprocess.Popen([sys.executable, str(script), prefixed_url, name, shared.id, str(WRITES)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for name in ("w1", "w2")]
    for w in workers:
        out, err = w.communicate(timeout=240)
        assert w.returncode == 0 and out.strip() == "done", err[-2000:]

    assert atlas.count(namespace="team") == 1 + 2 * 3 * WRITES
    assert len(atlas) == 1 + 2 * 3 * WRITES  # the other processes' memories are visible here
    memories = atlas.memories(namespace="team")
    turns = [m.turn for m in memories]
    assert sorted(turns) == list(range(1, len(memories) + 1))  # every turn taken once: no interleaving lost
    for name in ("w1", "w2"):
        contents = [m.content for m in atlas.memories(namespace="team", session_id=name)]
        expected = [(f"{name} fact {i} about the project", f"{name} batch {i} a", f"{name} batch {i} b")
                    for i in range(WRITES)]
        assert contents == [c for triple in expected for c in triple]
    assert atlas.sessions(namespace="team") in (["shared", "w1", "w2"], ["shared", "w2", "w1"])
    node = atlas.get(shared.id)
    assert node.access_count == 2 * WRITES  # every reinforcement counted
    assert node.weight == pytest.approx(1.01 ** (2 * WRITES), rel=1e-9)
    befores = sum(e.relation.value == "before" for m in memories for e in atlas.edges(m.id) if e.source == m.id)
    assert befores == 2 * (3 * WRITES - 1)  # each session one chain, unbroken by the other writer
