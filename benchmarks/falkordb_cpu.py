"""CPU per recall on the FalkorDB backend, A/B between source trees, interleaved.

    .venv/bin/python benchmarks/falkordb_cpu.py --trees /tmp/main,. --runs 3

starts a FalkorDB server (or uses ``--url`` with the server's ``--pid``), writes
`latency.make_corpus`'s memories once into a base graph (10,000 by default), then runs each tree
in turn, ``--runs`` times (A, B, A, B, ...): each run is a fresh process with that tree first on
``sys.path``, on a fresh copy of the base graph (``GRAPH.COPY``, so every run starts from the same
state), and times ``retrieve`` and ``build_context`` over the corpus's queries as `latency.py`
does. For each call it reports the wall time's median, this process's CPU time per call
(``time.process_time``) and the server's (its ``utime + stime`` from ``/proc``, which counts
every client of the server: run it on a server of its own), and a digest of every result (ids,
scores, factors, the context's text): two trees that rank alike print the same digest.

With ``--in-place`` the runs share the base graph instead (``GRAPH.COPY`` forks the server, and
has been seen to leave it hung under load): the digest then covers a first pass of both calls
without reinforcement by each tree before any timed run (so that each sees the graph as built),
and each timed pass starts from the weights the run before it left.

With ``--statements`` each run also adds up the server's own time per statement (the "internal
execution time" FalkorDB reports with every reply, which leaves out receiving the command and
sending the reply) by kind of statement, per call, and prints them per tree (median of the runs).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
BASE = "cpubase:bench"


def _server_cpu(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _redis(url: str) -> Any:
    import redis

    host, port = url.split("//", 1)[1].split("?")[0].rsplit(":", 1)
    return redis.Redis(host=host, port=int(port))


#: kinds of statement, by a piece of their text (the first that matches names it)
KINDS = (("db.idx.vector.queryNodes", "vector top-k"), ("UNWIND $stems AS t OPTIONAL MATCH", "BM25 counted top-k"),
         ("UNWIND $seeds AS pr", "BM25 pruned top-k"), ("MATCH (m:Memory) WHERE t IN m.terms RETURN", "BM25 counts"),
         ("MATCH (w:Term {t: t}) WHERE w.df > 0 RETURN", "BM25 counts"),
         ("IN n.terms", "BM25 top-k, every match"), ("SET n.weight", "reinforcement (write)"),
         ("MATCH (n:Memory {id: id})-[r", "walk hop"), ("MATCH (e:Embedding {id: id}) RETURN e.id, vec.", "cosines"),
         ("UNWIND $ids AS id MATCH (n:Memory {id: id}) RETURN", "nodes"), ("count(n) AS superseded", "counters"))


def _kind(query: str) -> str:
    for piece, kind in KINDS:
        if piece in query:
            if kind == "walk hop" and "m.content" in query:
                return "neighbour window (hop with nodes)"
            return kind
    return query[:48]


def _timing_statements() -> dict[str, list[float]]:
    """Add up each reply's internal execution time by kind of statement (`KINDS`) from now on."""
    import re

    from shared_core.store.falkordb import client

    found: dict[str, list[float]] = {}
    plain = client.reply_rows
    pattern = re.compile(r"internal execution time: ([0-9.]+)")

    def timed_rows(query: str, response: Any) -> Any:
        for line in response[-1] if isinstance(response, list) and response else ():
            m = pattern.search(line.decode() if isinstance(line, bytes) else str(line))
            if m:
                found.setdefault(_kind(query), []).append(float(m.group(1)))
        return plain(query, response)

    client.reply_rows = timed_rows  # type: ignore[assignment]
    return found


def child(url: str, pid: int, n: int, queries: int, statements: bool = False, in_place: bool = False,
          digest_only: bool = False) -> dict[str, Any]:
    """One run of the tree first on ``sys.path`` (see the module docstring)."""
    import numpy as np
    from latency import BUDGET, OVERRIDES, TOP_K, make_corpus  # type: ignore[import-not-found]

    from shared_core import AtlasConfig, ElasticMemoryAtlas, ManualClock

    r = _redis(url)
    prefix = BASE.split(":")[0] + ":" if in_place else f"cpurun{os.getpid()}:"
    if not in_place:
        try:
            r.execute_command("GRAPH.COPY", BASE, prefix + "bench")
        except Exception:  # the server has been seen to copy and still answer an error
            if not r.exists(prefix + "bench"):
                raise
    try:
        corpus = make_corpus(n, queries)[0]
        atlas = ElasticMemoryAtlas(config=AtlasConfig(**OVERRIDES), embedder=corpus.embedder(),
                                   clock=ManualClock(1_700_000_000.0), backend=f"{url.split('?')[0]}?prefix={prefix}")
        q = corpus.queries
        digest = hashlib.sha256()
        out: dict[str, Any] = {"tree": os.environ.get("PYTHONPATH", "").split(os.pathsep)[0]}
        calls = {"retrieve": lambda i: atlas.retrieve(q[i % len(q)], namespace="bench", top_k=TOP_K),
                 "build_context": lambda i: atlas.build_context(q[i % len(q)], namespace="bench",
                                                                token_budget=BUDGET, style="bullet")}
        if digest_only:  # a pass that leaves the graph as it is (no reinforcement)
            for i in range(len(q)):
                _digest(digest, atlas.retrieve(q[i], namespace="bench", top_k=TOP_K, reinforce=False))
                _digest(digest, atlas.build_context(q[i], namespace="bench", token_budget=BUDGET, style="bullet",
                                                    reinforce=False))
            return {"digest": digest.hexdigest()[:16]}
        found = _timing_statements() if statements else {}
        for name, call in calls.items():
            for i in range(3):
                call(i)
            found.clear()
            walls = []
            cpu, server = time.process_time(), _server_cpu(pid)
            for i in range(len(q)):
                t0 = time.perf_counter()
                res = call(i)
                walls.append(time.perf_counter() - t0)
                if not in_place:
                    _digest(digest, res)
            cpu, server = time.process_time() - cpu, _server_cpu(pid) - server
            out[name] = {"p50": float(np.median(walls)) * 1e3, "cpu": 1e3 * cpu / len(q),
                         "server": 1e3 * server / len(q),
                         "statements": {k: [sum(v) / len(q), len(v) / len(q)] for k, v in found.items()}}
        if not in_place:
            out["digest"] = digest.hexdigest()[:16]
        out["load"] = os.getloadavg()[0]
        return out
    finally:
        if not in_place:
            r.delete(prefix + "bench")


