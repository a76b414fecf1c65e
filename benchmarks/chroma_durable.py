"""The chroma backend against the in-process atlas and against chromadb itself, in one run.

    python benchmarks/latency.py --chroma 10000          # or: python benchmarks/chroma_durable.py 10000
    python benchmarks/chroma_durable.py --reopen 10000 100000   # reopen + first retrieve, fresh interpreter

Rows, per size ``n`` (precomputed vectors: no embedding model in any figure):

- ``add_memories``: ``n`` memories in batches of 1,000 into a fresh directory (default mode),
  then `flush` (every write durable in the log): memories a second; and the same until `close`
  has checkpointed everything into the chromadb collections;
- chromadb's own batched ``add`` of the same ids, documents and embeddings (batches of 1,000)
  into a bare collection of a fresh ``PersistentClient`` directory: memories a second;
- ``add_memory`` p50/p95 of 200 single writes: default mode (on the reopened atlas) and ``sync``
  (into a fresh directory);
- reopen: opening the closed directory and the first ``retrieve`` (which loads the namespace),
  in this process (chromadb already imported) and in a fresh interpreter (imports included);
- with ``--reopen``: only that fresh-interpreter reopen, median of 3, at each size;
- ``retrieve`` / ``build_context`` p50 on the reopened atlas and on an in-process atlas of the
  same memories, the two interleaved query by query.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from latency import BUDGET, TOP_K, Corpus, build_atlas, make_corpus, pcts

from shared_core import AtlasConfig, ElasticMemoryAtlas, ManualClock
from shared_core.store.chroma import ChromaBackend

STEP = 1000


def _durable(corpus: Corpus, path: Path, **kwargs: Any) -> ElasticMemoryAtlas:
    return ElasticMemoryAtlas(config=AtlasConfig(), embedder=corpus.embedder(), clock=ManualClock(1_700_000_000.0),
                              backend=ChromaBackend(path, **kwargs))


def _fill(atlas: ElasticMemoryAtlas, corpus: Corpus) -> None:
    for s in range(0, len(corpus.texts), STEP):
        atlas.add_memories([{"content": t, "session_id": f"s{(s + j) // 50}"}
                            for j, t in enumerate(corpus.texts[s:s + STEP])], namespace="bench", progress=False)


def bare_chromadb(corpus: Corpus, path: Path) -> float:
    """chromadb's batched add of the same records into a bare persistent collection: per second."""
    import chromadb

    client = chromadb.PersistentClient(path=str(path))
    col = client.create_collection("bare", embedding_function=None, metadata={"hnsw:space": "cosine"})
    t0 = time.perf_counter()
    for s in range(0, len(corpus.texts), STEP):
        col.add(ids=[str(i) for i in range(s, min(s + STEP, len(corpus.texts)))],
                embeddings=corpus.vectors[s:s + STEP], documents=corpus.texts[s:s + STEP])
    rate = len(corpus.texts) / (time.perf_counter() - t0)
    client.close()
    return rate


def singles(atlas: ElasticMemoryAtlas, extra: Corpus, count: int) -> tuple[float, float, float]:
    samples = []
    for i in range(count):
        t0 = time.perf_counter()
        atlas.add_memory(extra.texts[i], namespace="bench", session_id="single", embedding=extra.vectors[i])
        samples.append(time.perf_counter() - t0)
    return pcts(samples)


def interleaved(a: ElasticMemoryAtlas, b: ElasticMemoryAtlas, queries: list[str]) -> dict[str, Any]:
    """retrieve and build_context p50 on two atlases, alternating query by query."""
    times: dict[str, list[float]] = {f"{op}/{w}": [] for op in ("retrieve", "retrieve_plain", "build_context")
                                     for w in "ab"}
    for q in queries:
        for which, atlas in (("a", a), ("b", b)):
            t0 = time.perf_counter()
            atlas.retrieve(q, namespace="bench", top_k=TOP_K)
            times[f"retrieve/{which}"].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            atlas.retrieve(q, namespace="bench", top_k=TOP_K, reinforce=False)
            times[f"retrieve_plain/{which}"].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            atlas.build_context(q, namespace="bench", token_budget=BUDGET, style="bullet")
            times[f"build_context/{which}"].append(time.perf_counter() - t0)
    return {k: pcts(v) for k, v in times.items()}


def bench(n: int, queries: int = 200) -> str:
    corpus, extra = make_corpus(n, queries, extra=400)
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        out["bare"] = bare_chromadb(corpus, root / "bare")  # also imports chromadb once for everyone
        atlas = _durable(corpus, root / "mem")
        t0 = time.perf_counter()
        _fill(atlas, corpus)
        atlas.flush()
        out["durable"] = n / (time.perf_counter() - t0)
        t1 = time.perf_counter()
        atlas.close()
        out["close"] = time.perf_counter() - t1
        out["checkpointed"] = n / (time.perf_counter() - t0)
        t0, c0 = time.perf_counter(), time.process_time()
        reopened = _durable(corpus, root / "mem")
        reopened.retrieve(corpus.queries[0], namespace="bench", top_k=TOP_K, reinforce=False)  # loads it
        out["reopen"] = (time.perf_counter() - t0, time.process_time() - c0)
        reopened.backend.close(checkpoint=False)  # type: ignore[attr-defined]
        out["reopen_fresh"] = _fresh_reopen(root / "mem", corpus.vectors.shape[1], n)
        reopened = _durable(corpus, root / "mem")
        out["add_memory"] = singles(reopened, extra, 200)
        in_process, _, _ = build_atlas(corpus)
        for i in range(200):
            in_process.add_memory(extra.texts[i], namespace="bench", session_id="single", embedding=extra.vectors[i])
        out["reads"] = interleaved(reopened, in_process, corpus.queries)
        sync = _durable(corpus, root / "sync", durability="sync")
        out["add_memory_sync"] = singles(sync, Corpus(extra.texts[200:], extra.vectors[200:], [], extra.vectors[:0]),
                                         200)
        sync.close()
        reopened.close()
    return report(n, out)


