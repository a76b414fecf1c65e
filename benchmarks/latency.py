"""Latency and memory of Elastic Atlas at 1k, 10k and 100k memories, against the peers users
would pick instead, on the same vectors and queries.

    .venv/bin/python benchmarks/latency.py                       # 1k, 10k, 100k (~6 min on 2 cores)
    .venv/bin/python benchmarks/latency.py --sizes 1000,10000 --plot benchmarks/latency.png
    .venv/bin/python benchmarks/latency.py --sizes 100000 --profile   # pyinstrument of the read path
    .venv/bin/python benchmarks/latency.py --profile --falkordb --falkordb-sizes 10000   # ... on FalkorDB
    .venv/bin/python benchmarks/latency.py --entities ../shared/data/locomo/locomo_dev.json  # entity layer cost

For each size it prints p50 / p95 / p99 (ms) of ``add_memory``, ``add_memories`` (per memory, per
batch of 1,000), ``retrieve`` (top 10) and ``build_context`` (400 tokens), with precomputed
embeddings so the model is not what is timed (the embedder is a dict lookup), and, on the same
vectors and queries, LangChain ``InMemoryVectorStore.similarity_search_by_vector``, chromadb
``EphemeralClient`` (HNSW, ef_construction 200, ef_search 100), LlamaIndex ``VectorStoreIndex``
retrieval and plain numpy top-k (the floor). Ratios are the atlas's p50 over the peer's p50 (below 1:
the atlas is faster). One extra row runs the real MiniLM model (embedding included); with
``--locomo locomo_dev.json`` the real-model section adds the rows of ``embedder_ab.py`` (``add_memories``
on the LoCoMo dev turns and on short texts, ``add_memory``, query embedding, ``retrieve`` at 10k). Memory per
stored memory (RSS and tracemalloc) is measured in a fresh interpreter per size.

The corpus is synthetic but shaped like real embeddings: 200 topics, each with its own words;
a memory is 12 words (about 90 characters), 70% from its topic; a word's vector is its topic's
centre plus noise and a memory's vector is the normalised sum of its words' vectors (so memories
sharing words or topics are close, as with a sentence model). A query is 4 words of a random
memory plus one other word. recall@10 compares each index's top 10 with exact search.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import gc
import json
import math
import os
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from shared_core import AtlasConfig, ElasticMemoryAtlas, ManualClock

Matrix = npt.NDArray[np.float32]
DIM = 384
TOP_K = 10
BUDGET = 400
PEERS = ("numpy", "langchain", "chroma", "llamaindex")
PEER_NAMES = {"numpy": "numpy top-k", "langchain": "LangChain InMemoryVectorStore",
              "chroma": "chromadb (HNSW)", "llamaindex": "LlamaIndex VectorStoreIndex"}
OPS = ("add_memory", "add_memories", "retrieve", "build_context")
SYLLABLES = ("ka", "lo", "mi", "ren", "tas", "vu", "bel", "dor", "fi", "gan",
             "hu", "jo", "kel", "ma", "no", "pri", "qua", "ros", "si", "tem")


# -- data ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Corpus:
    texts: list[str]
    vectors: Matrix
    queries: list[str]
    query_vectors: Matrix

    def embedder(self) -> LookupEmbedder:
        return LookupEmbedder(dict(zip(self.texts + self.queries,
                                       np.concatenate([self.vectors, self.query_vectors]), strict=True)))


def make_corpus(n: int, n_queries: int, *, extra: int = 0, seed: int = 0, topics: int = 200) -> tuple[Corpus, Corpus]:
    """``n`` memories with ``n_queries`` queries about them, and ``extra`` more memories of the
    same distribution (not queried) to time single inserts with."""
    rng = np.random.default_rng(seed)
    words = [a + b for a in SYLLABLES for b in SYLLABLES] + [a + b + c for a in SYLLABLES[:10]
                                                             for b in SYLLABLES for c in SYLLABLES[:10]]
    word_topic = rng.integers(0, topics, len(words))
    centres = rng.standard_normal((topics, DIM)).astype(np.float32)
    word_vectors = centres[word_topic] + 1.5 * rng.standard_normal((len(words), DIM)).astype(np.float32)
    by_topic = [np.flatnonzero(word_topic == t) for t in range(topics)]

    def sentence(topic: int, count: int) -> npt.NDArray[np.int64]:
        own = rng.choice(by_topic[topic], size=round(0.7 * count))
        return np.concatenate([own, rng.integers(0, len(words), count - len(own))])

    def vectorise(rows: list[npt.NDArray[np.int64]]) -> Matrix:
        if not rows:
            return np.zeros((0, DIM), dtype=np.float32)
        out = np.stack([word_vectors[r].sum(axis=0) for r in rows]).astype(np.float32)
        out += 0.5 * rng.standard_normal(out.shape).astype(np.float32)
        return (out / np.linalg.norm(out, axis=1, keepdims=True)).astype(np.float32)

    rows = [sentence(int(t), 12) for t in rng.integers(0, topics, n + extra)]
    texts = [f"{i}: " + " ".join(words[w] for w in r) for i, r in enumerate(rows)]  # unique texts
    query_rows = []
    for target in rng.integers(0, n, n_queries):
        picked = rng.choice(rows[target], size=4, replace=False)
        query_rows.append(np.concatenate([picked, rng.integers(0, len(words), 1)]))
    queries = [f"q{i}: " + " ".join(words[w] for w in r) for i, r in enumerate(query_rows)]
    vectors, query_vectors = vectorise(rows), vectorise(query_rows)
    return (Corpus(texts[:n], vectors[:n], queries, query_vectors),
            Corpus(texts[n:], vectors[n:], [], np.zeros((0, DIM), dtype=np.float32)))


class LookupEmbedder:
    """Precomputed vectors by text: the `Embedder` the atlas calls costs a dict lookup."""

    dim = DIM

    def __init__(self, table: dict[str, Matrix]) -> None:
        self.table = table

    def embed(self, texts: Sequence[str]) -> Matrix:
        return np.stack([self.table[t] for t in texts])


# -- timing -------------------------------------------------------------------------------------
def timed(fn: Callable[[int], object], count: int, *, warmup: int = 3, budget_s: float = 60.0) -> list[float]:
    """Seconds per call of ``fn(i)`` for i < count (fewer if the budget runs out; at least 5)."""
    for i in range(min(warmup, count)):
        fn(i)
    samples: list[float] = []
    start = time.perf_counter()
    for i in range(count):
        t0 = time.perf_counter()
        fn(i)
        samples.append(time.perf_counter() - t0)
        if len(samples) >= 5 and time.perf_counter() - start > budget_s:
            break
    return samples


def pcts(samples: Sequence[float]) -> tuple[float, float, float]:
    """p50, p95, p99 in milliseconds."""
    if not samples:
        return (math.nan, math.nan, math.nan)
    p = np.percentile(np.asarray(samples) * 1e3, [50, 95, 99])
    return float(p[0]), float(p[1]), float(p[2])


def recall_at_k(found: Sequence[Sequence[int]], corpus: Corpus, k: int = TOP_K) -> float:
    exact = np.argsort(-(corpus.query_vectors[: len(found)] @ corpus.vectors.T), axis=1)[:, :k]
    return float(np.mean([len(set(f[:k]) & set(e.tolist())) / k for f, e in zip(found, exact, strict=True)]))


# -- the atlas ----------------------------------------------------------------------------------
def batch_size(n: int) -> int:
    return max(10, min(1000, n // 10))


#: AtlasConfig fields the benchmarked atlases are built with (``--set FIELD=VALUE``; empty: the defaults)
OVERRIDES: dict[str, Any] = {}


def build_atlas(corpus: Corpus, embedder: Any = None, backend: str | None = None, *, step: int | None = None
                ) -> tuple[ElasticMemoryAtlas, list[float], float]:
    """The atlas of ``corpus``, written in batches of ``step`` memories (default `batch_size`)."""
    with contextlib.suppress(ImportError):  # faiss loads once per process (~90 ms): not a memory's cost
        import faiss  # noqa: F401
    atlas = ElasticMemoryAtlas(config=AtlasConfig(**OVERRIDES), embedder=embedder or corpus.embedder(),
                               clock=ManualClock(1_700_000_000.0), backend=backend)
    step = step or batch_size(len(corpus.texts))
    per_memory: list[float] = []
    start = time.perf_counter()
    for s in range(0, len(corpus.texts), step):
        items = [{"content": t, "session_id": f"s{(s + j) // 50}"} for j, t in enumerate(corpus.texts[s:s + step])]
        t0 = time.perf_counter()
        atlas.add_memories(items, namespace="bench", progress=False)
        per_memory.append((time.perf_counter() - t0) / len(items))
    return atlas, per_memory, len(corpus.texts) / (time.perf_counter() - start)


def bench_atlas(corpus: Corpus, *, extra: Corpus, embedder: Any = None, backend: str | None = None) -> dict[str, Any]:
    """Time every operation; ``embedder=None`` uses the precomputed vectors (no model); ``backend``
    a FalkorDB URL (default: in process)."""
    atlas, per_memory, rate = build_atlas(corpus, embedder, backend)
    part = atlas.backend.partition("bench")
    assert part is not None
    q = corpus.queries
    index_ids = {n.id: n.content for n in part.graph.nodes()}
    found = [[int(index_ids[i].split(":")[0]) for i, _ in part.vectors.search(v, TOP_K)]
             for v in corpus.query_vectors]
    out: dict[str, Any] = {
        "add_memories": pcts(per_memory), "add_memories_per_s": rate,
        "retrieve": pcts(timed(lambda i: atlas.retrieve(q[i % len(q)], namespace="bench", top_k=TOP_K), len(q))),
        "build_context": pcts(timed(lambda i: atlas.build_context(q[i % len(q)], namespace="bench",
                                                                  token_budget=BUDGET, style="bullet"), len(q))),
        "recall": recall_at_k(found, corpus),
        "approximate": bool(getattr(part.vectors, "approximate", False)),
    }
    texts, vectors = extra.texts, (extra.vectors if embedder is None else [None] * len(extra.texts))
    out["add_memory"] = pcts(timed(lambda i: atlas.add_memory(texts[i], namespace="bench", session_id="single",
                                                              embedding=vectors[i]), len(texts), warmup=0))
    return out


# -- the peers ----------------------------------------------------------------------------------
def bench_peer(name: str, corpus: Corpus) -> dict[str, Any]:
    makers = {"numpy": _numpy, "langchain": _langchain, "chroma": _chroma, "llamaindex": _llamaindex}
    build, query = makers[name](corpus)
    t0 = time.perf_counter()
    build()
    insert = (time.perf_counter() - t0) / len(corpus.texts)
    results: list[list[int]] = []
    samples = timed(lambda i: results.append(query(i)), len(corpus.queries), budget_s=15.0)
    found = results[-len(samples):]
    return {"query": pcts(samples), "insert_ms": 1e3 * insert, "recall": recall_at_k(found, corpus),
            "queries": len(samples)}


Peer = tuple[Callable[[], None], Callable[[int], list[int]]]


def _numpy(corpus: Corpus) -> Peer:
    matrix = np.zeros((0, DIM), dtype=np.float32)

    def build() -> None:
        nonlocal matrix
        matrix = np.ascontiguousarray(corpus.vectors)

    def query(i: int) -> list[int]:
        sims = matrix @ corpus.query_vectors[i]
        top = np.argpartition(-sims, TOP_K)[:TOP_K]
        return [int(t) for t in top[np.argsort(-sims[top])]]

    return build, query


def _langchain(corpus: Corpus) -> Peer:
    from langchain_core.embeddings import Embeddings
    from langchain_core.vectorstores import InMemoryVectorStore

    table = corpus.embedder().table

    class Lookup(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [table[t].tolist() for t in texts]

        def embed_query(self, text: str) -> list[float]:
            return table[text].tolist()  # type: ignore[no-any-return]

    store = InMemoryVectorStore(Lookup())
    vectors = [v.tolist() for v in corpus.query_vectors]

    def build() -> None:
        store.add_texts(corpus.texts, ids=[str(i) for i in range(len(corpus.texts))])

    def query(i: int) -> list[int]:
        return [int(d.id) for d in store.similarity_search_by_vector(vectors[i], k=TOP_K)]  # type: ignore[arg-type]

    return build, query


def _chroma(corpus: Corpus) -> Peer:
    import chromadb

    client = chromadb.EphemeralClient()
    name = f"bench-{len(corpus.texts)}-{os.getpid()}"
    collection = client.create_collection(name, embedding_function=None, configuration={
        "hnsw": {"space": "ip", "ef_construction": 200, "ef_search": 100, "max_neighbors": 16}})

    def build() -> None:
        step = client.get_max_batch_size()
        for s in range(0, len(corpus.texts), step):
            collection.add(ids=[str(i) for i in range(s, min(s + step, len(corpus.texts)))],
                           embeddings=corpus.vectors[s:s + step], documents=corpus.texts[s:s + step])

    def query(i: int) -> list[int]:
        hits = collection.query(query_embeddings=corpus.query_vectors[i:i + 1], n_results=TOP_K)
        return [int(h) for h in hits["ids"][0]]

    return build, query


def _llamaindex(corpus: Corpus) -> Peer:
    from llama_index.core import Settings, VectorStoreIndex
    from llama_index.core.embeddings import BaseEmbedding
    from llama_index.core.schema import QueryBundle, TextNode

    from shared_core import TiktokenCounter

    Settings.tokenizer = TiktokenCounter().encode  # its default tokenizer downloads at first use
    table = corpus.embedder().table

    class Lookup(BaseEmbedding):
        def _get_text_embedding(self, text: str) -> list[float]:
            return table[text].tolist()  # type: ignore[no-any-return]

        def _get_query_embedding(self, query: str) -> list[float]:
            return table[query].tolist()  # type: ignore[no-any-return]

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_query_embedding(query)

    holder: dict[str, Any] = {}
    bundles = [QueryBundle(query_str=q, embedding=v.tolist()) for q, v in zip(corpus.queries, corpus.query_vectors,
                                                                             strict=True)]

    def build() -> None:
        nodes = [TextNode(id_=str(i), text=t, embedding=v.tolist())
                 for i, (t, v) in enumerate(zip(corpus.texts, corpus.vectors, strict=True))]
        index = VectorStoreIndex(nodes, embed_model=Lookup(model_name="lookup"), show_progress=False)
        holder["retriever"] = index.as_retriever(similarity_top_k=TOP_K)

    def query(i: int) -> list[int]:
        return [int(h.node.node_id) for h in holder["retriever"].retrieve(bundles[i])]

    return build, query


# -- memory per stored memory, in a fresh interpreter -----------------------------------------
def memory_probe(n: int, *, traced: bool, warm: bool = False) -> float:
    """Growth per memory while the atlas takes ``n`` memories: of RSS, or (``traced``) of the
    Python allocations tracemalloc sees (which misses faiss's and SQLite's own allocations).

    ``warm``: the process first builds (and keeps) another atlas of `WARM_ATLAS` memories the
    same way, in batches at least as large as the measured atlas's (`warm_batch`), so what the
    measured atlas adds excludes what a process pays once whatever it stores (library code pages
    touched on first use, BLAS work buffers and allocator pools sized by a batch's temporaries,
    the stemmer's word cache): the cost per memory of a long-running process. Cold (the
    default), those once-per-process megabytes are charged to the measured atlas's memories."""
    corpus, _ = make_corpus(n, 1)
    embedder = corpus.embedder()
    warm_atlas: list[ElasticMemoryAtlas] = []
    if warm:  # kept alive below: the measured atlas can reuse only what its batches left free
        warm_corpus, _ = make_corpus(WARM_ATLAS, 1, seed=1)
        warm_atlas.append(build_atlas(warm_corpus, step=warm_batch(n))[0])
    else:
        warm_up = ElasticMemoryAtlas(config=AtlasConfig(ann_threshold=64), embedder=embedder)  # imports (faiss
        warm_up.add_memories([{"content": f"warm {i}", "embedding": v}  # included) and first-use tables,
                              for i, v in enumerate(corpus.vectors[:64])], namespace="warm")  # outside the count
    gc.collect()
    _trim()
    if traced:
        tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0] if traced else _rss()
    # the atlas keeps the content string it is given: hand it texts of its own, made inside the
    # count, so their bytes are counted (the corpus's strings predate it, and would not be)
    own = Corpus([t.encode().decode() for t in corpus.texts], corpus.vectors, corpus.queries, corpus.query_vectors)
    atlas, _, _ = build_atlas(own, embedder)
    del own
    gc.collect()
    _trim()  # hand freed heap pages back, so RSS counts what the atlas holds, not the allocator's slack
    grown = (tracemalloc.get_traced_memory()[0] if traced else _rss()) - before
    assert len(atlas) == n and len(warm_atlas) == int(warm)
    return grown / n


