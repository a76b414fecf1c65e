"""Single ``add_memory`` calls of this tree against another commit's: the same stores, and CPU
time per call.

    .venv/bin/python benchmarks/single_ab.py --base main --sizes 10000,100000 --adds 1000

Both atlases are built in one process as ``write_ab.py`` builds them (same corpus, same memory
ids, batches of 1,000), then take ``--adds`` single ``add_memory`` calls with precomputed
vectors in session "single" (as ``latency.py``'s ``add_memory`` row does), the two alternating
call by call (which one goes first alternates too). Then the stores are compared: every part
``write_ab.state`` compares, plus each inverted list's ids and vectors in order, the room the
lists hold, and the keyword index's answers to 20 queries. Printed: the differing parts (none
expected) and the median and mean CPU time (``time.thread_time``) per call of each.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import latency
from read_ab import ab_parser, base_for, config
from write_ab import PARTS, state

import shared_core

EXTRA = ("inverted lists", "list room", "keyword answers")


def lists_state(atlas: Any, queries: list[str]) -> tuple[Any, ...]:
    """Each inverted list's ids and vector bytes, the lists' room, and keyword search answers."""
    import faiss

    part = atlas.backend.partition("bench")
    impl = part.vectors._impl
    answers = [part.keywords.search(q, 10) for q in queries]
    if not hasattr(impl, "_invlists"):  # still the exact index (small atlases): its ids and vectors
        return (impl.ids(), impl.matrix().tobytes()), None, answers
    invlists, sizes = impl._invlists, impl._sizes
    code_size = int(invlists.code_size)
    lists = [(faiss.rev_swig_ptr(invlists.get_ids(lst), int(n)).tolist(),
              faiss.rev_swig_ptr(invlists.get_codes(lst), int(n) * code_size).tobytes())
             for lst, n in enumerate(sizes.tolist())]
    room = (impl._room.codes.tolist(), impl._room.ids.tolist())
    return lists, room, answers


def compare(base: Any, n: int, adds: int) -> None:
    corpus, extra = latency.make_corpus(n, 0, extra=adds)
    atlases = [pkg.ElasticMemoryAtlas(config=config(pkg), embedder=corpus.embedder(),
                                      clock=pkg.ManualClock(1_700_000_000.0)) for pkg in (base, shared_core)]
    ids = [np.random.default_rng(1), np.random.default_rng(1)]  # the same ids in both
    real = os.urandom
    step = latency.batch_size(n)
    cpu: tuple[list[float], list[float]] = ([], [])
    try:
        for start in range(0, n, step):
            items = [{"content": t, "session_id": f"s{(start + j) // 50}"}
                     for j, t in enumerate(corpus.texts[start:start + step])]
            for which in (0, 1):
                os.urandom = ids[which].bytes
                atlases[which].add_memories(items, namespace="bench", progress=False)
        for i in range(adds):
            for which in ((0, 1) if i % 2 else (1, 0)):
                os.urandom = ids[which].bytes
                t0 = time.thread_time()
                atlases[which].add_memory(extra.texts[i], namespace="bench", session_id="single",
                                          embedding=extra.vectors[i])
                cpu[which].append(time.thread_time() - t0)
    finally:
        os.urandom = real
    queries = [" ".join(t.split()[1:4]) for t in extra.texts[:20]]
    old = (*state(atlases[0]), *lists_state(atlases[0], queries))
    new = (*state(atlases[1]), *lists_state(atlases[1], queries))
    differing = [name for name, a, b in zip(PARTS + EXTRA, old, new, strict=True) if a != b]
    med = [float(np.median(c)) * 1e6 for c in cpu]
    mean = [float(np.mean(c)) * 1e6 for c in cpu]
    print(f"| {n:,} | {adds} | {', '.join(differing) or 'none'} | {med[0]:.1f} | {med[1]:.1f} | "
          f"{mean[0]:.1f} | {mean[1]:.1f} |", flush=True)


def main() -> None:
    parser = ab_parser(__doc__, "10000")
    parser.add_argument("--adds", type=int, default=1000)
    args = parser.parse_args()
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)
    with base_for(args) as base:
        print("| memories | single adds | differing | base CPU us p50 | this tree | base mean | this tree |")
        print("|---|---|---|---|---|---|---|")
        for n in (int(s) for s in args.sizes.split(",")):
            compare(base, n, args.adds)


if __name__ == "__main__":
    main()
