"""Keyword indexes side by side: SQLite FTS5 (`FTS5KeywordIndex`) against the in-memory BM25
posting lists (`InvertedKeywordIndex`, the in-process default), on the corpus of latency.py.

    .venv/bin/python benchmarks/keyword_index.py                      # 10k and 100k (~2 min)
    .venv/bin/python benchmarks/keyword_index.py --sizes 10000 --no-memory

For each size and index it prints the p50 / p95 of ``search`` (ms) at k=10 and k=200 over the
benchmark's queries (three rounds), the cost of adding (µs per memory: ``add_many`` in batches of
1,000 as the atlas writes, median of three builds; ``add`` one at a time, p50 over 2,000 more),
and the bytes each memory adds, by RSS and by tracemalloc (which misses SQLite's own
allocations), each measured in a fresh interpreter. Ids are 24 characters, as long as the
atlas makes them, spread over 20 sessions. A last line checks that both indexes rank alike: how many
queries get the same top 10 and the largest score difference.
"""

from __future__ import annotations

import argparse
import gc
import os
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from latency import _rss, _trim, make_corpus

from shared_core import FTS5KeywordIndex, InvertedKeywordIndex

Index = FTS5KeywordIndex | InvertedKeywordIndex
KINDS: dict[str, Callable[[], Index]] = {"FTS5KeywordIndex": FTS5KeywordIndex.create,
                                         "InvertedKeywordIndex": InvertedKeywordIndex}
BATCH = 1_000
SINGLES = 2_000


def rows_of(texts: Sequence[str], start: int = 0) -> list[tuple[str, str, str | None]]:
    return [(f"{start + i:024x}", text, f"session-{(start + i) % 20}") for i, text in enumerate(texts)]


def build(kind: str, rows: Sequence[tuple[str, str, str | None]]) -> tuple[Index, float]:
    """The index holding ``rows`` (added in batches) and the seconds that took."""
    index = KINDS[kind]()
    t0 = time.perf_counter()
    for start in range(0, len(rows), BATCH):
        index.add_many(rows[start:start + BATCH])
    return index, time.perf_counter() - t0


def ms(samples: Sequence[float]) -> tuple[float, float]:
    return float(np.percentile(samples, 50)) * 1e3, float(np.percentile(samples, 95)) * 1e3


def time_searches(index: Index, queries: Sequence[str], k: int, rounds: int = 3) -> list[float]:
    for q in queries[:20]:  # warm up
        index.search(q, k)
    samples = []
    for _ in range(rounds):
        for q in queries:
            t0 = time.perf_counter()
            index.search(q, k)
            samples.append(time.perf_counter() - t0)
    return samples


def bench(kind: str, n: int, queries: int) -> dict[str, float]:
    corpus, extra = make_corpus(n, queries, extra=SINGLES)
    rows = rows_of(corpus.texts)
    builds = [build(kind, rows) for _ in range(3)]
    index = builds[-1][0]
    out = {"add_many_us": float(np.median([seconds for _, seconds in builds])) / n * 1e6}
    del builds
    for k in (10, 200):
        out[f"k{k}_p50"], out[f"k{k}_p95"] = ms(time_searches(index, corpus.queries, k))
    singles = rows_of(extra.texts, start=n)
    samples = []
    for node_id, text, session in singles:
        t0 = time.perf_counter()
        index.add(node_id, text, session_id=session)
        samples.append(time.perf_counter() - t0)
    out["add_us"] = float(np.percentile(samples, 50)) * 1e6
    return out


def memory_probe(kind: str, n: int, traced: bool) -> float:
    """Bytes per memory that ``n`` memories add to this process (RSS, or tracemalloc's count)."""
    corpus, _ = make_corpus(n, 1)
    rows = rows_of(corpus.texts)  # ids and texts exist before the count: the atlas holds them anyway
    build(kind, rows[:BATCH])[0].search("warm up", 10)  # imports and first-use tables outside the count
    gc.collect()
    _trim()
    if traced:
        tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0] if traced else _rss()
    index, _ = build(kind, rows)
    gc.collect()
    _trim()
    grown = (tracemalloc.get_traced_memory()[0] if traced else _rss()) - before
    assert len(index) == n
    return grown / n


def probe(kind: str, n: int, traced: bool) -> float:
    args = [sys.executable, __file__, "--probe", kind, str(n)] + (["--traced"] if traced else [])
    done = subprocess.run(args, capture_output=True, text=True, check=True)
    return float(done.stdout.strip().splitlines()[-1])


def agreement(n: int, queries: int) -> str:
    corpus, _ = make_corpus(n, queries)
    rows = rows_of(corpus.texts)
    fts, inverted = build("FTS5KeywordIndex", rows)[0], build("InvertedKeywordIndex", rows)[0]
    same, worst = 0, 0.0
    for q in corpus.queries:
        a, b = fts.search(q, 200), inverted.search(q, 200)
        same += [i for i, _ in a[:10]] == [i for i, _ in b[:10]]
        scores = dict(a)
        worst = max([worst, *(abs(scores[i] - s) for i, s in b if i in scores)])
    return (f"{n:,} memories: same top 10 for {same} of {len(corpus.queries)} queries (the others differ in the "
            f"order of equal scores); largest score difference {worst:.1e}")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--no-memory", action="store_true", help="skip the memory probes")
    parser.add_argument("--probe", nargs=2, metavar=("KIND", "N"), help=argparse.SUPPRESS)
    parser.add_argument("--traced", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.probe:
        print(memory_probe(args.probe[0], int(args.probe[1]), args.traced))
        return
    print(f"# {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}, python {sys.version.split()[0]}")
    print("| index | memories | search k=10 p50 / p95 ms | search k=200 p50 / p95 ms | add_many µs/memory "
          "| add µs (p50) | RSS B/memory | tracemalloc B/memory |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    sizes = [int(s) for s in args.sizes.split(",")]
    for n in sizes:
        for kind in KINDS:
            r = bench(kind, n, args.queries)
            rss = traced = float("nan")
            if not args.no_memory:
                rss, traced = probe(kind, n, traced=False), probe(kind, n, traced=True)
            print(f"| {kind} | {n:,} | {r['k10_p50']:.3f} / {r['k10_p95']:.3f} | {r['k200_p50']:.3f} / "
                  f"{r['k200_p95']:.3f} | {r['add_many_us']:.1f} | {r['add_us']:.1f} | {rss:,.0f} | {traced:,.0f} |",
                  flush=True)
    print()
    for n in sizes:
        print(agreement(n, args.queries))


if __name__ == "__main__":
    main()
