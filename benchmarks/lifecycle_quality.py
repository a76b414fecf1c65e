"""Lifecycle quality: contradiction detection, the write filter and eviction under a cap.

Three labelled sets, written for this (``benchmarks/data/``), each scored with its constants
cross-validated: chosen on one half of the set (split by template group, so no template is on
both sides), scored on the other half, both ways; the pooled held-out figure is the one to quote.

    python benchmarks/lifecycle_quality.py                 # all three
    python benchmarks/lifecycle_quality.py contradictions  # or write-filter, eviction

No LLM is called. The LLM hook of the contradiction check is measured with a scripted model that
answers from the labels, wrong on a seeded 10% of the pairs (the figure measures the hook's
prompt, parsing and plumbing, not a model).
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))

from shared_core import AtlasConfig, ElasticMemoryAtlas, ManualClock, MiniLMEmbedder  # noqa: E402
from shared_core.engine.lifecycle.contradiction import LLMContradictionDetector, value_conflict  # noqa: E402
from shared_core.engine.lifecycle.write_filter import importance_score  # noqa: E402
from shared_core.values.model import MemoryNode  # noqa: E402

DATA = ROOT / "data"


def load(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (DATA / name).read_text().splitlines() if line.strip()]


def halves(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    return [r for r in rows if r["group"] % 2 == 0], [r for r in rows if r["group"] % 2 == 1]


def precision_recall(pred: Sequence[bool], gold: Sequence[bool]) -> tuple[float, float, int, int, int]:
    tp = sum(p and g for p, g in zip(pred, gold, strict=True))
    fp = sum(p and not g for p, g in zip(pred, gold, strict=True))
    fn = sum(g and not p for p, g in zip(pred, gold, strict=True))
    return tp / max(1, tp + fp), tp / max(1, tp + fn), tp, fp, fn


def f1(pred: Sequence[bool], gold: Sequence[bool]) -> float:
    p, r, *_ = precision_recall(pred, gold)
    return 0.0 if p + r == 0 else 2 * p * r / (p + r)


def cross_validate(rows: list[dict[str, Any]], grid: list[dict[str, Any]],
                   predict: Callable[[dict[str, Any], dict[str, Any]], bool],
                   score: Callable[[Sequence[bool], Sequence[bool]], float],
                   gold: Callable[[dict[str, Any]], bool]) -> tuple[list[bool], list[bool], list[str]]:
    """Choose the grid point with the best ``score`` on one half, predict the other; both ways.
    Returns the held-out predictions, their gold labels and a line per fold."""
    preds: list[bool] = []
    golds: list[bool] = []
    lines = []
    a, b = halves(rows)
    for name, tune, test in (("A->B", a, b), ("B->A", b, a)):
        best = max(grid, key=lambda p: score([predict(r, p) for r in tune], [gold(r) for r in tune]))
        pred = [predict(r, best) for r in test]
        preds += pred
        golds += [gold(r) for r in test]
        lines.append(f"  fold {name}: chose {best}")
    return preds, golds, lines


# -- contradictions ------------------------------------------------------------------------------
def scripted_llm(labels: dict[tuple[str, str], bool], *, noise: float = 0.1, seed: int = 0) -> Callable[[str], str]:
    """A deterministic stand-in for a model: answers the contradiction prompt from the labels,
    flipping a seeded ``noise`` share of the answers."""
    rng = random.Random(seed)
    flips: dict[tuple[str, str], bool] = {}

    def answer(prompt: str) -> str:
        new = re.search(r"^NEW: (.*)$", prompt, re.M)
        earlier = re.findall(r"^(\d+)\. (.*)$", prompt, re.M)
        assert new is not None
        hits = []
        for index, old in earlier:
            key = (old, new.group(1))
            if key not in flips:
                flips[key] = rng.random() < noise
            if labels[key] != flips[key]:
                hits.append(int(index))
        return json.dumps({"contradicted": hits, "reason": "scripted"})
    return answer


def through_atlas(rows: list[dict[str, Any]], embedder: Any) -> list[bool]:
    """Each pair in its own namespace of one atlas at the default config with the check on:
    whether adding ``new`` after ``old`` closed ``old``."""
    atlas = ElasticMemoryAtlas(config=AtlasConfig(contradiction_check=True), embedder=embedder,
                               clock=ManualClock(1_700_000_000.0))
    out = []
    for i, r in enumerate(rows):
        ns = f"pair-{i}"
        old = atlas.add_memory(r["old"], namespace=ns)
        atlas.add_memory(r["new"], namespace=ns)
        out.append(atlas.get(old.id, namespace=ns).valid_to is not None)
    return out


def contradictions(embedder: Any) -> None:
    rows = load("contradictions.jsonl")
    gold = [bool(r["label"]) for r in rows]
    print(f"\n== Contradiction detection: {len(rows)} pairs, {sum(gold)} contradictions "
          f"({len({r['group'] for r in rows})} template groups) ==")
    vectors = embedder.embed([t for r in rows for t in (r["old"], r["new"])])
    cosine = {id(r): float(np.dot(vectors[2 * i], vectors[2 * i + 1])) for i, r in enumerate(rows)}

    def rule(r: dict[str, Any], p: dict[str, Any]) -> bool:
        return value_conflict(r["new"], r["old"], min_shared=p["min_shared"], max_span=p["max_span"]) is not None

    def gated(r: dict[str, Any], p: dict[str, Any]) -> bool:
        return cosine[id(r)] >= p["similarity"] and rule(r, p)

    defaults = {"min_shared": 0.5, "max_span": 4, "similarity": AtlasConfig().contradiction_similarity}
    table = [("heuristic, default constants, all pairs", [rule(r, defaults) for r in rows], gold)]
    table.append((f"  + the similarity gate (MiniLM cosine >= {defaults['similarity']:.2f})",
                  [gated(r, defaults) for r in rows], gold))
    grid = [{"min_shared": s, "max_span": m, "similarity": g} for s, m, g in
            itertools.product((0.4, 0.5, 0.6, 0.7), (2, 3, 4, 5), (0.2, 0.3, 0.4, 0.5, 0.6))]
    pred, held_gold, lines = cross_validate(rows, grid, gated, f1, lambda r: bool(r["label"]))
    table.append(("heuristic + gate, cross-validated (held-out halves)", pred, held_gold))

    table.append(("through the atlas (add old, add new), default config", through_atlas(rows, embedder), gold))
    fresh = load("contradictions_holdout.jsonl")
    table.append((f"held-out set ({len(fresh)} pairs written after the rules froze), atlas",
                  through_atlas(fresh, embedder), [bool(r["label"]) for r in fresh]))

    llm = LLMContradictionDetector(scripted_llm({(r["old"], r["new"]): bool(r["label"]) for r in rows}))
    hook = []
    for r in rows:
        old = MemoryNode(id="old", content=r["old"], namespace="n")
        hook.append(bool(llm.detect(MemoryNode(id="new", content=r["new"], namespace="n"), [old])))
    table.append(("LLM hook, scripted model (labels, 10% flipped)", hook, gold))
    print(f"{'':<58}{'precision':>10}{'recall':>8}{'tp':>5}{'fp':>5}{'fn':>5}")
    for name, p, g in table:
        prec, rec, tp, fp, fn = precision_recall(p, g)
        print(f"{name:<58}{prec:>10.3f}{rec:>8.3f}{tp:>5}{fp:>5}{fn:>5}")
    print("\n".join(lines))
    by_cat: dict[str, list[int]] = {}
    for r, p in zip(rows, table[1][1], strict=True):
        by_cat.setdefault(r["category"], []).append(p == r["label"])
    print("  accuracy by category (gated, defaults): " + ", ".join(
        f"{c} {sum(v) / len(v):.2f} ({len(v)})" for c, v in sorted(by_cat.items())))
    wrong = [r for r, p in zip(rows + fresh, table[3][1] + table[4][1], strict=True) if p != r["label"]]
    for r in wrong[:12]:
        print(f"  {'missed' if r['label'] else 'false alarm'}: {r['old']!r} -> {r['new']!r}")


# -- the write filter ----------------------------------------------------------------------------
def write_filter(embedder: Any) -> None:
    del embedder  # the filter reads the text alone
    rows = load("write_filter.jsonl")
    fresh = load("write_filter_holdout.jsonl")
    default = AtlasConfig().write_threshold
    print(f"\n== Write filter: {len(rows)} turns, {sum(r['label'] == 'fact' for r in rows)} facts about the user "
          f"(+ {len(fresh)} written after the vocabulary froze) ==")

    def kept(r: dict[str, Any], p: dict[str, Any]) -> bool:
        return importance_score(r["text"]) >= p["threshold"]

    def balanced(pred: Sequence[bool], gold: Sequence[bool]) -> float:
        facts = [p for p, g in zip(pred, gold, strict=True) if g]
        talk = [not p for p, g in zip(pred, gold, strict=True) if not g]
        return sum(facts) / max(1, len(facts)) + sum(talk) / max(1, len(talk))

    def rates(pred: Sequence[bool], gold: Sequence[bool]) -> tuple[float, float]:
        facts = [p for p, g in zip(pred, gold, strict=True) if g]
        talk = [not p for p, g in zip(pred, gold, strict=True) if not g]
        return sum(facts) / len(facts), sum(talk) / len(talk)

    def is_fact(r: dict[str, Any]) -> bool:
        return bool(r["label"] == "fact")

    grid = [{"threshold": t / 20} for t in range(1, 20)]
    pred, gold, lines = cross_validate(rows, grid, kept, balanced, is_fact)
    table = [(f"importance_score >= {default} (the default), all turns",
              [kept(r, {"threshold": default}) for r in rows], [is_fact(r) for r in rows]),
             ("threshold cross-validated (held-out halves)", pred, gold),
             (f"held-out set, threshold {default}", [kept(r, {"threshold": default}) for r in fresh],
              [is_fact(r) for r in fresh])]
    print(f"{'':<58}{'facts kept':>11}{'small talk held':>17}")
    for name, p, g in table:
        fact_rate, talk_rate = rates(p, g)
        print(f"{name:<58}{fact_rate:>11.3f}{talk_rate:>17.3f}")
    print("\n".join(lines))
    print(f"  importance_score('User owns a dog') = {importance_score('User owns a dog')}")
    for r in rows + fresh:
        if kept(r, {"threshold": default}) != is_fact(r):
            print(f"  {'dropped fact' if is_fact(r) else 'kept small talk'}: {r['text']!r} "
                  f"({importance_score(r['text'])})")


# -- eviction ------------------------------------------------------------------------------------
DAY = 86_400.0
START = 1_746_057_600.0  # 1 May 2025, as notebook 04


class CachedEmbedder:
    """An embedder with a cache by text, so each text of the streams is embedded once."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.cache = inner, {}

    @property
    def dim(self) -> int:
        return int(self.inner.dim)

    def embed(self, texts: Sequence[str]) -> Any:
        missing = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if missing:
            self.cache.update(zip(missing, self.inner.embed(missing), strict=True))
        return np.stack([self.cache[t] for t in texts])


