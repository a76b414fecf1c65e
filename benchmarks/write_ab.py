"""The write path of this tree against another commit's: the same stores, and CPU time per memory.

    .venv/bin/python benchmarks/write_ab.py --base main --sizes 12000,100000

The base commit's ``shared_core`` is imported under another name (as ``read_ab.py`` does) and
both atlases are built in one process from the same corpus (``latency.make_corpus``) with the
same memory ids, batch by batch as ``latency.py`` builds (1,000 memories a batch, sessions of
50), the two interleaved batch by batch (which one goes first alternates). Then:

- the stores are compared: every node, every edge (ends, relation, strength, time, metadata)
  in the order the store lists them, the graph's row columns and adjacency lists, the time
  index, the sessions, the vector index's labels and list sizes, and its vectors as stored;
- CPU time (``time.process_time``) per memory, the median over the batches of each half of the
  build (the second half is where a large atlas's costs show).
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import latency
from read_ab import ab_parser, base_for, config

import shared_core

PARTS = ("nodes", "edges", "graph rows", "adjacency lists", "time index", "sessions", "vector labels", "vectors")


def state(atlas: Any) -> tuple[Any, ...]:
    """What the write path leaves in the partition ``bench``, part by part (see `PARTS`)."""
    part = atlas.backend.partition("bench")
    g = part.graph
    nodes = [(n.id, n.content, n.session_id, n.weight, n.timestamp, n.turn, n.created_at) for n in g.nodes()]
    edges = [[(e.source, e.target, e.relation.value, e.strength, e.created_at, dict(e.metadata))
              for e in g.edges(n[0])] for n in nodes]
    rows = tuple(bytes(getattr(g, name)) for name in ("_ends", "_rel", "_strength", "_when", "_times", "_free_rows"))
    lists = tuple(bytes(getattr(lst, name)) for lst in (g._out, g._in)
                  for name in ("data", "starts", "lengths", "classes"))
    vectors = part.vectors._impl
    labels = (dict(vectors._labels), vectors._sizes.tolist()) if hasattr(vectors, "_sizes") else None
    sessions = {k: list(v) for k, v in part.sessions.items()}
    ids, matrix = vectors.vectors() if hasattr(vectors, "_sizes") else (vectors.ids(), vectors.matrix())
    stored = hashlib.sha256(matrix.tobytes()).hexdigest(), list(ids)  # the vectors as stored
    return nodes, edges, rows, lists, part._times._flat(), sessions, labels, stored


def compare(base: Any, n: int) -> None:
    corpus, _ = latency.make_corpus(n, 0)
    atlases = [pkg.ElasticMemoryAtlas(config=config(pkg), embedder=corpus.embedder(),
                                      clock=pkg.ManualClock(1_700_000_000.0)) for pkg in (base, shared_core)]
    ids = [np.random.default_rng(1), np.random.default_rng(1)]  # the same ids in both
    cpu: tuple[list[float], list[float]] = ([], [])
    step, real = latency.batch_size(n), os.urandom
    for b, start in enumerate(range(0, n, step)):
        items = [{"content": t, "session_id": f"s{(start + j) // 50}"}
                 for j, t in enumerate(corpus.texts[start:start + step])]
        for which in ((0, 1) if b % 2 else (1, 0)):
            os.urandom = ids[which].bytes
            try:
                t0 = time.process_time()
                atlases[which].add_memories(items, namespace="bench", progress=False)
                cpu[which].append((time.process_time() - t0) / len(items))
            finally:
                os.urandom = real
    old, new = state(atlases[0]), state(atlases[1])
    differing = [name for name, a, b in zip(PARTS, old, new, strict=True) if a != b]
    if "edges" in differing:  # how many memories' edge lists differ: a float16 index's cosines (the
        # similar_to strengths) differ in the last digits, and a few links go to other memories
        changed = sum(a != b for a, b in zip(old[1], new[1], strict=True))
        ends = sum([e[:3] for e in a] != [e[:3] for e in b] for a, b in zip(old[1], new[1], strict=True))
        differing[differing.index("edges")] = (f"edges ({changed:,} of {len(old[1]):,} memories' lists, "
                                               f"{ends:,} in their ends or relations)")
    half = len(cpu[0]) // 2
    cells = []
    for lo, hi in ((0, half), (half, len(cpu[0]))):
        a, c = (float(np.median(samples[lo:hi])) * 1e6 for samples in cpu)
        cells.append(f"{a:.1f} | {c:.1f} | {c / a:.3f}")
    print(f"| {n:,} | {', '.join(differing) or 'none'} | {' | '.join(cells)} |", flush=True)


def main() -> None:
    parser = ab_parser(__doc__, "12000")
    args = parser.parse_args()
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)
    with base_for(args) as base:
        print("| memories | differing | first half: base CPU us/memory | this tree | ratio "
              "| second half: base | this tree | ratio |")
        print("|---|---|---|---|---|---|---|---|")
        for n in (int(s) for s in args.sizes.split(",")):
            compare(base, n)


if __name__ == "__main__":
    main()
