"""The FalkorDB backend against FalkorDB itself: `latency.py --falkordb`'s part.

For each size it times the atlas on a FalkorDB server (`latency.bench_atlas` with the backend's
URL) and, on the same vectors and texts, what the server costs with nothing of ours in the way
(the floors), through the ``falkordb`` client: a graph of ``(:Doc {id, content, embedding})``
nodes with a 384-d cosine vector index and a full-text index on the content, written in
``UNWIND`` batches of 500 (the batched-create rate), then one node at a time (a single create,
both indexes updated), queried for the 10 nearest vectors, the 200 nearest with their content,
and 200 full-text hits of the query's words. The in-process atlas at the same size is printed
beside them (from the same run).

The backend's keyword path no longer uses a full-text index: it computes BM25 on the server
over a ``terms`` list property (each memory's `shared_core.store.terms.index_terms`, under a
range index) and an ``(:Atlas)`` node's document and token counts (`cypher.bm25`). Its floor is
that query, the statement the backend issues, run on a second graph holding only
``(:Memory {id, terms, tlen, reps, kwseq})`` nodes and the counts, for the 200 best of each query's stems
(`shared_core.store.terms.query_stems`). The full-text line stays as the issue's reference.

    .venv/bin/python benchmarks/latency.py --sizes 10000 --peers '' --no-model --no-memory --falkordb
"""

from __future__ import annotations

import os
import tempfile
import time
from typing import Any

from shared_core.store.terms import index_terms, query_stems, query_terms

_BATCH = 500


def floors(url: str, corpus: Any, extra: Any, queries: int) -> dict[str, Any]:
    """The raw FalkorDB operations on ``corpus``'s vectors (see the module docstring)."""
    import falkordb
    from latency import pcts, timed  # type: ignore[import-not-found]

    from shared_core.store.falkordb import parse_url

    settings = parse_url(url)
    db = falkordb.FalkorDB(host=settings.host, port=settings.port)
    graph = db.select_graph(f"floors-{os.getpid()}")
    dim = corpus.vectors.shape[1]
    try:
        graph.query(f"CREATE VECTOR INDEX FOR (d:Doc) ON (d.embedding) "
                    f"OPTIONS {{dimension: {dim}, similarityFunction: 'cosine'}}")
        graph.query("CALL db.idx.fulltext.createNodeIndex({label: 'Doc', language: 'english'}, 'content')")
        graph.query("CREATE INDEX FOR (d:Doc) ON (d.id)")
        n = len(corpus.texts)
        start = time.perf_counter()
        for s in range(0, n, _BATCH):
            rows = [{"id": str(s + j), "content": t, "embedding": v.tolist()}
                    for j, (t, v) in enumerate(zip(corpus.texts[s:s + _BATCH], corpus.vectors[s:s + _BATCH],
                                                   strict=True))]
            graph.query("UNWIND $rows AS r CREATE (:Doc {id: r.id, content: r.content, "
                        "embedding: vecf32(r.embedding)})", {"rows": rows})
        batched = n / (time.perf_counter() - start)
        single = timed(lambda i: graph.query("CREATE (:Doc {id: $id, content: $content, embedding: vecf32($v)})",
                                             {"id": f"x{i}", "content": extra.texts[i],
                                              "v": extra.vectors[i].tolist()}), len(extra.texts), warmup=0)
        qv = [v.tolist() for v in corpus.query_vectors[:queries]]
        words = ["|".join(query_terms(text)) for text in corpus.queries[:queries]]
        k10 = timed(lambda i: graph.ro_query("CALL db.idx.vector.queryNodes('Doc', 'embedding', 10, vecf32($q)) "
                                             "YIELD node, score RETURN node.id, score", {"q": qv[i]}), len(qv))
        k200 = timed(lambda i: graph.ro_query("CALL db.idx.vector.queryNodes('Doc', 'embedding', 200, vecf32($q)) "
                                              "YIELD node, score RETURN node.id, node.content, score",
                                              {"q": qv[i]}), len(qv))
        text = timed(lambda i: graph.ro_query("CALL db.idx.fulltext.queryNodes('Doc', $q) YIELD node, score "
                                              "RETURN node.id, score LIMIT 200", {"q": words[i]}), len(words))
        terms = _bm25_terms(db.select_graph(f"floors-terms-{os.getpid()}"), corpus, queries)
        return {"batched_per_s": batched, "single": pcts(single), "vector_k10": pcts(k10),
                "vector_k200_content": pcts(k200), "fulltext_200": pcts(text),
                **{name: pcts(times) for name, times in terms.items()}}
    finally:
        graph.delete()
        db.connection.close()