WARM_ATLAS = 4096  # memories of the atlas a warm probe's process builds first (past ann_threshold: IVF)


def warm_batch(n: int) -> int:
    """The batch size the warm probe's first atlas is written in before an atlas of ``n``:
    its own (409), or the measured atlas's if larger (1,000 from 10k up).

    Why: until this, the first atlas was always written in batches of 409 while a 10k or 100k
    atlas takes 1,000, and the pages that the larger batches' BLAS calls and temporaries touch
    first (BLAS work buffers, pymalloc pools) were charged to the measured memories: at 10k,
    about 220 B a memory (overhead 1,068 against 846 with the first atlas in batches of 1,000,
    same code, two runs each). Batches smaller
    than the measured atlas's would charge it the other way: at 1k, a first atlas in batches of
    100 gave 811 against 453 in batches of 409, and in batches of 1,000 332 (three runs each).

    >>> warm_batch(1000), warm_batch(10_000), warm_batch(100_000)
    (409, 1000, 1000)
    """
    return max(batch_size(WARM_ATLAS), batch_size(n))


def _trim() -> None:
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: RSS then includes free heap pages
        pass


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def embedding_bytes(n: int, config: AtlasConfig | None = None) -> float:
    """The bytes the vector index stores one memory's embedding in, in an atlas of ``n``: 4 a
    dimension in the exact index (below ``ann_threshold``), 2 in a float16 approximate one
    (``AtlasConfig.ann_vector_dtype``, the default). The probes' "overhead beyond the embedding
    and the text" subtracts this: subtracting 4 a dimension from an approximate atlas would
    flatter its overhead by 768 bytes a memory at 384 dimensions.

    >>> embedding_bytes(1000), embedding_bytes(10_000), embedding_bytes(10_000, AtlasConfig(ann_vector_dtype="float32"))
    (1536.0, 768.0, 1536.0)
    """
    cfg = config or AtlasConfig()
    approximate = cfg.ann_threshold is not None and n >= cfg.ann_threshold
    return float((2 if approximate and cfg.ann_vector_dtype == "float16" else 4) * DIM)


