"""The read path of this tree against another commit's: same answers, and CPU time per call.

    .venv/bin/python benchmarks/read_ab.py --base main --sizes 1000,10000,100000

The base commit's ``shared_core`` is exported (``git archive``) and imported under another name,
so both run in one process on the same corpus (``latency.make_corpus``) with the same memory
ids. Two checks, then the timing:

- ``recall`` of both on the *same* partition (built by this tree), for every query and several
  scopes (top 10, 20, 200, a session with and without the other sessions): same ids, scores,
  paths and score components, exactly;
- ``retrieve`` (reinforcing) and ``build_context`` on two atlases built alike, in lockstep: same
  hits, weights, texts and token counts;
- CPU time (``time.thread_time``) of ``retrieve`` (top 10) and ``build_context`` (400 tokens,
  bullets) per call, base and this tree interleaved query by query, medians over ``--rounds``
  passes: on a shared machine the CPU time of one thread is far steadier than the wall clock.

``--vector-dtype float32|float16`` sets this tree's ``AtlasConfig.ann_vector_dtype`` (the base
keeps its own defaults; ``write_ab.py`` and ``single_ab.py`` take the flag too): float32 must
give the same answers as a base without the field.
"""

from __future__ import annotations

import argparse
import gc
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import latency

import shared_core

ROOT = Path(__file__).resolve().parent.parent
THIS_TREE: dict[str, Any] = {}  # AtlasConfig fields given to this tree's atlases only (`tree_options`)


def config(pkg: Any) -> Any:
    """``pkg``'s default ``AtlasConfig``, with `THIS_TREE`'s fields for this tree's package."""
    return pkg.AtlasConfig(**THIS_TREE) if pkg is shared_core else pkg.AtlasConfig()


def ab_parser(doc: str, sizes: str) -> argparse.ArgumentParser:
    """The options every A/B script takes: ``--base``, ``--sizes`` (default ``sizes``) and this
    tree's config (``--vector-dtype``); described by the first paragraph of ``doc``."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--base", default="main", help="the commit to compare with (default: main)")
    parser.add_argument("--sizes", default=sizes)
    parser.add_argument("--vector-dtype", choices=("float16", "float32"), default=None,
                        help="this tree's AtlasConfig.ann_vector_dtype (default: its default)")
    return parser


@contextmanager
def base_for(args: argparse.Namespace) -> Iterator[Any]:
    """The ``--base`` commit's ``shared_core`` (`base_package`, in a temporary directory) with
    `THIS_TREE` set from `ab_parser`'s options, after printing what is compared."""
    if args.vector_dtype is not None:
        THIS_TREE["ann_vector_dtype"] = args.vector_dtype
    with tempfile.TemporaryDirectory() as tmp:
        base = base_package(args.base, Path(tmp))
        print(f"base {args.base}, this tree: shared_core at {Path(shared_core.__file__).parent}, "
              f"ann_vector_dtype {config(shared_core).ann_vector_dtype}")
        yield base


def base_package(ref: str, into: Path) -> Any:
    """``shared_core`` at ``ref``, imported as ``shared_core_base``."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "shared_core"], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    (into / "shared_core").rename(into / "shared_core_base")
    sys.path.insert(0, str(into))
    import shared_core_base

    return shared_core_base


@contextmanager
def fixed_ids() -> Iterator[None]:
    """Memory ids from a seeded generator, so that two atlases built alike have the same ids."""
    real, count = os.urandom, [0]

    def seeded(n: int) -> bytes:
        count[0] += 1
        return np.random.default_rng(count[0]).bytes(n)

    os.urandom = seeded
    try:
        yield
    finally:
        os.urandom = real


def build(pkg: Any, corpus: latency.Corpus) -> Any:
    with fixed_ids():
        atlas = pkg.ElasticMemoryAtlas(config=config(pkg), embedder=corpus.embedder(),
                                       clock=pkg.ManualClock(1_700_000_000.0))
        step = latency.batch_size(len(corpus.texts))
        for s in range(0, len(corpus.texts), step):
            atlas.add_memories([{"content": t, "session_id": f"s{(s + j) // 50}"}
                                for j, t in enumerate(corpus.texts[s:s + step])], namespace="bench", progress=False)
    return atlas


def same_recall(base: Any, atlas: Any, corpus: latency.Corpus) -> tuple[int, int]:
    """(differing, compared) recalls of both packages on this tree's partition."""
    from shared_core.engine.recall import RecallRequest, recall

    part, now, bad, total = atlas.backend.partition("bench"), atlas.clock.now(), 0, 0
    for text, vector in zip(corpus.queries, corpus.query_vectors, strict=True):
        for top_k, session, cross in ((10, None, False), (20, None, False), (200, None, False), (10, "s3", True),
                                      (5, "s7", False)):
            args = {"query": text, "vector": vector, "now": now, "top_k": top_k, "session_id": session,
                    "cross_session": cross, "explain": True}
            old = base.recall.recall(part, base.recall.RecallRequest(**args), base.AtlasConfig())
            new = recall(part, RecallRequest(**args), atlas.config)
            key = [[(h.node.id, h.score, h.paths, dict(h.components), h.other_session) for h in hits]
                   for hits in (old, new)]
            bad += key[0] != key[1]
            total += 1
    return bad, total


