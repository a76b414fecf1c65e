"""Many namespaces under a byte cap: does ``max_bytes`` bound the process, and what does a write cost?

    .venv/bin/python benchmarks/namespaces.py                       # 20,000 namespaces x 5 writes, 20 MB cap
    .venv/bin/python benchmarks/namespaces.py --namespaces 1000     # fewer tenants under the same cap
    .venv/bin/python benchmarks/namespaces.py --empty               # what one namespace costs (PARTITION_OVERHEAD)

The scenario of issue 20, item 3: an atlas capped at ``--cap-mb`` (``AtlasConfig.max_bytes``) takes
``--writes`` memories in each of ``--namespaces`` namespaces, one `add_memory` at a time, round
robin (each pass writes one memory to every namespace, so every namespace is alive at once; with
``--order tenant`` each namespace takes its writes in a row). Embeddings come from
``HashingEmbedder(dim=--dim)`` (384, as MiniLM), so the model's cost and memory are not measured;
the clock is a `ManualClock` one second on per write, so the run is deterministic.

Printed: ``bytes_used`` at the end and at most while writing (sampled every 1,000 writes), each
against the cap; the resident memory the atlas added (RSS after ``malloc_trim``, against a process
that had already built a one-memory atlas and loaded numpy), at the end and at most while
writing; the memories and namespaces kept, the evictions, and the smallest, median and largest
number of memories in a namespace kept; the latency of a write (median and 99th percentile, wall
clock) over the first and the last ``--window`` writes.

``--empty`` measures what a namespace costs by itself: the resident memory that ``--namespaces``
empty partitions add, and that as many one-memory namespaces add beyond their memories' count,
each per namespace.

Run it against another tree (the code before a change) with ``PYTHONPATH=<tree>``: the script
only uses the public API and ``atlas.backend``.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import gc
import os
import statistics
import sys
import time
from collections import Counter

from shared_core import AtlasConfig, ElasticMemoryAtlas, HashingEmbedder, ManualClock

WORDS = ("coffee", "tea", "garden", "flight", "hotel", "dentist", "invoice", "birthday", "project", "deadline",
         "meeting", "recipe", "budget", "holiday", "piano", "tennis", "doctor", "landlord", "parcel", "library")


def _trim() -> None:
    with contextlib.suppress(OSError, AttributeError):  # not glibc: RSS then includes free heap pages
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _settled_rss() -> int:
    gc.collect()
    _trim()
    return _rss()


def text(ns: int, w: int) -> str:
    """A short, distinct sentence (about 60 characters) for write ``w`` of namespace ``ns``."""
    a, b = WORDS[(ns * 7 + w) % len(WORDS)], WORDS[(ns * 3 + w * 5 + 1) % len(WORDS)]
    return f"Tenant {ns} noted: the {a} is tied to the {b}, item {w}."


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run(namespaces: int, writes: int, cap_mb: float, dim: int, order: str, window: int) -> None:
    cap = int(cap_mb * 1_000_000)
    clock = ManualClock(1_700_000_000.0)
    warm = ElasticMemoryAtlas(config=AtlasConfig(), embedder=HashingEmbedder(dim=dim), clock=clock)
    warm.add_memory("warm up", namespace="warm")
    atlas = ElasticMemoryAtlas(config=AtlasConfig(max_bytes=cap), embedder=HashingEmbedder(dim=dim), clock=clock)
    base = _settled_rss()
    if order == "round-robin":
        plan = [(ns, w) for w in range(writes) for ns in range(namespaces)]
    else:
        plan = [(ns, w) for ns in range(namespaces) for w in range(writes)]
    latencies: list[float] = []
    peak_used = peak_rss = 0
    started = time.perf_counter()
    for i, (ns, w) in enumerate(plan):
        clock.advance(1.0)
        t0 = time.perf_counter()
        atlas.add_memory(text(ns, w), namespace=f"tenant-{ns}", session_id="s")
        latencies.append(time.perf_counter() - t0)
        if i % 1000 == 999:
            peak_used = max(peak_used, atlas.stats().bytes_used)
            peak_rss = max(peak_rss, _rss() - base)
    elapsed = time.perf_counter() - started
    stats = atlas.stats()
    grown = _settled_rss() - base
    sizes = Counter(n.namespace for ns in atlas.backend.namespaces() for n in atlas.memories(namespace=ns))
    counts = sorted(sizes.values()) or [0]
    kept_parts = sum(1 for _ in atlas.backend.namespaces())
    first, last = latencies[:window], latencies[-window:]
    mb = 1_000_000
    print(f"{namespaces:,} namespaces x {writes} writes ({order}), dim {dim}, max_bytes {cap / mb:.1f} MB: "
          f"{len(plan):,} writes in {elapsed:.1f} s")
    print(f"  bytes_used   end {stats.bytes_used / mb:7.2f} MB ({stats.bytes_used / cap:.2f} x cap)   "
          f"max sampled {peak_used / mb:7.2f} MB ({peak_used / cap:.2f} x cap)")
    print(f"  RSS growth   end {grown / mb:7.2f} MB ({grown / cap:.2f} x cap)   "
          f"max sampled {peak_rss / mb:7.2f} MB ({peak_rss / cap:.2f} x cap, untrimmed)")
    print(f"  kept         {len(atlas):,} memories in {len(sizes):,} namespaces ({kept_parts:,} partitions); "
          f"evictions {stats.evictions:,}; memories per namespace min {counts[0]} median "
          f"{statistics.median(counts):g} max {counts[-1]}")
    print(f"  write (ms)   first {len(first):,}: median {statistics.median(first) * 1e3:.3f} "
          f"p99 {_percentile(first, 0.99) * 1e3:.3f}   last {len(last):,}: median "
          f"{statistics.median(last) * 1e3:.3f} p99 {_percentile(last, 0.99) * 1e3:.3f}")
    ok = stats.bytes_used <= cap and grown <= 2 * cap
    print(f"  bound held   {'yes' if ok else 'NO'} (bytes_used <= cap and RSS growth <= 2 x cap)")


def empty(namespaces: int, dim: int) -> None:
    clock = ManualClock(1_700_000_000.0)
    atlas = ElasticMemoryAtlas(embedder=HashingEmbedder(dim=dim), clock=clock)
    atlas.add_memory("warm up", namespace="warm")
    backend = atlas.backend
    base = _settled_rss()
    for ns in range(namespaces):
        backend.partition(f"empty-{ns}", create=True)
    per_empty = (_settled_rss() - base) / namespaces
    for ns in range(namespaces):
        backend.drop(f"empty-{ns}")
    other = ElasticMemoryAtlas(embedder=HashingEmbedder(dim=dim), clock=clock)
    other.add_memory("warm up", namespace="warm")
    used0 = other.stats().bytes_used
    base = _settled_rss()
    for ns in range(namespaces):
        clock.advance(1.0)
        other.add_memory(text(ns, 0), namespace=f"tenant-{ns}", session_id="s")
    grown = (_settled_rss() - base) / namespaces
    used = (other.stats().bytes_used - used0) / namespaces
    print(f"dim {dim}, {namespaces:,} namespaces: an empty partition adds {per_empty:,.0f} bytes of RSS; "
          f"a one-memory namespace {grown:,.0f} (bytes_used counts {used:,.0f})")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--namespaces", type=int, default=20_000)
    parser.add_argument("--writes", type=int, default=5)
    parser.add_argument("--cap-mb", type=float, default=20.0)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--order", choices=("round-robin", "tenant"), default="round-robin")
    parser.add_argument("--window", type=int, default=1000)
    parser.add_argument("--empty", action="store_true", help="what one namespace costs by itself")
    args = parser.parse_args(argv)
    if args.empty:
        empty(min(args.namespaces, 10_000), args.dim)
    else:
        run(args.namespaces, args.writes, args.cap_mb, args.dim, args.order, args.window)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