def _bm25_terms(graph: Any, corpus: Any, queries: int) -> dict[str, list[float]]:
    """The times of the backend's BM25 search (`FalkorKeywordIndex.search`'s two statements,
    `cypher.BM25_COUNTS` then `cypher.bm25`, no session, no subset) for the 200 and the 10 best
    of each query, and of the single statement it replaced (`cypher.bm25_scan`), on a graph of
    ``corpus``'s texts as the backend indexes them: each ``(:Memory)`` node's ``terms`` list
    under a range index with their number and repeats (``tlen``, ``reps``: the statements read
    them), the ``(:Atlas)`` counts beside."""
    from latency import timed  # type: ignore[import-not-found]

    from shared_core.store.falkordb import cypher
    from shared_core.store.falkordb.indexes import FalkorKeywordIndex

    try:
        graph.query(cypher.TERMS_INDEX)
        docs = [index_terms(t) for t in corpus.texts]
        for s in range(0, len(docs), _BATCH):
            rows = [{"id": str(s + j), "terms": t, "tlen": len(t), "reps": cypher.repeats(t), "kwseq": s + j + 1}
                    for j, t in enumerate(docs[s:s + _BATCH])]
            graph.query("UNWIND $rows AS r CREATE (:Memory {id: r.id, terms: r.terms, tlen: r.tlen, reps: r.reps, "
                        "kwseq: r.kwseq})", {"rows": rows})
        graph.query("CREATE (:Atlas {docs: $docs, tokens: $tokens, kwseq: $docs})",
                    {"docs": len(docs), "tokens": sum(map(len, docs))})
        scan = cypher.bm25_scan(session=False, among=False)
        texts = [text for text in corpus.queries[:queries] if query_stems(text)]

        def pruned(i: int, k: int) -> object:  # the backend's two statements (`FalkorKeywordIndex.search`)
            counting = FalkorKeywordIndex(None).counting(texts[i], k)  # type: ignore[arg-type]
            assert counting is not None
            params = FalkorKeywordIndex.plan(counting[0], graph.ro_query(*counting[1]).result_set, k)
            if params is None:
                return None
            statement, params = FalkorKeywordIndex.top_statement(params)
            return graph.ro_query(statement(session=False, among=False), params)

        return {"bm25_terms_200": timed(lambda i: pruned(i, 200), len(texts)),
                "bm25_terms_10": timed(lambda i: pruned(i, 10), len(texts)),
                "bm25_scan_200": timed(lambda i: graph.ro_query(scan, {
                    "terms": query_stems(texts[i]), "k": 200, "k1": FalkorKeywordIndex.K1, "b": FalkorKeywordIndex.B}),
                    len(texts))}
    finally:
        graph.delete()