def same_answers(old: Any, new: Any, corpus: latency.Corpus) -> tuple[int, int, int, int]:
    """(differing, compared) answers of two atlases built alike, asked the same in lockstep; then
    (retrieves whose hit ids differ, contexts whose text differs): where the answers differ only in
    scores and embeddings (a float16 index's rounding), these say whether what was found changed."""
    bad = ids = texts = 0
    for text in corpus.queries:
        a, b = (x.retrieve(text, namespace="bench", top_k=10) for x in (old, new))
        ids += [h.node.id for h in a] != [h.node.id for h in b]
        bad += [(h.node.id, h.score, h.node.weight, h.node.access_count) for h in a] != \
            [(h.node.id, h.score, h.node.weight, h.node.access_count) for h in b]
        bad += not all(np.array_equal(x.node.embedding, y.node.embedding) for x, y in zip(a, b, strict=True))
        for session, budget, style in ((None, 400, "bullet"), ("s2", 2000, "timeline")):
            c, d = (x.build_context(text, namespace="bench", session_id=session, token_budget=budget, style=style)
                    for x in (old, new))
            bad += (c.text, c.tokens, [m.node.id for m in c.memories]) != \
                (d.text, d.tokens, [m.node.id for m in d.memories])
            texts += c.text != d.text
    return bad, 4 * len(corpus.queries), ids, texts


def cpu_ms(old: Any, new: Any, call: Callable[[Any, int], object], n: int, rounds: int) -> tuple[float, float]:
    """Median CPU ms per call of ``call(atlas, i)``, base and new interleaved."""
    for i in range(5):
        call(old, i)
        call(new, i)
    samples: tuple[list[float], list[float]] = ([], [])
    clock = time.thread_time
    for r in range(rounds):
        for i in range(n):
            for which in ((0, 1) if (i + r) % 2 else (1, 0)):
                atlas = (old, new)[which]
                start = clock()
                call(atlas, i)
                samples[which].append(clock() - start)
    return float(np.median(samples[0]) * 1e3), float(np.median(samples[1]) * 1e3)


def ops(q: list[str]) -> dict[str, Callable[[Any, int], object]]:
    return {"retrieve": lambda a, i: a.retrieve(q[i], namespace="bench", top_k=10),
            "build_context": lambda a, i: a.build_context(q[i], namespace="bench", token_budget=400, style="bullet")}


def main() -> None:
    parser = ab_parser(__doc__, "1000,10000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    with base_for(args) as base:
        print("| memories | recall differing | answers differing | retrieve ids differing | context texts differing "
              "| op | base CPU ms | this tree CPU ms | ratio |")
        print("|---|---|---|---|---|---|---|---|---|")
        for n in (int(s) for s in args.sizes.split(",")):
            corpus, _ = latency.make_corpus(n, args.queries)
            old, new = build(base, corpus), build(shared_core, corpus)
            recall_diff = "{} of {}".format(*same_recall(base, new, corpus))
            bad, total, ids, texts = same_answers(old, new, corpus)
            answer_diff = f"{bad} of {total} | {ids} of {len(corpus.queries)} | {texts} of {2 * len(corpus.queries)}"
            gc.collect()
            for name, call in ops(corpus.queries).items():
                b, t = cpu_ms(old, new, call, len(corpus.queries), args.rounds)
                print(f"| {n:,} | {recall_diff} | {answer_diff} | `{name}` | {b:.3f} | {t:.3f} | {t / b:.2f} |",
                      flush=True)


if __name__ == "__main__":
    main()
