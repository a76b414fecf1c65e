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

    PYTHONPATH=. .venv/bin/python benchmarks/falkordb_requests.py --url URL --chat [--cosine-batch N]
        [--set speaker_weight=0] [--in-process] [--data locomo_dev.json]

``--chat`` counts instead a chat namespace's requests: LoCoMo's first conversation (conv-26, 419
turns, 384-d `HashingEmbedder` vectors) written into a namespace of its own (once a server), faded
60 days and compressed, then ``build_context`` (budget 400, ``reinforce=False``) over its first
150 questions twice: requests a call (every `Connection._retrying`), the `VectorIndex.similarities`
calls and the ids they asked about a call (what the ranking and the paths resolve), wall p50 and a
digest of every context (its text, its memories' contents and scores), which must not move with
``--cosine-batch`` (sets `indexes.COSINE_BATCH`, the store's `VectorIndex.cosine_batch`).
``--in-process`` runs the same calls on an in-process atlas (no server); its digest is not
comparable between runs: each run draws new ids, and ties between scores fall by id.
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


CHAT_PREFIX = "chatreq:"
CHAT_QUESTIONS = 150


def chat(url: str | None, overrides: dict[str, Any], data: str | None = None) -> dict[str, Any]:
    """``--chat``: the conversation's ``build_context`` requests and digest (the module docstring);
    ``url`` None: in process."""
    import hashlib

    from _locomo import default_data_path, load_locomo

    from shared_core import AtlasConfig, ElasticMemoryAtlas, HashingEmbedder, ManualClock
    from shared_core.store.base import VectorIndexBase
    from shared_core.store.falkordb.client import Connection

    conv = load_locomo(data or default_data_path(), limit=1)[0]
    clock = ManualClock(max(t.timestamp for t in conv.turns) + 1.0)
    backend = None if url is None else f"{url.split('?')[0]}?prefix={CHAT_PREFIX}"
    atlas = ElasticMemoryAtlas(config=AtlasConfig(**overrides), embedder=HashingEmbedder(dim=384), clock=clock,
                               backend=backend)
    if atlas.backend.memory_count("chat") == 0:
        atlas.add_memories([{"content": t.content, "session_id": f"session_{t.session}", "timestamp": t.timestamp}
                            for t in conv.turns], namespace="chat", progress=False)
        clock.advance(days=60)
        atlas.compress(namespace="chat", progress=False)
    else:
        clock.advance(days=60)
    seen = {"requests": 0, "cosine calls": 0, "cosines asked": 0}
    retrying = Connection._retrying

    def counted(self: Connection, call: Callable[[], Any], what: str, *, budget: float | None = None) -> Any:
        seen["requests"] += 1
        return retrying(self, call, what, budget=budget)

    part = atlas.backend.partition("chat")
    vectors_type = type(part.vectors)
    similarities = vectors_type.similarities

    def counted_similarities(self: VectorIndexBase, query: Any, ids: Any, **ahead: Any) -> Any:
        seen["cosine calls"] += 1
        seen["cosines asked"] += len(ids)
        return similarities(self, query, ids, **ahead)  # type: ignore[arg-type]

    questions = [q.question for q in conv.questions][:CHAT_QUESTIONS]

    def call(question: str) -> Any:
        return atlas.build_context(question, namespace="chat", token_budget=400, style="bullet", reinforce=False)

    for question in questions[:3]:
        call(question)
    digest, walls = hashlib.sha256(), []
    totals = dict.fromkeys(seen, 0)
    Connection._retrying = counted  # type: ignore[method-assign]
    vectors_type.similarities = counted_similarities  # type: ignore[method-assign]
    try:
        for _ in range(2):
            for question in questions:
                seen.update(dict.fromkeys(seen, 0))
                start = time.perf_counter()
                ctx = call(question)
                walls.append(time.perf_counter() - start)
                for key, value in seen.items():
                    totals[key] += value
                digest.update(repr((ctx.text, [(m.node.content, m.score) for m in ctx.memories])).encode())
    finally:
        Connection._retrying = retrying  # type: ignore[method-assign]
        vectors_type.similarities = similarities  # type: ignore[method-assign]
    out: dict[str, Any] = {f"{key} a call": round(value / len(walls), 2) for key, value in totals.items()}
    out.update({"cosine_batch": getattr(part.vectors, "cosine_batch", None),  # an older tree has none
                "calls": len(walls),
                "wall p50 ms": round(1e3 * statistics.median(walls), 2), "digest": digest.hexdigest()[:16]})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help="a FalkorDB server (falkordb://host:port); needed but with --in-process")
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--pause", type=float, default=0.0, help="ms before each call (an app between two recalls)")
    parser.add_argument("--chat", action="store_true", help="a LoCoMo conversation's build_context requests")
    parser.add_argument("--cosine-batch", type=int, help="FalkorDB's VectorIndex.cosine_batch (with --chat)")
    parser.add_argument("--data", help="LoCoMo's file (with --chat; default: _locomo.default_data_path)")
    parser.add_argument("--in-process", action="store_true", help="with --chat: an in-process atlas, no server")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                        help="an AtlasConfig override (with --chat)")
    args = parser.parse_args()
    if args.url is None and not (args.chat and args.in_process):
        parser.error("--url is needed")
    import json
    import os

    if args.chat:
        from _locomo import config_overrides

        from shared_core.store.falkordb import indexes

        if args.cosine_batch is not None:
            indexes.COSINE_BATCH = args.cosine_batch
        result = chat(None if args.in_process else args.url, config_overrides(args.set), args.data)
        print(json.dumps({**result, "load": os.getloadavg()[0]}))
        return

    atlas, queries = _atlas(args.url, args.size, args.queries)
    print(f"# load {os.getloadavg()[0]:.2f}")
    for line in requests(atlas, queries, args.pause / 1e3):
        print(line)
    print(f"# load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
