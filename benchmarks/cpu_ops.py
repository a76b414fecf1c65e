"""CPU time per call of the four timed operations, on the interpreter that runs this script.

    .venv/bin/python benchmarks/cpu_ops.py --sizes 10000
    /usr/bin/python3.11 -m venv /tmp/v && /tmp/v/bin/pip install -e ".[dev]" && \
        /tmp/v/bin/python benchmarks/cpu_ops.py --sizes 10000     # the same code on another CPython

``latency.py`` times the wall clock, which on a shared machine moves with the other jobs; this
script reports the calling thread's CPU time (``time.thread_time``), medians over many calls, so
two interpreters (or two builds of one) can be compared on the same code run after run:
``add_memories`` per memory (second half of the build, batches as in ``latency.py``),
``add_memory`` (200 single adds into the built atlas), ``retrieve`` (top 10) and
``build_context`` (400 tokens, bullets), on ``latency.py``'s corpus and lookup embedder.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import latency

from shared_core import AtlasConfig, ElasticMemoryAtlas, ManualClock


def median_us(call: Callable[[int], object], count: int) -> float:
    """Median CPU microseconds of ``call(i)`` for i < count."""
    samples = []
    for i in range(count):
        start = time.thread_time()
        call(i)
        samples.append(time.thread_time() - start)
    return float(np.median(samples) * 1e6)


def row(n: int, config: AtlasConfig) -> str:
    corpus, extra = latency.make_corpus(n, 200, extra=200)
    atlas = ElasticMemoryAtlas(config=config, embedder=corpus.embedder(), clock=ManualClock(1_700_000_000.0))
    step = latency.batch_size(n)
    per_memory: list[float] = []
    for s in range(0, n, step):
        batch = [{"content": c, "session_id": f"s{(s + j) // 50}"} for j, c in enumerate(corpus.texts[s:s + step])]
        start = time.thread_time()
        atlas.add_memories(batch, namespace="bench", progress=False)
        per_memory.append((time.thread_time() - start) / len(batch))
    q = corpus.queries
    retrieve = median_us(lambda i: atlas.retrieve(q[i % len(q)], namespace="bench", top_k=10), 600)
    context = median_us(lambda i: atlas.build_context(q[i % len(q)], namespace="bench", token_budget=400,
                                                      style="bullet"), 600)
    single = median_us(lambda i: atlas.add_memory(extra.texts[i], namespace="bench", session_id="single",
                                                  embedding=extra.vectors[i]), len(extra.texts))
    bulk = float(np.median(per_memory[len(per_memory) // 2:]) * 1e6)
    return f"| {n:,} | {sys.version.split()[0]} | {bulk:.1f} | {single:.0f} | {retrieve:.0f} | {context:.0f} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000")
    parser.add_argument("--vector-dtype", choices=("float16", "float32"), default=None,
                        help="AtlasConfig.ann_vector_dtype (default: the config's default)")
    args = parser.parse_args()
    config = AtlasConfig() if args.vector_dtype is None else AtlasConfig(ann_vector_dtype=args.vector_dtype)
    print(f"# {sys.executable}, ann_vector_dtype {config.ann_vector_dtype}")
    print("| memories | python | `add_memories` us a memory | `add_memory` us | `retrieve` us | `build_context` us |")
    print("|---|---|---|---|---|---|")
    for n in (int(s) for s in args.sizes.split(",")):
        print(row(n, config), flush=True)


if __name__ == "__main__":
    main()
