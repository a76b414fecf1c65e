"""`add_memory` on FalkorDB against FalkorDB's own single create, call by call, with CPU times.

`latency.py --falkordb` times `add_memory` and the floor's single create minutes apart; on a
busy machine the two then see different loads. This script alternates them call by call on one
server: an `add_memory` (precomputed vector, one session of its own, as `latency.py` does) into
a namespace holding ``--size`` memories, then one ``CREATE (:Doc {id, content, embedding})`` into
a graph of as many documents under a vector, a full-text and an id index (`falkordb_floors`).
It prints the p50 of each, the median of the per-call ratios, the requests an `add_memory` sends,
and the CPU per call of this process and of the server (``--server-pid``, from ``/proc``).

The graphs are built on first use and kept (``bench-writes:`` and ``bench-writes-floor``), so
that runs of two versions of the code can be interleaved on the same data:

    python scripts/falkordb.py start --dir .falkordb/bench --appendfsync everysec
    PYTHONPATH=. .venv/bin/python benchmarks/falkordb_writes.py --url URL --server-pid PID
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from latency import build_atlas, make_corpus  # type: ignore[import-not-found]

from shared_core import AtlasConfig, ElasticMemoryAtlas, ManualClock
from shared_core.store.falkordb import parse_url
from shared_core.store.falkordb.client import Connection

PREFIX, FLOOR = "bench-writes:", "bench-writes-floor"


def _server_cpu(pid: int | None) -> Callable[[], float]:
    """Seconds of CPU the server process has used (0 without a pid)."""
    def read() -> float:
        if pid is None:
            return 0.0
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return read


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--server-pid", type=int)
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--prefix", default=PREFIX, help="the atlas's graph prefix (namespace 'bench')")
    parser.add_argument("--floor", default=FLOOR, help="the floor's graph")
    args = parser.parse_args(argv)
    import falkordb

    corpus, extra = make_corpus(args.size, 100, extra=300)
    settings = parse_url(args.url)
    db = falkordb.FalkorDB(host=settings.host, port=settings.port)
    base = args.url.split("?")[0]
    if not db.connection.exists(f"{args.prefix}bench"):
        build_atlas(corpus, backend=f"{base}?prefix={args.prefix}")
    floor = db.select_graph(args.floor)
    if not db.connection.exists(args.floor):
        dim = corpus.vectors.shape[1]
        floor.query(f"CREATE VECTOR INDEX FOR (d:Doc) ON (d.embedding) "
                    f"OPTIONS {{dimension: {dim}, similarityFunction: 'cosine'}}")
        floor.query("CALL db.idx.fulltext.createNodeIndex({label: 'Doc', language: 'english'}, 'content')")
        floor.query("CREATE INDEX FOR (d:Doc) ON (d.id)")
        for s in range(0, len(corpus.texts), 500):
            rows = [{"id": str(s + j), "content": t, "embedding": v.tolist()}
                    for j, (t, v) in enumerate(zip(corpus.texts[s:s + 500], corpus.vectors[s:s + 500], strict=True))]
            floor.query("UNWIND $rows AS r CREATE (:Doc {id: r.id, content: r.content, "
                        "embedding: vecf32(r.embedding)})", {"rows": rows})
    atlas = ElasticMemoryAtlas(config=AtlasConfig(), embedder=corpus.embedder(), clock=ManualClock(1_700_000_000.0),
                               backend=f"{base}?prefix={args.prefix}")
    run = uuid.uuid4().hex[:8]
    session = f"single-{run}"
    atlas.add_memory(extra.texts[-1], namespace="bench", session_id=session, embedding=extra.vectors[-1])
    requests: list[str] = []
    retrying = Connection._retrying

    def counted(self: Connection, call: Callable[[], Any], what: str, *, budget: float | None = None) -> Any:
        requests.append(what)
        return retrying(self, call, what, budget=budget)

    Connection._retrying = counted  # type: ignore[method-assign]
    server = _server_cpu(args.server_pid)
    ours: dict[str, list[float]] = {"wall": [], "cpu": [], "server": []}
    theirs: dict[str, list[float]] = {"wall": [], "cpu": [], "server": []}
    per_call: list[list[str]] = []
    for i in range(args.calls):
        text, vector = extra.texts[i % 300], extra.vectors[i % 300]
        requests.clear()
        c, s, t = time.process_time(), server(), time.perf_counter()
        atlas.add_memory(text, namespace="bench", session_id=session, embedding=vector)
        ours["wall"].append(time.perf_counter() - t)
        ours["cpu"].append(time.process_time() - c)
        ours["server"].append(server() - s)
        per_call.append(list(requests))
        c, s, t = time.process_time(), server(), time.perf_counter()
        floor.query("CREATE (:Doc {id: $id, content: $content, embedding: vecf32($v)})",
                    {"id": f"{run}-{i}", "content": text, "v": vector.tolist()})
        theirs["wall"].append(time.perf_counter() - t)
        theirs["cpu"].append(time.process_time() - c)
        theirs["server"].append(server() - s)
    Connection._retrying = retrying  # type: ignore[method-assign]
    ms = 1000.0
    ratio = statistics.median(a / b for a, b in zip(ours["wall"], theirs["wall"], strict=True))
    print(f"# load {os.getloadavg()[0]:.2f}, {args.calls} calls, {args.size:,} memories; "
          f"requests per add_memory: {per_call[-1]}")
    print("| per call | add_memory | one node created | ratio |\n|---|---:|---:|---:|")
    print(f"| wall p50 ms | {statistics.median(ours['wall']) * ms:.2f} | {statistics.median(theirs['wall']) * ms:.2f} "
          f"| {ratio:.2f}x (median of per-call ratios) |")
    for key, name in (("cpu", "this process's CPU ms (mean)"), ("server", "server CPU ms (mean)")):
        print(f"| {name} | {statistics.mean(ours[key]) * ms:.2f} | {statistics.mean(theirs[key]) * ms:.2f} | "
              f"{statistics.mean(ours[key]) / max(statistics.mean(theirs[key]), 1e-9):.2f}x |")


if __name__ == "__main__":
    main()