def replay(turns: list[dict[str, Any]], embedder: Any, *, cap: int, **config: Any) -> tuple[int, int, list[str]]:
    """Play a stream as notebook 04's agent does (recall the top 5 for every message, then store
    it; a question is only recalled) into an atlas capped at ``cap`` memories. Returns the key
    facts kept, stated, and the texts of the evicted ones."""
    clock = ManualClock(START)
    atlas = ElasticMemoryAtlas(config=AtlasConfig(max_nodes=cap, **config), embedder=embedder, clock=clock)
    evicted: set[str] = set()
    atlas.subscribe(lambda event: evicted.add(str(event.node_id)) if event.kind == "evict" else None)
    keys: dict[str, str] = {}
    day = -1
    for turn in turns:
        if turn["day"] != day:
            day = turn["day"]
            clock.set(START + day * DAY + 8 * 3600)
        clock.advance(minutes=20)
        atlas.retrieve(turn["text"], namespace="user", top_k=5)
        if turn["kind"] == "ask":
            continue
        node = atlas.add_memory(turn["text"], namespace="user", session_id=f"day-{day}",
                                metadata={"key": True} if turn["key"] else None)
        if turn["key"]:
            keys[node.id] = turn["text"]
    lost = [text for nid, text in keys.items() if nid in evicted]
    return len(keys) - len(lost), len(keys), lost


