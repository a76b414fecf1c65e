"""The byte cap under 200,000 writes, and the byte accounting against a process's real memory.

Each runs in a fresh interpreter, so the resident set size (``/proc/self/statm``) measures the
atlas and nothing else the test session loaded.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="needs /proc (Linux)")]

PRELUDE = """
import gc, json, time
import numpy as np
from shared_core import AtlasConfig, ElasticMemoryAtlas, HashingEmbedder, ManualClock

def rss():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * 4096
"""

STREAM = PRELUDE + """
cap, total, batch = 1_500_000, 200_000, 500
clock = ManualClock()
config = AtlasConfig(max_bytes=cap, eviction_batch=0.1, similar_top=0)
atlas = ElasticMemoryAtlas(config=config, embedder=HashingEmbedder(dim=16), clock=clock)
pins = [atlas.add_memory(f"pinned fact {i}", namespace="ns0", pinned=True).id for i in range(10)]
vectors = np.random.default_rng(0).normal(size=(batch, 16)).astype(np.float32)
over, marks, started = 0, {}, time.perf_counter()
for start in range(0, total, batch):
    atlas.add_memories([{"content": f"stream item {i} about topic {i % 97}", "embedding": vectors[i % batch]}
                        for i in range(start, start + batch)],
                       namespace=f"ns{(start // batch) % 4}", session_id=f"s{start // 5000}")
    clock.advance(60)
    over += atlas._life.bytes_used() > cap
    if (start + batch) % 40_000 == 0:
        gc.collect()
        marks[start + batch] = rss()
stats = atlas.stats()
print(json.dumps({"over": over, "marks": marks, "nodes": stats.nodes, "evictions": stats.evictions,
                  "bytes": stats.bytes_used, "pins": all(atlas.get(p).pinned for p in pins),
                  "seconds": time.perf_counter() - started}))
"""

CALIBRATION = PRELUDE + """
atlas = ElasticMemoryAtlas(config=AtlasConfig(similar_top=3), embedder=HashingEmbedder(dim=64), clock=ManualClock())
vectors = np.random.default_rng(0).normal(size=(20_000, 64)).astype(np.float32)
texts = [" ".join(f"w{(i * 7 + j) % 5000}" for j in range(12 + i % 40)) for i in range(20_000)]
atlas.add_memory("warm up", namespace="warm", embedding=vectors[0])
# faiss (the approximate index past ann_threshold) loads its libraries once per process, about
# 34 MB of resident memory that no memory owns: load it before counting, as a running app has
warm = ElasticMemoryAtlas(config=AtlasConfig(ann_threshold=64), embedder=HashingEmbedder(dim=64), clock=ManualClock())
warm.add_memories([{"content": f"warm {i}", "embedding": vectors[i]} for i in range(300)], namespace="warm")
gc.collect()
before, counted = rss(), atlas._life.bytes_used()
for start in range(0, 20_000, 1000):
    atlas.add_memories([{"content": texts[i], "embedding": vectors[i], "metadata": {"role": "user", "i": i}}
                        for i in range(start, start + 1000)], namespace=f"u{start // 4000}", session_id="s")
gc.collect()
print(json.dumps({"rss": rss() - before, "counted": atlas._life.bytes_used() - counted}))
"""


def _run(code: str) -> dict[str, object]:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def test_the_cap_holds_and_memory_stays_flat_over_200k_writes() -> None:
    result = _run(STREAM)
    assert result["over"] == 0  # the accounted bytes never passed the cap after a write
    assert result["pins"] is True
    assert result["nodes"] + result["evictions"] == 200_010  # type: ignore[operator]
    marks = {int(k): v for k, v in result["marks"].items()}  # type: ignore[attr-defined]
    growth = marks[200_000] - marks[40_000]
    assert growth < 4 * 2**20, f"resident memory grew by {growth} bytes from 40k to 200k writes: {marks}"


def test_the_byte_accounting_tracks_real_memory() -> None:
    result = _run(CALIBRATION)
    ratio = result["counted"] / result["rss"]  # type: ignore[operator]
    assert 0.75 <= ratio <= 1.35, result