REOPEN = """
import os, sys, time
t0, c0 = time.perf_counter(), time.process_time()
from shared_core import ElasticMemoryAtlas, HashingEmbedder
t1 = time.perf_counter()
a = ElasticMemoryAtlas(embedder=HashingEmbedder(dim=int(sys.argv[2])), backend="chroma:" + sys.argv[1])
t2 = time.perf_counter()
hits = a.retrieve("the train leaves in the morning", namespace="bench", top_k=5, reinforce=False)
t3, c3 = time.perf_counter(), time.process_time()
assert len(hits) == 5 and a.count(namespace="bench") == int(sys.argv[3])
print(t1 - t0, t2 - t1, t3 - t2, t3 - t0, c3 - c0, os.getloadavg()[0])
a.backend.close(checkpoint=False)
"""


def _fresh_reopen(path: Path, dim: int, n: int) -> list[float]:
    """`REOPEN` in a fresh interpreter: import, open, first retrieve, total wall, CPU, load."""
    done = subprocess.run([sys.executable, "-c", REOPEN, str(path), str(dim), str(n)], capture_output=True,
                          text=True, check=True,
                          env={"PYTHONPATH": str(Path(__file__).parents[1]), "PATH": "/usr/bin:/bin"})
    return [float(x) for x in done.stdout.split()]


def reopen(n: int, runs: int = 3) -> str:
    """Reopen of a closed directory of ``n`` memories in one namespace, in a fresh interpreter
    (imports included): open, then the first `retrieve` (which loads the namespace). Median of
    ``runs``; wall and CPU seconds and the 1-minute load average when each run ended."""
    corpus, _ = make_corpus(n, 1)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "mem"
        atlas = _durable(corpus, path)
        _fill(atlas, corpus)
        atlas.close()
        rows = [_fresh_reopen(path, corpus.vectors.shape[1], n) for _ in range(runs)]
    rows.sort(key=lambda r: r[3])
    imp, opened, first, wall, cpu, load = rows[len(rows) // 2]
    return (f"| {n:,} memories, one namespace | {wall:.2f} s | {cpu:.2f} s | import {imp:.2f} + open {opened:.2f} "
            f"+ first retrieve {first:.2f} | {load:.1f} |")


def report(n: int, r: dict[str, Any]) -> str:
    reads = r["reads"]
    lines = [f"| {n:,} memories | chroma backend | in process / chromadb |", "|---|---|---|",
             f"| durable `add_memories` (batches of {STEP:,}, + flush) | {r['durable']:,.0f} /s | "
             f"chromadb bare add {r['bare']:,.0f} /s ({r['durable'] / r['bare']:.2f}x) |",
             f"| ... until `close` has checkpointed into chromadb | {r['checkpointed']:,.0f} /s "
             f"(close {r['close']:.1f} s) | |",
             f"| `add_memory` p50 / p95, default mode | {r['add_memory'][0]:.3f} / {r['add_memory'][1]:.3f} ms | |",
             f"| `add_memory` p50 / p95, sync | {r['add_memory_sync'][0]:.3f} / {r['add_memory_sync'][1]:.3f} ms | |",
             f"| reopen + first `retrieve` (chromadb imported): wall (CPU) | {r['reopen'][0]:.2f} s "
             f"({r['reopen'][1]:.2f} s) | |",
             f"| reopen + first `retrieve` in a fresh interpreter, imports included: wall (CPU) | "
             f"{r['reopen_fresh'][3]:.2f} s ({r['reopen_fresh'][4]:.2f} s) | load average {r['reopen_fresh'][5]:.1f} |"]
    for op, label in (("retrieve", "`retrieve`"), ("retrieve_plain", "`retrieve(reinforce=False)`"),
                      ("build_context", "`build_context`")):
        lines.append(f"| {label} p50 after reopen | {reads[op + '/a'][0]:.3f} ms | {reads[op + '/b'][0]:.3f} ms |")
    return "\n".join(lines)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--reopen"]:
        print("| directory | reopen + first retrieve, wall | CPU | of which | load average |\n|---|---|---|---|---|")
        for size in (int(s) for s in (sys.argv[2:] or ["10000", "100000"])):
            print(reopen(size), flush=True)
    else:
        for size in (int(s) for s in (sys.argv[1:] or ["10000"])):
            print(bench(size), flush=True)
