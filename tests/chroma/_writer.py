"""A child process for the crash tests: writes under ``sync`` and prints each acknowledged id.

``python -m tests.chroma._writer DIR SEED [MODE]`` opens ``DIR``, prints ``ready``, then loops:
single adds, batches, recalls (reinforcement), corrections and forgets, in two namespaces,
printing ``ack <id>`` after each write returns (and ``forgetting <id>`` before a forget), until it
is killed. ``MODE`` "hold" only opens the directory and waits (the second-writer test).
"""

from __future__ import annotations

import random
import sys
import time

from shared_core import ElasticMemoryAtlas, HashingEmbedder
from shared_core.store.chroma import ChromaBackend


def main() -> None:
    path, seed = sys.argv[1], int(sys.argv[2])
    mode = sys.argv[3] if len(sys.argv) > 3 else "write"
    backend = ChromaBackend(path, durability="sync", checkpoint_bytes=48 << 10)
    atlas = ElasticMemoryAtlas(embedder=HashingEmbedder(dim=64), backend=backend)
    for ns in ("alice", "bob"):  # namespaces load on first use: load them now, so the kills hit writes
        atlas.memories(namespace=ns)
    print("ready", flush=True)
    if mode == "hold":
        time.sleep(600)
    rng = random.Random(seed)
    words = ["milk", "tea", "paris", "berlin", "cat", "dog", "rain", "sun", "plan", "trip", "meeting", "code",
             "music", "book"]
    mine: list[str] = []
    for step in range(1_000_000):
        ns = rng.choice(["alice", "bob"])
        text = " ".join(rng.choice(words) for _ in range(6)) + f" #{seed}-{step}"
        roll = rng.random()
        if roll < 0.5:
            node = atlas.add_memory(text, namespace=ns, session_id=f"s{step % 3}")
            ids = [node.id]
        elif roll < 0.7:
            ids = [n.id for n in atlas.add_memories([f"{text} a", f"{text} b", f"{text} c"], namespace=ns)]
        elif roll < 0.85:
            atlas.retrieve(text, namespace=ns, top_k=3)
            ids = []
        elif roll < 0.95 and mine:
            old = mine.pop(rng.randrange(len(mine)))  # superseded now: only the new version is corrected again
            ids = [atlas.update_memory(old, text + " (corrected)").id]
        elif mine:
            victim = mine.pop(rng.randrange(len(mine)))
            print(f"forgetting {victim}", flush=True)  # before: it may be durable before we could say so
            atlas.forget(victim)
            ids = []
        else:
            ids = []
        mine.extend(ids)
        for node_id in ids:
            print(f"ack {node_id}", flush=True)


if __name__ == "__main__":
    main()