def run_memory_probe(n: int, *, traced: bool = True) -> dict[str, float]:
    """The probes, each in a fresh interpreter (tracemalloc's own bookkeeping would inflate RSS):
    RSS cold and warm (see `memory_probe`), and tracemalloc cold; ``traced=False`` skips the slow
    tracemalloc one."""
    def probe(*flags: str) -> float:
        done = subprocess.run([sys.executable, __file__, *flags, str(n)], capture_output=True, text=True, check=True)
        return float(done.stdout.strip().splitlines()[-1])

    corpus, _ = make_corpus(n, 1)
    text = float(np.mean([len(t.encode()) for t in corpus.texts]))
    rss, warm = probe("--rss-probe"), probe("--warm", "--rss-probe")
    embedding = embedding_bytes(n)
    return {"rss": rss, "rss_warm": warm, "traced": probe("--traced-probe") if traced else math.nan, "text": text,
            "embedding": embedding, "overhead": rss - embedding - text, "overhead_warm": warm - embedding - text}


# -- report -------------------------------------------------------------------------------------
def ratio(ours: float, theirs: float) -> str:
    if not (ours > 0 and theirs > 0):
        return "—"
    r = ours / theirs
    return f"{r:,.0f}×" if r >= 10 else f"{r:.1f}×" if r >= 1 else f"{r:.2f}×" if r >= 0.01 else f"{r:.3f}×"


