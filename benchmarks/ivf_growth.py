"""The IVF index grown the way an atlas grows it, on MiniLM vectors: recall@10, vectors scanned
and search time at checkpoints, and the CPU time of the growth (what the retrain schedule costs
the write path).

    .venv/bin/python benchmarks/ivf_growth.py ../shared/data/locomo/locomo_dev.json --sizes 3000,10000
    .venv/bin/python benchmarks/ivf_growth.py ../shared/data/locomo/locomo_dev.json --seeds 1-10

The vectors are those of ``latency.py --real-recall`` (the LoCoMo turns embedded with MiniLM,
mixed in pairs, ``w a + (1 - w) b`` plus noise 0.03; its questions are the queries), added in
batches of 1,000 as ``latency.py`` adds memories: exact below ``AtlasConfig.ann_threshold``
(2,048), the IVF index built on the first batch past it, then grown with `IVFVectorIndex.add`
(the same retrain schedule as the write path's ``add_and_link``). Recall varies a lot with the
k-means seed (0.92 to 0.99 at 10k), so compare means over several ``--seeds``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as latency.py's --blas-threads 1

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).parent))
import latency

from shared_core.store.memory.ann_index import IVFVectorIndex, VectorDtype

BATCH = 1000
THRESHOLD = 2048


def grow(data: npt.NDArray[np.float32], queries: npt.NDArray[np.float32], sizes: list[int], seed: int,
         dtype: VectorDtype = "float16") -> list[str]:
    """Table rows for one training seed."""
    ids = [str(i) for i in range(len(data))]
    index: IVFVectorIndex | None = None
    rows: list[str] = []
    cpu, n = 0.0, 0
    while n < len(data):
        step = min(BATCH, len(data) - n)
        start = time.process_time()
        if index is not None:
            index.add(ids[n:n + step], data[n:n + step])
        elif n + step >= THRESHOLD:
            index = IVFVectorIndex.build(ids[:n + step], data[:n + step], seed=seed, vector_dtype=dtype)
        cpu += time.process_time() - start
        n += step
        if index is None or n not in sizes:
            continue
        exact = np.argsort(-(queries @ data[:n].T), axis=1)[:, :latency.TOP_K]
        hits = [[int(h) for h, _ in index.search(q, latency.TOP_K)] for q in queries]
        recall = np.mean([len(set(h) & set(e.tolist())) / latency.TOP_K for h, e in zip(hits, exact, strict=True)])
        _, probed = index._quantizer.search(queries, index.probes)
        scanned = float(np.mean(index._sizes[probed].sum(axis=1)))
        start = time.process_time()
        for q in queries:
            index.search_ranked(q, 200)
        search_us = (time.process_time() - start) / len(queries) * 1e6
        rows.append(f"| {seed} | {n:,} | {index.lists} | {index.probes} | {index.retrains} | {scanned:,.0f} | "
                    f"{recall:.3f} | {search_us:.0f} | {cpu:.2f} |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("locomo", help="the LoCoMo file (locomo_dev.json)")
    parser.add_argument("--sizes", default="3000,5000,7000,10000,12000", help="checkpoints (multiples of 1,000)")
    parser.add_argument("--seeds", default="1234", help="k-means seeds: 1,2,3 or 1-10")
    parser.add_argument("--vector-dtype", choices=("float16", "float32"), default="float16",
                        help="how the index stores vectors (AtlasConfig.ann_vector_dtype; default float16)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    low, _, high = args.seeds.partition("-")
    seeds = list(range(int(low), int(high) + 1)) if high else [int(s) for s in args.seeds.split(",")]
    turns, queries = latency.locomo_vectors(args.locomo)
    data = latency.mixes(turns, max(sizes), np.random.default_rng(0))
    print("| seed | vectors | lists | probes | trainings | vectors scanned | recall@10 | k=200 search us (CPU) "
          "| growth CPU s |")
    print("|---|---|---|---|---|---|---|---|---|")
    recalls: dict[int, list[float]] = {}
    for seed in seeds:
        for row in grow(data, queries, sizes, seed, args.vector_dtype):
            print(row, flush=True)
            cells = row.split("|")
            recalls.setdefault(int(cells[2].replace(",", "")), []).append(float(cells[7]))
    for n, values in recalls.items():
        print(f"{n:,}: recall@10 mean {np.mean(values):.3f}, min {min(values):.3f} over {len(values)} seed(s)")


if __name__ == "__main__":
    main()