def eviction(embedder: Any) -> None:
    rows = load("eviction_streams.jsonl")
    cached = CachedEmbedder(embedder)
    cached.embed(sorted({r["text"] for r in rows}))
    default = AtlasConfig().episodic_value
    grid = sorted({0.0, 0.03, 0.1, 0.3, 1.0, default})
    print("\n== Eviction under a cap of a quarter of the stream (max_nodes; the policy never reads 'key') ==")
    streams = {name: [r for r in rows if r["stream"] == name] for name in ("notebook04", "large")}
    results: dict[tuple[str, float], tuple[int, int, list[str]]] = {}
    print(f"{'stream':<12}{'stored':>8}{'cap':>6}" + "".join(f"{'ev ' + str(v):>10}" for v in grid))
    for name, turns in streams.items():
        stored = sum(r["kind"] != "ask" for r in turns)
        for value in grid:
            results[name, value] = replay(turns, cached, cap=stored // 4, episodic_value=value)
        print(f"{name:<12}{stored:>8}{stored // 4:>6}"
              + "".join(f"{results[name, v][0] / results[name, v][1]:>10.3f}" for v in grid))
    print("  (ev = AtlasConfig.episodic_value; 1.0 leaves the content out of the value, keeping only "
          "'a fact is never isolated chatter')")
    for tune, test in (("notebook04", "large"), ("large", "notebook04")):
        best = max(grid, key=lambda v: (results[tune, v][0] / results[tune, v][1], -v))  # ties: the smaller
        kept, total, _ = results[test, best]
        print(f"  cross-validated: chosen on {tune} ({best}), {test} keeps {kept}/{total} = {kept / total:.3f}")
    for name in streams:
        for text in results[name, default][2]:
            print(f"  {name}, default: evicted {text!r}")


SECTIONS: dict[str, Callable[[Any], None]] = {"contradictions": contradictions, "write-filter": write_filter,
                                              "eviction": eviction}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sections", nargs="*", help=f"any of {', '.join(SECTIONS)} (default: all)")
    args = parser.parse_args()
    embedder = MiniLMEmbedder()
    unknown = set(args.sections) - set(SECTIONS)
    if unknown:
        parser.error(f"unknown section(s) {sorted(unknown)}; choose from {list(SECTIONS)}")
    for name in args.sections or SECTIONS:
        SECTIONS[name](embedder)


if __name__ == "__main__":
    main()