def report(results: dict[int, dict[str, Any]], model: dict[str, Any] | None) -> str:
    head = ("| memories | operation | p50 ms | p95 ms | p99 ms | " + " | ".join(f"vs {PEER_NAMES[p]}" for p in PEERS)
            + " |")
    lines = [head, "|" + "---|" * (5 + len(PEERS))]
    for n, res in results.items():
        for op in OPS:
            p50, p95, p99 = res["atlas"][op]
            if op in ("retrieve", "build_context"):
                cmp = [ratio(p50, res[p]["query"][0]) for p in PEERS]
            elif op == "add_memories":
                cmp = [ratio(p50, res[p]["insert_ms"]) if p != "numpy" else "—" for p in PEERS]
            else:
                cmp = ["—"] * len(PEERS)
            lines.append(f"| {n:,} | `{op}` | {p50:.3f} | {p95:.3f} | {p99:.3f} | " + " | ".join(cmp) + " |")
    if model:
        for op in OPS:
            p50, p95, p99 = model[op]
            lines.append(f"| {model['n']:,.0f} (MiniLM, embedding included) | `{op}` | {p50:.3f} | {p95:.3f} | "
                         f"{p99:.3f} | " + " | ".join(["—"] * len(PEERS)) + " |")
    lines += ["", "| memories | peer | query p50 ms | p95 ms | p99 ms | insert ms/memory | recall@10 | queries |",
              "|---|---|---|---|---|---|---|---|"]
    for n, res in results.items():
        a = res["atlas"]
        lines.append(f"| {n:,} | Elastic Atlas vector index ({'IVF' if a['approximate'] else 'exact'}) | — | — | — | "
                     f"{a['add_memories'][0]:.4f} | {a['recall']:.3f} | {res['numpy']['queries']:.0f} |")
        for p in PEERS:
            r = res[p]
            q50, q95, q99 = r["query"]
            lines.append(f"| {n:,} | {PEER_NAMES[p]} | {q50:.3f} | {q95:.3f} | {q99:.3f} | {r['insert_ms']:.4f} | "
                         f"{r['recall']:.3f} | {r['queries']:.0f} |")
    lines += ["", "| memories | add_memories per s | RSS B/memory, fresh process | tracemalloc B/memory | "
              "embedding B | text B | overhead B/memory, fresh process | overhead B/memory, process holding an atlas |",
              "|---|---|---|---|---|---|---|---|"]
    for n, res in results.items():
        m = res.get("memory")
        if m:
            traced = "—" if math.isnan(m["traced"]) else f"{m['traced']:,.0f}"
            warm = f"{m['overhead_warm']:,.0f}" if "overhead_warm" in m else "—"
            lines.append(f"| {n:,} | {res['atlas']['add_memories_per_s']:,.0f} | {m['rss']:,.0f} | {traced} | "
                         f"{m['embedding']:,.0f} | {m['text']:,.0f} | {m['overhead']:,.0f} | {warm} |")
    return "\n".join(lines)


