"""Where a recall's wall time goes on the FalkorDB backend, request by request.

    python scripts/falkordb.py start --dir .falkordb/bench
    PYTHONPATH=. .venv/bin/python benchmarks/falkordb_requests.py --url URL [--size 10000] [--pause MS]

writes `latency.make_corpus`'s memories into a namespace of its own on ``URL`` (once: a later run
on the same server reuses them), then times ``retrieve`` and ``build_context`` as `latency.py`
does, over the corpus's queries: each call's wall p50 and CPU time in this process, and the wall
time of each of its requests by its place in the call (the first request, the walk's hops, ...:
every request goes through `Connection._retrying`), median, with how many calls made it (n = the
queries for a request every call makes). ``--pause`` sleeps that many milliseconds before each
call (an app doing something else between two recalls). Run it with another tree first on
``PYTHONPATH`` to compare trees (run them in turn: the machine's load moves).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

PREFIX = "requests:"


def _atlas(url: str, size: int, queries: int) -> tuple[Any, list[str]]:
    from latency import OVERRIDES, build_atlas, make_corpus

    from shared_core import AtlasConfig, ElasticMemoryAtlas, ManualClock
    from shared_core.store.falkordb import FalkorDBBackend

    corpus = make_corpus(size, queries)[0]
    prefixed = f"{url.split('?')[0]}?prefix={PREFIX}"
    if FalkorDBBackend.from_url(prefixed, dim=corpus.vectors.shape[1]).memory_count("bench") < size:
        build_atlas(corpus, backend=prefixed)
    atlas = ElasticMemoryAtlas(config=AtlasConfig(**OVERRIDES), embedder=corpus.embedder(),
                               clock=ManualClock(1_700_000_000.0), backend=prefixed)
    return atlas, list(corpus.queries)


def _calls(atlas: Any, queries: list[str]) -> dict[str, Callable[[int], Any]]:
    from latency import BUDGET, TOP_K

    return {"retrieve": lambda i: atlas.retrieve(queries[i % len(queries)], namespace="bench", top_k=TOP_K),
            "build_context": lambda i: atlas.build_context(queries[i % len(queries)], namespace="bench",
                                                           token_budget=BUDGET, style="bullet")}


def requests(atlas: Any, queries: list[str], pause: float = 0.0) -> list[str]:
    """Each request's wall time by its place in the call (see the module docstring), ``pause``
    seconds between calls (not timed)."""
    from shared_core.store.falkordb.client import Connection

    log: list[float] = []
    retrying = Connection._retrying

    def timed(self: Connection, call: Callable[[], Any], what: str, *, budget: float | None = None) -> Any:
        start = time.perf_counter()
        try:
            return retrying(self, call, what, budget=budget)
        finally:
            log.append(time.perf_counter() - start)

    out = []
    Connection._retrying = timed  # type: ignore[method-assign]
    try:
        for name, call in _calls(atlas, queries).items():
            for i in range(3):
                call(i)
            places: dict[int, list[float]] = {}
            walls, cpus = [], []
            for i in range(len(queries)):
                if pause:
                    time.sleep(pause)
                log.clear()
                wall, cpu = time.perf_counter(), time.process_time()
                call(i)
                cpus.append(time.process_time() - cpu)
                walls.append(time.perf_counter() - wall)
                for place, spent in enumerate(log):
                    places.setdefault(place, []).append(spent)
            each = ", ".join(f"#{p}: {1e3 * statistics.median(v):.2f} (n={len(v)})" for p, v in places.items())
            out.append(f"{name}: wall p50 {1e3 * statistics.median(walls):.2f} ms, CPU "
                       f"{1e3 * statistics.mean(cpus):.2f} ms a call; each request's wall ms, median: {each}")
    finally:
        Connection._retrying = retrying  # type: ignore[method-assign]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", required=True, help="a FalkorDB server (falkordb://host:port)")
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--pause", type=float, default=0.0, help="ms before each call (an app between two recalls)")
    args = parser.parse_args()
    import os

    atlas, queries = _atlas(args.url, args.size, args.queries)
    print(f"# load {os.getloadavg()[0]:.2f}")
    for line in requests(atlas, queries, args.pause / 1e3):
        print(line)
    print(f"# load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