def bench(url: str, sizes: list[int], queries: int) -> dict[int, Any]:
    """Per size: the atlas in process, on FalkorDB, and the floors, on the same corpus. ``url``
    "start": a server started here on 127.0.0.1 (appendfsync everysec) and stopped afterwards."""
    from latency import bench_atlas, make_corpus  # type: ignore[import-not-found]

    from shared_core.store.falkordb import FalkorDBBackend

    out: dict[int, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        server = None
        if url == "start":
            from shared_core.store.falkordb.server import start_server

            server = start_server(tmp)
            url = server.url
        base = url.split("?")[0]
        try:
            for n in sizes:
                corpus, extra = make_corpus(n, queries, extra=100)
                local = bench_atlas(corpus, extra=extra)
                prefixed = f"{base}?prefix=bench-{os.getpid()}:"
                t0 = time.perf_counter()
                try:
                    remote = bench_atlas(corpus, extra=extra, backend=prefixed)
                finally:
                    FalkorDBBackend.from_url(prefixed, dim=corpus.vectors.shape[1]).drop("bench")
                print(f"# {n:,}: FalkorDB atlas done in {time.perf_counter() - t0:.0f} s", flush=True)
                out[n] = {"falkordb": remote, "in_process": local, "floors": floors(base, corpus, extra, queries)}
        finally:
            if server is not None:
                server.stop()
    return out


def profile(url: str, n: int, queries: int) -> str:
    """`latency.profile` of the atlas on FalkorDB (on ``url``, or on a server started here when
    it is "start") at ``n`` memories."""
    from latency import make_corpus  # type: ignore[import-not-found]
    from latency import profile as profiled

    from shared_core.store.falkordb import FalkorDBBackend

    with tempfile.TemporaryDirectory() as tmp:
        server = None
        if url == "start":
            from shared_core.store.falkordb.server import start_server

            server = start_server(tmp)
            url = server.url
        prefixed = f"{url.split('?')[0]}?prefix=profile-{os.getpid()}:"
        corpus = make_corpus(n, queries)[0]
        try:
            return str(profiled(corpus, backend=prefixed))
        finally:
            FalkorDBBackend.from_url(prefixed, dim=corpus.vectors.shape[1]).drop("bench")
            if server is not None:
                server.stop()


def report(results: dict[int, Any]) -> str:
    """The table: each operation in process, on FalkorDB, and the floor it is measured against."""
    lines = ["| memories | operation | in process p50 ms | FalkorDB backend p50 ms | p95 ms | floor | floor p50 ms "
             "| backend / floor |", "|---|---|---|---|---|---|---|---|"]
    for n, r in results.items():
        f, local, remote = r["floors"], r["in_process"], r["falkordb"]
        rows = [("retrieve", "vector k=10", f["vector_k10"][0]),
                ("build_context", "vector k=200 with content", f["vector_k200_content"][0]),
                ("add_memory", "one node created", f["single"][0]),
                ("add_memories", "UNWIND batched create (per node)", 1000.0 / f["batched_per_s"])]
        for op, floor_name, floor in rows:
            ours = remote[op][0]
            lines.append(f"| {n:,} | `{op}` | {local[op][0]:.3f} | {ours:.3f} | {remote[op][1]:.3f} | {floor_name} | "
                         f"{floor:.3f} | {ours / floor:.2f}x |")
        if "bm25_terms_200" in f:
            lines.append(f"| {n:,} | keyword BM25 on the `terms` list, 200 hits (floor only) | — | — | — | "
                         f"the backend's BM25 statements | {f['bm25_terms_200'][0]:.3f} | — |")
        if "bm25_terms_10" in f:
            lines.append(f"| {n:,} | keyword BM25 on the `terms` list, 10 hits (floor only) | — | — | — | "
                         f"the backend's BM25 statements | {f['bm25_terms_10'][0]:.3f} | — |")
        if "bm25_scan_200" in f:
            lines.append(f"| {n:,} | keyword BM25 scoring every match, 200 hits (the statement replaced) | — | — "
                         f"| — | `cypher.bm25_scan` | {f['bm25_scan_200'][0]:.3f} | — |")
        lines.append(f"| {n:,} | full-text index, 200 hits (the issue's reference; the backend no longer uses "
                     f"it) | — | — | — | fulltext 200 | {f['fulltext_200'][0]:.3f} | — |")
        lines.append(f"| {n:,} | add_memories per s | {local['add_memories_per_s']:,.0f} | "
                     f"{remote['add_memories_per_s']:,.0f} | — | UNWIND batched create | {f['batched_per_s']:,.0f}/s | "
                     f"{remote['add_memories_per_s'] / f['batched_per_s']:.2f}x |")
        lines.append(f"| {n:,} | recall@10 of the vector index | {local['recall']:.3f} | {remote['recall']:.3f} "
                     "| — | — | — | — |")
    return "\n".join(lines)
