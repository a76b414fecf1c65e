"""Load on a FalkorDB cluster: several processes, each with its own namespaces, writing and
recalling at once for a bounded time; then every acknowledged write is looked for.

    python benchmarks/cluster_load.py --url falkordb://127.0.0.1:PORT [--processes 4]
        [--namespaces 200] [--seconds 60] [--dim 384]

Each process opens its own atlas on the cluster (a graph key prefix of the run's own) and, until
``--seconds`` have passed, picks one of its ``--namespaces`` at random and either stores a memory
(``add_memory``, ``keep=True``, a precomputed vector) or, half the time once the namespace holds
one, recalls (``retrieve``, top 5, the query's vector precomputed: the embedder is a dict lookup,
so the store is what is measured). Every memory's text starts with its namespace's name, so a
recall that returns another namespace's memory is seen. After the run each process reads back
the ids of each of its namespaces (a fresh connection) and compares them with the writes the
atlas acknowledged: ``lost`` counts acknowledged ids missing, ``foreign`` ids present that it never
wrote, ``cross`` recalled memories of another namespace. Then it drops its namespaces.

Prints p50 / p95 of ``add_memory`` and ``retrieve`` over every process, and the counts
(`tests/falkordb/test_load.py` runs it for less time and asserts 0 lost, 0 foreign, 0 cross).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import time
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

QUERIES = 64  # precomputed query vectors per process
VECTORS = 1024  # precomputed memory vectors per process


@dataclass
class Report:
    """What the run did, over every process (latencies in seconds)."""

    processes: int
    namespaces: int
    seconds: float
    writes: int = 0
    recalls: int = 0
    lost: int = 0
    foreign: int = 0
    cross: int = 0
    errors: list[str] = field(default_factory=list)
    write_s: list[float] = field(default_factory=list)
    recall_s: list[float] = field(default_factory=list)

    def percentiles(self) -> dict[str, float]:
        """p50 and p95 in ms of each operation."""
        out: dict[str, float] = {}
        for name, samples in (("add_memory", self.write_s), ("retrieve", self.recall_s)):
            if samples:
                p50, p95 = np.percentile(np.array(samples) * 1000, [50, 95])
                out[f"{name} p50"], out[f"{name} p95"] = float(p50), float(p95)
        return out

    def table(self) -> str:
        ms = self.percentiles()
        rows = ["| operation | count | p50 ms | p95 ms |", "| --- | ---: | ---: | ---: |"]
        for name, count in (("add_memory", self.writes), ("retrieve", self.recalls)):
            rows.append(f"| `{name}` | {count} | {ms.get(f'{name} p50', float('nan')):.1f} | "
                        f"{ms.get(f'{name} p95', float('nan')):.1f} |")
        return "\n".join(rows) + (f"\n\n{self.processes} processes x {self.namespaces} namespaces, "
                                  f"{self.seconds:g} s: lost {self.lost}, foreign {self.foreign}, "
                                  f"cross-namespace {self.cross}, errors {len(self.errors)}")


class _Lookup:
    """The `Embedder` of the queries: a dict lookup."""

    def __init__(self, table: dict[str, np.ndarray]) -> None:
        self.table = table
        self.dim = len(next(iter(table.values())))

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self.table[t] for t in texts])


def _unit(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    rows = rng.standard_normal((n, dim)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def worker(index: int, url: str, namespaces: int, seconds: float, dim: int, seed: int) -> dict[str, Any]:
    """One process's share (run in a process of its own): the counts and latencies."""
    from shared_core import AtlasError, ElasticMemoryAtlas
    from shared_core.store.falkordb import FalkorDBBackend

    rng = np.random.default_rng(seed + index)
    vectors = _unit(rng, VECTORS, dim)
    queries = [f"query {q}: what did they say about topic {q}" for q in range(QUERIES)]
    embedder = _Lookup(dict(zip(queries, _unit(rng, QUERIES, dim), strict=True)))
    names = [f"p{index}n{j}" for j in range(namespaces)]
    atlas = ElasticMemoryAtlas(embedder=embedder, backend=url)  # type: ignore[arg-type]
    written: dict[str, set[str]] = {ns: set() for ns in names}
    out: dict[str, Any] = {"writes": 0, "recalls": 0, "cross": 0, "errors": [], "write_s": [], "recall_s": []}
    end = time.monotonic() + seconds
    k = 0
    while time.monotonic() < end:
        ns = names[int(rng.integers(namespaces))]
        try:
            if not written[ns] or rng.random() < 0.5:
                t0 = time.perf_counter()
                node = atlas.add_memory(f"{ns} note {k}: topic {k % QUERIES}", namespace=ns, keep=True,
                                        embedding=vectors[k % VECTORS])
                out["write_s"].append(time.perf_counter() - t0)
                written[ns].add(node.id)
                out["writes"] += 1
            else:
                t0 = time.perf_counter()
                hits = atlas.retrieve(queries[k % QUERIES], namespace=ns, top_k=5)
                out["recall_s"].append(time.perf_counter() - t0)
                out["recalls"] += 1
                out["cross"] += sum(h.node.namespace != ns or not h.node.content.startswith(f"{ns} note ")
                                    for h in hits)
        except AtlasError as exc:  # counted, and the run goes on
            out["errors"].append(f"{type(exc).__name__}: {exc}")
        k += 1
    atlas.backend.close()  # type: ignore[attr-defined]
    check = FalkorDBBackend.from_url(url, dim=dim)
    lost = foreign = 0
    for ns in names:
        part = check.partition(ns)
        stored = set(part.graph.node_ids()) if part is not None else set()
        lost += len(written[ns] - stored)
        foreign += len(stored - written[ns])
        check.drop(ns)
    check.close()
    out["lost"], out["foreign"] = lost, foreign
    return out


def run(url: str, *, processes: int = 4, namespaces: int = 200, seconds: float = 60.0, dim: int = 384,
        seed: int = 0) -> Report:
    """The load, ``processes`` processes (spawned) on ``url``, under a prefix of the run's own."""
    base, _, query = url.partition("?")
    prefix = f"load{uuid.uuid4().hex[:8]}:"
    url = f"{base}?{query + '&' if query else ''}prefix={prefix}"
    report = Report(processes, namespaces, seconds)
    context = multiprocessing.get_context("spawn")
    with context.Pool(processes) as pool:
        results = pool.starmap(worker, [(i, url, namespaces, seconds, dim, seed) for i in range(processes)])
    for result in results:
        for name in ("writes", "recalls", "lost", "foreign", "cross"):
            setattr(report, name, getattr(report, name) + result[name])
        report.errors.extend(result["errors"])
        report.write_s.extend(result["write_s"])
        report.recall_s.extend(result["recall_s"])
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="any node of the cluster (options such as ?replicas=1 kept)")
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--namespaces", type=int, default=200, help="per process")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--json", default=None, help="write the counts and percentiles here")
    args = parser.parse_args(argv)
    report = run(args.url, processes=args.processes, namespaces=args.namespaces, seconds=args.seconds, dim=args.dim)
    print(report.table())
    for error in report.errors[:5]:
        print("error:", error)
    if args.json:
        summary = {k: v for k, v in asdict(report).items() if k not in ("write_s", "recall_s")}
        with open(args.json, "w") as f:
            json.dump({**summary, **report.percentiles()}, f, indent=1)
    return 0 if not (report.lost or report.foreign or report.cross) else 1


if __name__ == "__main__":
    raise SystemExit(main())