def median_of(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The element-wise median of several runs' results (as written by ``--json``)."""
    first = runs[0]
    if isinstance(first, dict):
        return {k: median_of([r[k] for r in runs]) for k in first}
    if isinstance(first, (list, tuple)):
        return [median_of([r[i] for r in runs]) for i in range(len(first))]  # type: ignore[return-value]
    if isinstance(first, bool) or not isinstance(first, (int, float)):
        return first  # type: ignore[no-any-return]
    return float(np.median([float(r) for r in runs]))  # type: ignore[return-value]


def plot(results: dict[int, dict[str, Any]], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = list(results)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    series = [("Elastic Atlas retrieve", [results[n]["atlas"]["retrieve"][0] for n in sizes], "o-", 2.5),
              ("Elastic Atlas build_context", [results[n]["atlas"]["build_context"][0] for n in sizes], "s-", 2.5)]
    series += [(PEER_NAMES[p], [results[n][p]["query"][0] for n in sizes], "^--", 1.2) for p in PEERS]
    for label, values, style, width in series:
        ax.plot(sizes, values, style, label=label, linewidth=width)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("memories in the namespace")
    ax.set_ylabel("p50 latency (ms, log)")
    ax.set_title("Query latency against size (precomputed embeddings, 2-core CPU)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def profile(corpus: Corpus, backend: str | None = None) -> str:
    """pyinstrument of ``retrieve`` and ``build_context`` on ``corpus`` (in process, or on the
    FalkorDB ``backend`` URL: then each header also gives the call's CPU time in this process
    and its round trips to the server)."""
    from pyinstrument import Profiler

    atlas, _, _ = build_atlas(corpus, backend=backend)
    q = corpus.queries
    out = []
    for name, call in (("retrieve", lambda i: atlas.retrieve(q[i % len(q)], namespace="bench", top_k=TOP_K)),
                       ("build_context", lambda i: atlas.build_context(q[i % len(q)], namespace="bench",
                                                                       token_budget=BUDGET, style="bullet"))):
        for i in range(3):  # warm up
            call(i)
        with _round_trips(backend is not None) as trips:
            cpu, wall = time.process_time(), time.perf_counter()
            for i in range(len(q)):
                call(i)
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        head = f"== {name} x {len(q)}: {1e3 * wall / len(q):.2f} ms wall, {1e3 * cpu / len(q):.2f} ms CPU a call"
        if backend is not None:
            head += f", {trips[0] / len(q):.2f} round trips and {trips[1] / len(q):.2f} statements a call"
        profiler = Profiler(interval=0.0005)
        profiler.start()
        for i in range(len(q)):
            call(i)
        profiler.stop()
        out.append(head + "\n" + profiler.output_text(unicode=False, show_all=False))
    return "\n".join(out)


@contextlib.contextmanager
def _round_trips(on: bool) -> Iterator[list[int]]:
    """[round trips, statements] to a FalkorDB server while the block runs (counted when ``on``)."""
    counts = [0, 0]
    if not on:
        yield counts
        return
    from shared_core.store.falkordb.client import Connection

    run, run_many, command, exists_and_read = (Connection.run, Connection.run_many, Connection.command,
                                               Connection.exists_and_read)

    def counted_run(self: Connection, *args: Any, **kwargs: Any) -> Any:
        counts[0] += 1
        counts[1] += 1
        return run(self, *args, **kwargs)

    def counted_many(self: Connection, key: str, statements: Sequence[Any], **kwargs: Any) -> Any:
        counts[0] += 1
        counts[1] += len(statements)
        return run_many(self, key, statements, **kwargs)

    def counted_command(self: Connection, *args: Any, **kwargs: Any) -> Any:
        counts[0] += 1
        return command(self, *args, **kwargs)

    def counted_exists(self: Connection, key: str, statements: Sequence[Any]) -> Any:
        counts[0] += 1  # EXISTS with the counters (a partition's view), or with a request's reads
        counts[1] += len(statements)
        return exists_and_read(self, key, statements)

    Connection.run, Connection.run_many, Connection.command, Connection.exists_and_read = (  # type: ignore[method-assign]
        counted_run, counted_many, counted_command, counted_exists)
    try:
        yield counts
    finally:
        Connection.run, Connection.run_many, Connection.command, Connection.exists_and_read = (  # type: ignore[method-assign]
            run, run_many, command, exists_and_read)


SWEEP: tuple[tuple[str, dict[str, Any]], ...] = (
    ("defaults", {}),
    ("graph_seeds=8", {"graph_seeds": 8}),
    ("candidate_k=60", {"candidate_k": 60}),
    ("candidate_k=60, graph_seeds=8", {"candidate_k": 60, "graph_seeds": 8}),
    ("candidate_k=60, graph_seeds=8, graph_fanout=4", {"candidate_k": 60, "graph_seeds": 8, "graph_fanout": 4}),
    ("graph off (graph_weight=0)", {"graph_weight": 0.0}),
    ("graph off, candidate_k=60", {"graph_weight": 0.0, "candidate_k": 60}),
    ("graph off, candidate_k=20, keyword_weight=0", {"graph_weight": 0.0, "candidate_k": 20, "keyword_weight": 0.0}),
    ("feedback round (feedback_weight=0.5)", {"feedback_weight": 0.5}),
)


def sweep(corpus: Corpus) -> str:
    """p50 of ``retrieve`` and ``build_context`` (``reinforce=False``) under other recall settings,
    on one atlas built with the defaults: where the read path's time goes."""
    atlas, _, _ = build_atlas(corpus)
    part = atlas.backend.partition("bench")
    assert part is not None
    q, n = corpus.queries, len(corpus.texts)
    vec = pcts(timed(lambda i: part.vectors.search(corpus.query_vectors[i], 200), len(q)))[0]
    kw = pcts(timed(lambda i: part.keywords.search(q[i], 200), len(q)))[0]
    lines = [f"{n:,} memories: vector index k=200 p50 {vec:.2f} ms, keyword index k=200 p50 {kw:.2f} ms", "",
             "| config | retrieve p50 ms | build_context p50 ms |", "|---|---|---|"]
    for name, changes in SWEEP:
        atlas.config = AtlasConfig(**changes)  # recall reads the config on every call
        r = timed(lambda i: atlas.retrieve(q[i], namespace="bench", top_k=TOP_K, reinforce=False), len(q))
        b = timed(lambda i: atlas.build_context(q[i], namespace="bench", token_budget=BUDGET, style="bullet",
                                                reinforce=False), len(q))
        lines.append(f"| {name} | {pcts(r)[0]:.2f} | {pcts(b)[0]:.2f} |")
    return "\n".join(lines)


def locomo_vectors(path: str) -> tuple[Matrix, Matrix]:
    """The LoCoMo turns (each text once) and the first 200 questions, embedded with MiniLM."""
    from shared_core import MiniLMEmbedder

    texts: list[str] = []
    questions: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, bucket in (("text", texts), ("question", questions)):
                if isinstance(node.get(key), str):
                    bucket.append(node[key])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(json.loads(Path(path).read_text()))
    model = MiniLMEmbedder()
    return model.embed(list(dict.fromkeys(texts))), model.embed(list(dict.fromkeys(questions))[:200])


def mixes(turns: Matrix, n: int, rng: np.random.Generator) -> Matrix:
    """``n`` unit vectors mixed from pairs of turns: ``w a + (1 - w) b`` plus noise 0.03, w in [0.5, 1]."""
    a, b = rng.integers(0, len(turns), (2, n))
    w = rng.uniform(0.5, 1.0, (n, 1)).astype(np.float32)
    data = w * turns[a] + (1 - w) * turns[b] + 0.03 * rng.standard_normal((n, turns.shape[1])).astype(np.float32)
    return (data / np.linalg.norm(data, axis=1, keepdims=True)).astype(np.float32)


def real_recall(path: str, sizes: Sequence[int]) -> str:
    """recall@10 of the IVF index on real MiniLM vectors: the LoCoMo turns (questions as queries),
    then ``sizes`` vectors mixed from pairs of turns (`mixes`); for each ``vector_dtype``
    (float32, and float16 as the atlas's default stores them), against exact float32 search."""
    from shared_core.store.memory.ann_index import IVFVectorIndex

    turns, queries = locomo_vectors(path)
    rng = np.random.default_rng(0)
    lines = ["| vectors | lists | probes | dtype | recall@10 | search p50 ms |", "|---|---|---|---|---|---|"]
    for n in [len(turns), *sizes]:
        data = turns if n == len(turns) else mixes(turns, n, rng)
        exact = np.argsort(-(queries @ data.T), axis=1)[:, :TOP_K]
        for dtype in ("float32", "float16"):
            index = IVFVectorIndex.build([str(i) for i in range(n)], data, vector_dtype=dtype)
            hits: list[list[int]] = []
            samples = timed(lambda i, index=index, hits=hits: hits.append(
                [int(h) for h, _ in index.search(queries[i], TOP_K)]), len(queries), warmup=0)
            recall = np.mean([len(set(h) & set(e.tolist())) / TOP_K for h, e in zip(hits, exact, strict=True)])
            lines.append(f"| {n:,} | {index.lists} | {index.probes} | {dtype} | {recall:.3f} | "
                         f"{pcts(samples)[0]:.3f} |")
    return "\n".join(lines)


def blas() -> str:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "unknown BLAS"
    info = [f"{i.get('internal_api')} {i.get('version')} ({i.get('architecture')}, {i.get('num_threads')} threads)"
            for i in threadpool_info() if i.get("user_api") == "blas"]
    return ", ".join(info) or "no BLAS"


def entity_rows(path: str, *, turns: int = 400, rounds: int = 3) -> str:
    """The entity layer's write cost on the first ``turns`` distinct LoCoMo dev turns: YAKE
    extraction alone (`shared_core.text.entities.extract_entities`, ms per memory), and
    ``add_memories`` end to end with the default MiniLM model (embedding included; a fresh,
    warmed embedder per run, so no vector is cached), ``entity_extraction="keyphrases"`` against
    ``"off"`` (the default), interleaved per round; medians over ``rounds``."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _locomo import load_locomo

    from shared_core import MiniLMEmbedder
    from shared_core.text.entities import extract_entities

    texts = list(dict.fromkeys(t.content for c in load_locomo(path) for t in c.turns))[:turns]
    extract_entities(texts[0])  # imports yake and loads its stopwords
    per: list[float] = []
    for text in texts:
        start = time.perf_counter()
        extract_entities(text)
        per.append(1000 * (time.perf_counter() - start))
    rates: dict[str, list[float]] = {"on": [], "off": []}
    for _ in range(rounds):
        for mode in ("on", "off"):
            embedder = MiniLMEmbedder()
            embedder.embed(["warm up the model"])
            atlas = ElasticMemoryAtlas(config=AtlasConfig(entity_extraction="keyphrases" if mode == "on" else "off"),
                                       embedder=embedder, clock=ManualClock(1_700_000_000.0))
            start = time.perf_counter()
            atlas.add_memories(texts, namespace="bench", progress=False)
            rates[mode].append(len(texts) / (time.perf_counter() - start))
    p50, p95, p99 = np.percentile(per, [50, 95, 99])
    on, off = statistics.median(rates["on"]), statistics.median(rates["off"])
    return "\n".join([
        f"\n## Entity extraction ({len(texts)} LoCoMo dev turns, {rounds} interleaved rounds)\n",
        "| row | value |", "|---|---:|",
        f"| YAKE extraction per memory, p50 / p95 / p99 ms | {p50:.2f} / {p95:.2f} / {p99:.2f} |",
        f"| YAKE extraction alone, memories/s | {1000 * len(per) / sum(per):,.0f} |",
        f"| `add_memories` MiniLM end to end, extraction off (default), memories/s | {off:,.1f} |",
        f"| `add_memories` MiniLM end to end, extraction on, memories/s | {on:,.1f} |",
        f"| throughput kept with extraction on | {on / off:.2f} |",
        f"(per round, on: {', '.join(f'{r:.1f}' for r in rates['on'])}; "
        f"off: {', '.join(f'{r:.1f}' for r in rates['off'])})"])


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000", help="comma-separated atlas sizes")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--plot", metavar="FILE.png")
    parser.add_argument("--json", metavar="FILE.json", help="also write the raw results")
    parser.add_argument("--no-model", action="store_true", help="skip the row with the real MiniLM model")
    parser.add_argument("--no-memory", action="store_true", help="skip the memory probes")
    parser.add_argument("--locomo", metavar="LOCOMO.json",
                        help="also time the default embedder end to end on the LoCoMo dev turns (embedder_ab.py)")
    parser.add_argument("--entities", metavar="LOCOMO.json",
                        help="only the entity layer's write cost: YAKE extraction and add_memories on/off")
    parser.add_argument("--entity-turns", type=int, default=400, help="LoCoMo turns for --entities")
    parser.add_argument("--peers", default=",".join(PEERS))
    parser.add_argument("--profile", action="store_true",
                        help="pyinstrument the read path at the largest size (with --falkordb: on FalkorDB, at the "
                        "largest --falkordb-sizes, with round trips per call)")
    parser.add_argument("--sweep", action="store_true",
                        help="only time retrieve and build_context under other recall settings, per size")
    parser.add_argument("--real-recall", metavar="LOCOMO.json",
                        help="only measure the IVF index's recall@10 on MiniLM vectors of LoCoMo turns")
    parser.add_argument("--blas-threads", type=int, default=1,
                        help="BLAS threads for everyone (default 1: on a shared 2-core machine threaded "
                             "matrix-vector products were measured up to 200x slower)")
    parser.add_argument("--falkordb", nargs="?", const="start", metavar="URL",
                        help="also time the atlas on FalkorDB, with FalkorDB's own floors and the in-process atlas "
                             "on the same vectors (on URL, or on a local server started for the run)")
    parser.add_argument("--falkordb-sizes", default="10000", help="comma-separated sizes for --falkordb")
    parser.add_argument("--chroma", metavar="SIZES",
                        help="only the chroma backend's rows (benchmarks/chroma_durable.py) at these comma-separated "
                             "sizes: durable writes against chromadb's own, reopen, reads against in process")
    parser.add_argument("--report", nargs="+", metavar="RUN.json",
                        help="print the tables (and --plot) from the median of runs saved with --json")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                        help="an AtlasConfig field of the benchmarked atlases (repeatable), e.g. feedback_weight=0.5")
    parser.add_argument("--rss-probe", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--traced-probe", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--warm", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    for item in args.set:
        name, _, value = item.partition("=")
        OVERRIDES[name.strip()] = ast.literal_eval(value.strip())
    if args.rss_probe or args.traced_probe:
        from threadpoolctl import threadpool_limits

        threadpool_limits(args.blas_threads)
        print(memory_probe(args.rss_probe or args.traced_probe, traced=bool(args.traced_probe), warm=args.warm))
        return
    from threadpoolctl import threadpool_limits

    threadpool_limits(args.blas_threads)  # for the peers' numpy as for the atlas
    sizes = [int(s) for s in args.sizes.split(",")]
    peers = [p for p in args.peers.split(",") if p]
    load = os.getloadavg()[0]
    print(f"# {os.cpu_count()} cores, load {load:.2f}, {blas()}, python {sys.version.split()[0]} ({sys.executable})",
          flush=True)
    if args.report:
        runs = [json.loads(Path(f).read_text()) for f in args.report]
        merged = median_of(runs)
        model = merged.pop("model", None)
        results = {int(n): r for n, r in merged.items()}
        print(f"# median of {len(runs)} runs")
        print(report(results, model))
        if args.plot:
            plot(results, args.plot)
        return
    if args.real_recall:
        print(real_recall(args.real_recall, [10_000, 100_000]))
        return
    if args.entities:
        print(entity_rows(args.entities, turns=args.entity_turns))
        return
    if args.chroma:
        from chroma_durable import bench as bench_chroma

        for n in (int(s) for s in args.chroma.split(",")):
            print(bench_chroma(n, args.queries), flush=True)
        return
    if args.sweep:
        for n in sizes:
            print(sweep(make_corpus(n, args.queries)[0]), flush=True)
        return
    if args.profile and args.falkordb:
        import falkordb_floors

        print(falkordb_floors.profile(args.falkordb, max(int(s) for s in args.falkordb_sizes.split(",")),
                                      args.queries))
        return
    if args.profile:
        print(profile(make_corpus(max(sizes), args.queries)[0]))
        return
    results: dict[int, dict[str, Any]] = {}
    for n in sizes:
        corpus, extra = make_corpus(n, args.queries, extra=200)
        res: dict[str, Any] = {"corpus_queries": corpus.queries}
        t0 = time.perf_counter()
        res["atlas"] = bench_atlas(corpus, extra=extra)
        print(f"# {n:,}: atlas done in {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
        for p in PEERS:
            t0 = time.perf_counter()
            res[p] = bench_peer(p, corpus) if p in peers else {"query": pcts([]), "insert_ms": math.nan,
                                                               "recall": math.nan, "queries": 0}
            gc.collect()
            print(f"# {n:,}: {p} done in {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
        if not args.no_memory:
            res["memory"] = run_memory_probe(n, traced=n <= 10_000)  # tracemalloc triples a 100k build
        results[n] = res
    model = None
    if not args.no_model:
        from shared_core import MiniLMEmbedder

        corpus, extra = make_corpus(1000, min(args.queries, 100), extra=100)
        model = bench_atlas(corpus, extra=extra, embedder=MiniLMEmbedder()) | {"n": 1000}
    print(report(results, model))
    if args.falkordb:
        import falkordb_floors

        print(falkordb_floors.report(falkordb_floors.bench(
            args.falkordb, [int(s) for s in args.falkordb_sizes.split(",")], min(args.queries, 100))))
    if args.locomo and not args.no_model:
        from embedder_ab import markdown, measure

        print("\n" + markdown(measure(args.locomo, ["after"], rounds=1)).replace("after", "MiniLM, embedding included"))
    print(f"# load average after the run: {os.getloadavg()[0]:.2f}")
    if args.plot:
        plot(results, args.plot)
    if args.json:
        Path(args.json).write_text(json.dumps({str(n): {k: v for k, v in r.items() if k != "corpus_queries"}
                                               for n, r in results.items()} | {"model": model}, indent=1))


if __name__ == "__main__":
    main()
