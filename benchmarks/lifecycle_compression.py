"""Cluster summaries on LoCoMo after compression: how many form, how short, how faithful.

    python benchmarks/lifecycle_compression.py                       # every dev conversation
    python benchmarks/lifecycle_compression.py --thresholds 0.45 0.6 --questions 0

Each conversation is written to its own atlas at the defaults (``AtlasConfig()``, the MiniLM
model), one memory per turn as in ``locomo_recall.py``; the clock then moves 60 days (every turn
fades below ``summary_below``) and `compress` runs. For each ``cluster_threshold`` tried it prints,
per conversation and in total:

- clusters: cluster summaries formed; covered: the share of the memories they summarise;
- ratio: summary tokens / source tokens (cl100k_base), over all summaries, and the largest one;
- fidelity: the mean cosine of a summary's embedding to each of its sources' (MiniLM);
- R@1000tok: the share of gold evidence turns whose text `build_context` renders in 1,000
  tokens after compression (``--questions`` per conversation; 0 skips it).

The threshold is chosen leave-one-conversation-out: on the other conversations, the threshold
with the highest ``covered x fidelity`` among those whose R@1000tok is within 0.01 of the
best; the held-out conversation's figures at that threshold are printed.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _baselines import VectorCache
from _locomo import default_data_path, load_locomo, recall_fraction
from locomo_recall import _CachedEmbedder, ingest

from shared_core import AtlasConfig, ElasticMemoryAtlas, ManualClock, MiniLMEmbedder, TiktokenCounter

NOW = 1_767_225_600.0
THRESHOLDS = (0.35, 0.4, 0.45, 0.5, 0.55, 0.6)


def measure(conv: object, threshold: float, cache: VectorCache, counter: TiktokenCounter,
            questions: int) -> dict[str, float]:
    clock = ManualClock(NOW)
    atlas = ElasticMemoryAtlas(config=AtlasConfig(cluster_threshold=threshold), embedder=_CachedEmbedder(cache),
                               token_counter=counter, clock=clock)
    ns = conv.sample_id  # type: ignore[attr-defined]
    dia_of = ingest(atlas, conv, cache)  # type: ignore[arg-type]
    memories = atlas.count(namespace=ns)
    clock.advance(days=60)
    report = atlas.compress(namespace=ns, progress=False)
    clusters = [s for s in report.summaries if s.kind == "cluster"]
    source_tokens = summary_tokens = 0
    ratios, fidelity = [], []
    for s in clusters:
        summary = atlas.get(s.summary_id)
        members = [atlas.get(m) for m in s.members]
        tokens = counter.count(summary.content)
        sources = sum(counter.count(m.content) for m in members)
        summary_tokens += tokens
        source_tokens += sources
        ratios.append(tokens / sources)
        assert summary.embedding is not None
        fidelity += [float(np.dot(summary.embedding, m.embedding)) for m in members if m.embedding is not None]
    covered = len({m for s in clusters for m in s.members})
    out = {"clusters": float(len(clusters)), "covered": covered / max(1, memories),
           "ratio": summary_tokens / source_tokens if source_tokens else 0.0,
           "max_ratio": max(ratios, default=0.0), "fidelity": statistics.fmean(fidelity) if fidelity else 0.0,
           "recall": float("nan")}
    asked = conv.questions[:questions]  # type: ignore[attr-defined]
    if asked:
        text_of = {t.dia_id: " ".join(t.content.split()) for t in conv.turns}  # type: ignore[attr-defined]
        found = []
        for q in asked:
            ctx = atlas.build_context(q.question, namespace=ns, token_budget=1000, reinforce=False)
            shown = [dia_of[m.node.id] for m in ctx.memories if m.node.id in dia_of
                     and text_of[dia_of[m.node.id]] in " ".join(ctx.text.split())]
            found.append(recall_fraction(q.evidence, shown))
        out["recall"] = statistics.fmean(found)
    return out


def _row(name: str, t: float, m: dict[str, float]) -> str:
    return (f"| {name} | {t:.2f} | {m['clusters']:.0f} | {m['covered']:.3f} | {m['ratio']:.3f} | "
            f"{m['max_ratio']:.3f} | {m['fidelity']:.3f} | {m['recall']:.3f} |")


def choose(results: dict[str, dict[float, dict[str, float]]], train: Sequence[str]) -> float:
    """The threshold with the best mean covered x fidelity over ``train`` among those whose mean
    R@1000tok is within 0.01 of the best (all, when recall was not measured)."""
    thresholds = sorted(next(iter(results.values())))

    def mean(t: float, key: str) -> float:
        return statistics.fmean(results[c][t][key] for c in train)

    recall = {t: mean(t, "recall") for t in thresholds}
    best = max((r for r in recall.values() if r == r), default=None)
    ok = [t for t in thresholds if best is None or recall[t] >= best - 0.01]
    return max(ok, key=lambda t: statistics.fmean(results[c][t]["covered"] * results[c][t]["fidelity"]
                                                  for c in train))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(default_data_path()), help="LoCoMo JSON (default: the dev split)")
    parser.add_argument("--thresholds", type=float, nargs="+", default=list(THRESHOLDS))
    parser.add_argument("--questions", type=int, default=60, help="questions per conversation for R@1000tok")
    args = parser.parse_args(argv)
    conversations = load_locomo(args.data)
    cache = VectorCache(MiniLMEmbedder())
    counter = TiktokenCounter()
    results: dict[str, dict[float, dict[str, float]]] = {}
    print("| conversation | cluster_threshold | clusters | covered | ratio | max ratio | fidelity | R@1000tok |")
    print("|---|---|---|---|---|---|---|---|")
    for conv in conversations:
        results[conv.sample_id] = {}
        for t in args.thresholds:
            m = results[conv.sample_id][t] = measure(conv, t, cache, counter, args.questions)
            print(_row(conv.sample_id, t, m), flush=True)
    for t in args.thresholds:
        total = {k: statistics.fmean(results[c][t][k] for c in results) for k in results[next(iter(results))][t]}
        total["clusters"] = sum(results[c][t]["clusters"] for c in results)
        total["max_ratio"] = max(results[c][t]["max_ratio"] for c in results)
        print(_row("all (mean; clusters summed)", t, total))
    if len(results) > 1:
        print("\nleave one conversation out:")
        for held in results:
            t = choose(results, [c for c in results if c != held])
            print(_row(f"held out {held}", t, results[held][t]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