def _digest(digest: Any, res: Any) -> None:
    """Add a `retrieve`'s hits (ids, scores, factors, paths, weights) or a context (its text, its
    memories' ids and scores) to ``digest``."""
    if isinstance(res, list):
        digest.update(repr([(m.node.id, m.score, sorted(m.components.items()), m.paths, m.node.weight)
                            for m in res]).encode())
    else:
        digest.update(repr((res.text, [(m.node.id, m.score) for m in res.memories])).encode())


def build(url: str, n: int, queries: int) -> None:
    from latency import build_atlas, make_corpus

    r = _redis(url)
    r.delete(BASE)
    build_atlas(make_corpus(n, queries)[0], backend=f"{url.split('?')[0]}?prefix=cpubase:")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trees", default=".", help="comma-separated source trees (each holding shared_core)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--url", help="a FalkorDB server of its own (default: one started for the run)")
    parser.add_argument("--pid", type=int, help="the pid of --url's server")
    parser.add_argument("--statements", action="store_true",
                        help="also the server's internal execution time per kind of statement, per call")
    parser.add_argument("--in-place", action="store_true",
                        help="every run on the base graph itself, no GRAPH.COPY (which has hung this server under "
                        "load); the digest then covers a first pass without reinforcement")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--digest-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.url, args.pid, args.size, args.queries, args.statements, args.in_place,
                               args.digest_only)))
        return
    trees = [str(Path(t).resolve()) for t in args.trees.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        server = None
        url, pid = args.url, args.pid
        if url is None:
            from shared_core.store.falkordb.server import start_server

            server = start_server(tmp)
            url, pid = server.url, server.pid
        if pid is None:
            parser.error("--url needs the server's --pid")
        try:
            build(url, args.size, args.queries)
            results: dict[str, list[dict[str, Any]]] = {t: [] for t in trees}

            def run(tree: str, *flags: str) -> dict[str, Any]:
                env = {**os.environ, "PYTHONPATH": os.pathsep.join([tree, str(HERE)])}
                done = subprocess.run([sys.executable, __file__, "--child", "--url", url, "--pid", str(pid),
                                       "--size", str(args.size), "--queries", str(args.queries), *flags],
                                      env=env, check=True, capture_output=True, text=True)
                print(done.stdout.strip().splitlines()[-1], flush=True)
                found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
                return found

            digests = {t: [run(t, "--in-place", "--digest-only")["digest"]] for t in trees} if args.in_place else {}
            flags = [*(["--statements"] if args.statements else []), *(["--in-place"] if args.in_place else [])]
            for _ in range(args.runs):
                for tree in trees:
                    results[tree].append(run(tree, *flags))
                    if not args.in_place:
                        digests.setdefault(tree, []).append(results[tree][-1]["digest"])
        finally:
            _redis(url).delete(BASE)
            if server is not None:
                server.stop()
    print(f"\n| {args.size:,} memories, median of {args.runs} | " + " | ".join(trees) + " |")
    print("|---|" + "---:|" * len(trees))
    for op in ("retrieve", "build_context"):
        for what, label in (("p50", "wall p50 ms"), ("cpu", "this process's CPU ms a call"),
                            ("server", "server CPU ms a call")):
            cells = [statistics.median(r[op][what] for r in results[t]) for t in trees]
            print(f"| `{op}` {label} | " + " | ".join(f"{c:.2f}" for c in cells) + " |")
    print("| digests | " + " | ".join(", ".join(sorted(set(digests[t]))) for t in trees) + " |")
    if args.statements:
        for op in ("retrieve", "build_context"):
            first = results[trees[0]]
            kinds = sorted({k for t in trees for r in results[t] for k in r[op]["statements"]},
                           key=lambda k: -statistics.median(r[op]["statements"].get(k, [0.0])[0] for r in first))
            print(f"\n| `{op}`: server's internal ms a call (statements a call), median of {args.runs} | "
                  + " | ".join(trees) + " |")
            print("|---|" + "---:|" * len(trees))
            for kind in [*kinds, "all"]:
                cells = []
                for t in trees:
                    if kind == "all":
                        ms = statistics.median(sum(v[0] for v in r[op]["statements"].values()) for r in results[t])
                        count = statistics.median(sum(v[1] for v in r[op]["statements"].values()) for r in results[t])
                    else:
                        ms = statistics.median(r[op]["statements"].get(kind, [0.0, 0.0])[0] for r in results[t])
                        count = statistics.median(r[op]["statements"].get(kind, [0.0, 0.0])[1] for r in results[t])
                    cells.append(f"{ms:.2f} ({count:.2f})")
                print(f"| {kind} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
