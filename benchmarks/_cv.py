"""Leave-one-conversation-out cross-validation of the atlas's tunable constants on LoCoMo.

``python benchmarks/locomo_recall.py --cv`` runs it. Every point of `GRID` (a small product of
named `AtlasConfig` fields, all read at query time) is scored on every question of every
conversation once; then

- **fitted**: the point with the best `OBJECTIVE` over all five conversations, and its scores;
- **cross-validated**: for each conversation, the point with the best objective over the other
  four, and that point's scores on the held-out conversation; the table averages those
  held-out scores over all questions, so no question is scored with a constant chosen on it.

Ties go to the earlier point of the grid (the first value of each field is the shipped preset).
Each conversation is ingested once (with the base config); each grid point is a new
`ElasticMemoryAtlas` over the same backend, so the grid costs queries, never ingestion. Answers
are cached per question on what a point changes for it: the retrieval fields, and for the
context the number of memories recalled and the diversity (`context_breadth`), so a list lever
costs only the list questions. ``ablations`` re-runs the selection with a lever held off.
"""

from __future__ import annotations

import functools
import itertools
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from _baselines import BASELINES, VectorCache, make_rankers, pack_lines
from _locomo import CATEGORIES, Conversation, recall_fraction

from shared_core import AtlasConfig, ElasticMemoryAtlas, ManualClock, TiktokenCounter
from shared_core.engine.context import context_breadth

__all__ = ["FUSION_FINE_GRID", "FUSION_GRID", "FUSION_SCALE_GRID", "GRID", "GRIDS", "LEVERS", "NEIGHBOUR_GRID",
           "OBJECTIVE", "SEED_GRID", "SPEAKER_GRID", "SPEAKER_LEVERS", "CVScores", "ablations", "cv_tables", "run_grid"]

#: field -> the values tried, the shipped preset first (it wins ties)
GRID: tuple[tuple[str, tuple[Any, ...]], ...] = (
    ("relevance_floor", (0.1, 0.2)),
    ("feedback_weight", (0.5, 0.0, 0.25)),
    ("feedback_docs", (5, 3)),
    ("list_diversity", (0.0, 0.3)),
    ("list_candidates", (1.0, 1.5)),
)
#: context windows (`shared_core.engine.neighbours`): the longest neighbour that comes along, in
#: tokens; the other fields at the presets (`--grid neighbours`)
NEIGHBOUR_GRID: tuple[tuple[str, tuple[Any, ...]], ...] = (
    ("context_neighbours", (12, 0, 20, 30)),
)
#: the speaker path's own small grid (``--grid speaker``), every other field at the presets
SPEAKER_GRID: tuple[tuple[str, tuple[Any, ...]], ...] = (
    ("speaker_weight", (1.0, 0.0, 0.5, 2.0)),
)
#: the speaker path's weight for list and count questions, times ``speaker_weight`` (``--grid speaker_lists``)
SPEAKER_LIST_GRID: tuple[tuple[str, tuple[Any, ...]], ...] = (
    ("speaker_list_factor", (3.0, 1.0, 2.0)),
)
#: the same past the preset, which was the first grid's edge (``--grid speaker_lists_wide``)
SPEAKER_LIST_WIDE_GRID: tuple[tuple[str, tuple[Any, ...]], ...] = (
    ("speaker_list_factor", (3.0, 1.0, 2.0, 4.0, 6.0)),
)
#: the walk's seeds (`shared_core.engine.recall.breadth`): ``min(graph_seeds, ceil(seed_ratio * wanted))``;
#: ``graph_seeds`` binds only where ``seed_ratio * wanted`` reaches it (``--grid seeds``)
SEED_GRID: tuple[tuple[str, tuple[Any, ...]], ...] = (
    ("seed_ratio", (2.0, 1.0, 4.0)),
    ("graph_seeds", (100, 200)),
)
#: the convex fusion's weights (`shared_core.formulas._fusion.fuse`, `shared_core.engine.recall`; ``--grid
#: fusion``): fusion divides by the sum of the weights, so only ratios count and ``vector_weight`` stays at 0.5;
#: ``keyword_weight`` sets the keyword:vector ratio, ``time_weight`` the time path's share, ``graph_weight`` the
#: walk's boost against the fused relevance. ``recent_weight``, ``weight_exponent`` and ``recency_exponent`` are
#: 0 in `AtlasConfig.archive` and the recent path needs a ``session_id`` that no LoCoMo query has: not here
FUSION_GRID: tuple[tuple[str, tuple[Any, ...]], ...] = (
    ("keyword_weight", (0.5, 0.35, 0.7)),
    ("graph_weight", (1.0, 0.7, 1.4)),
    ("time_weight", (0.5, 0.25, 1.0)),
)
#: the second pass, nearer the presets (``--grid fusion_fine``), with the walk's decay per hop
FUSION_FINE_GRID: tuple[tuple[str, tuple[Any, ...]], ...] = (
    ("keyword_weight", (0.5, 0.45, 0.55)),
    ("graph_weight", (1.0, 0.85, 1.15)),
    ("graph_hop_decay", (0.45, 0.4, 0.5)),
)
#: the base paths' weights against the others' (``--grid fusion_scale``): ``vector_weight`` and ``keyword_weight``
#: scaled together (the diagonal) move the feedback, speaker and time paths' shares the other way
FUSION_SCALE_GRID: tuple[tuple[str, tuple[Any, ...]], ...] = (
    ("vector_weight", (0.5, 0.35, 0.7)),
    ("keyword_weight", (0.5, 0.35, 0.7)),
)
#: the fields that change the ranking itself (the rest change only the context's packing)
RETRIEVAL_FIELDS = ("relevance_floor", "feedback_weight", "feedback_docs", "speaker_weight", "speaker_docs",
                    "speaker_list_factor", "seed_ratio", "graph_seeds", "vector_weight", "keyword_weight",
                    "graph_weight", "time_weight", "recent_weight", "graph_hop_decay", "weight_exponent",
                    "recency_exponent")
#: packing fields that a context's cache key must hold (the list levers' are in `context_breadth`)
CONTEXT_FIELDS = ("context_neighbours",)
#: field -> (the field that switches it off, that field's off value): answers are cached alike
#: whatever the field's value while the lever is off
INERT_WHEN = {"feedback_docs": ("feedback_weight", 0.0), "speaker_docs": ("speaker_weight", 0.0),
              "speaker_list_factor": ("speaker_weight", 0.0)}
#: the objective a point is chosen by: the mean over the fold's questions of these metrics
OBJECTIVE = ("R@1000tok", "R@2000tok")
#: lever -> the grid restricted to it held off (for the ablation rows)
LEVERS: dict[str, dict[str, tuple[Any, ...]]] = {
    "pseudo-relevance feedback (feedback_weight=0)": {"feedback_weight": (0.0,)},
    "feedback from 3 documents (feedback_docs=5)": {"feedback_docs": (5,)},
    "list/count analysis (list_diversity=0, list_candidates=1)": {"list_diversity": (0.0,), "list_candidates": (1.0,)},
    "MMR diversity for lists (list_diversity=0)": {"list_diversity": (0.0,)},
    "wider pool for lists (list_candidates=1)": {"list_candidates": (1.0,)},
    "relevance floor 0.2 (relevance_floor=0.1)": {"relevance_floor": (0.1,)},
}
NEIGHBOUR_LEVERS: dict[str, dict[str, tuple[Any, ...]]] = {
    "context windows (context_neighbours=0)": {"context_neighbours": (0,)},
}
SPEAKER_LEVERS: dict[str, dict[str, tuple[Any, ...]]] = {
    "the speaker path (speaker_weight=0)": {"speaker_weight": (0.0,)},
    "a weight chosen per fold (speaker_weight held at 1.0)": {"speaker_weight": (1.0,)},
}
SPEAKER_LIST_LEVERS: dict[str, dict[str, tuple[Any, ...]]] = {
    "the speaker path's list factor (speaker_list_factor=1)": {"speaker_list_factor": (1.0,)},
}
SEED_LEVERS: dict[str, dict[str, tuple[Any, ...]]] = {
    "more seeds than asked for (seed_ratio=1)": {"seed_ratio": (1.0,)},
    "up to 200 seeds (graph_seeds=100)": {"graph_seeds": (100,)},
}
#: the fusion's fields and what a lever row calls them; each is held at its preset (no "off" value)
_FUSION_FIELDS = {"vector_weight": "a vector weight", "keyword_weight": "a keyword weight",
                  "graph_weight": "a graph weight", "time_weight": "a time weight", "graph_hop_decay": "a hop decay"}
_FUSION_PRESETS = {f: (getattr(AtlasConfig.archive(), f),) for f in _FUSION_FIELDS}
FUSION_LEVERS: dict[str, dict[str, tuple[Any, ...]]] = {
    f"{name} chosen per fold ({f} held at {_FUSION_PRESETS[f][0]})": {f: _FUSION_PRESETS[f]}
    for f, name in _FUSION_FIELDS.items()
}
#: ``--grid`` name -> (grid, levers)
GRIDS = {"full": (GRID, LEVERS), "speaker": (SPEAKER_GRID, SPEAKER_LEVERS),
         "neighbours": (NEIGHBOUR_GRID, NEIGHBOUR_LEVERS), "speaker_lists": (SPEAKER_LIST_GRID, SPEAKER_LIST_LEVERS),
         "speaker_lists_wide": (SPEAKER_LIST_WIDE_GRID, SPEAKER_LIST_LEVERS),
         "seeds": (SEED_GRID, SEED_LEVERS), "fusion": (FUSION_GRID, FUSION_LEVERS),
         "fusion_fine": (FUSION_FINE_GRID, FUSION_LEVERS), "fusion_scale": (FUSION_SCALE_GRID, FUSION_LEVERS)}
#: a lever's off value, for the "every lever off" row (a fusion weight's: the preset's, so the row is the presets')
_OFF = {"feedback_weight": (0.0,), "feedback_docs": (5,), "list_diversity": (0.0,), "list_candidates": (1.0,),
        "relevance_floor": (0.1,), "speaker_weight": (0.0,), "context_neighbours": (0,),
        "speaker_list_factor": (1.0,), "seed_ratio": (1.0,), "graph_seeds": (100,), **_FUSION_PRESETS}
METRICS = ("R@5", "R@10", "R@20", "R@1000tok", "R@2000tok")
BUDGETS = (1000, 2000)
KS = (5, 10, 20)


@dataclass
class CVScores:
    """Per grid point and conversation, each question's (category, {metric: recall})."""

    points: list[dict[str, Any]]
    grid: tuple[tuple[str, tuple[Any, ...]], ...] = GRID
    atlas: dict[int, dict[str, list[tuple[int, dict[str, float]]]]] = field(
        default_factory=lambda: defaultdict(dict))
    baselines: dict[str, dict[str, list[tuple[int, dict[str, float]]]]] = field(
        default_factory=lambda: defaultdict(dict))
    over_budget: int = 0


def grid_points(grid: Sequence[tuple[str, tuple[Any, ...]]] | None = None) -> list[dict[str, Any]]:
    """Every combination of the grid's values, the presets' combination first."""
    grid = GRID if grid is None else grid
    names = [n for n, _ in grid]
    return [dict(zip(names, values, strict=True)) for values in itertools.product(*(v for _, v in grid))]


def run_grid(conversations: Sequence[Conversation], *, base: AtlasConfig, cache: VectorCache, embedder: Any,
             now: float, progress: Any = None, grid: tuple[tuple[str, tuple[Any, ...]], ...] = GRID,
             points: Sequence[dict[str, Any]] | None = None) -> CVScores:
    """Score every grid point (and the baselines) on every question of every conversation;
    ``points``: these points instead of the grid's product (a diagnosis's chosen few)."""
    from locomo_recall import _CachedEmbedder, in_full, ingest

    points = grid_points(grid) if points is None else [dict(p) for p in points]
    scores = CVScores(points, grid)
    counter = TiktokenCounter()
    count = functools.lru_cache(maxsize=None)(counter.count)
    for conv in conversations:
        atlas = ElasticMemoryAtlas(config=base, embedder=_CachedEmbedder(cache), token_counter=counter,
                                   clock=ManualClock(now))
        dia_of = ingest(atlas, conv, cache)
        vectors = cache.embed([t.content for t in conv.turns])
        rankers = make_rankers(conv, vectors, cache, names=BASELINES)
        lines = [t.dated for t in conv.turns]
        for name, rank in rankers.items():
            rows = []
            for q in conv.questions:
                ranking = rank(q.question, cache.embed([q.question])[0])
                dias = [conv.turns[i].dia_id for i in ranking]
                row = {f"R@{k}": recall_fraction(q.evidence, dias[:k]) for k in KS}
                for b in BUDGETS:
                    row[f"R@{b}tok"] = recall_fraction(
                        q.evidence, [conv.turns[i].dia_id for i in pack_lines(ranking, lines, b, count)])
                rows.append((q.category, row))
            scores.baselines[name][conv.sample_id] = rows
        retrieved: dict[tuple[Any, ...], dict[str, float]] = {}
        contexts: dict[tuple[Any, ...], float] = {}
        for index, point in enumerate(points):
            config = base.replace(**point)
            view = ElasticMemoryAtlas(config=config, embedder=_CachedEmbedder(cache), token_counter=counter,
                                      clock=ManualClock(now), backend=atlas.backend)
            key = _cache_key(point)
            rows = []
            for qi, q in enumerate(conv.questions):
                rkey = (*key, qi)
                if rkey not in retrieved:
                    hits = view.retrieve(q.question, namespace=conv.sample_id, top_k=max(KS), reinforce=False)
                    found = [dia_of[h.node.id] for h in hits]
                    retrieved[rkey] = {f"R@{k}": recall_fraction(q.evidence, found[:k]) for k in KS}
                row = dict(retrieved[rkey])
                for b in BUDGETS:
                    ckey = (*key, *(point.get(f) for f in CONTEXT_FIELDS), qi, b,
                            *context_breadth(q.question, b, config))
                    if ckey not in contexts:
                        ctx = view.build_context(q.question, namespace=conv.sample_id, token_budget=b,
                                                 style="timeline", reinforce=False)
                        scores.over_budget += ctx.tokens > b
                        # shown whole, as `locomo_recall.py` counts it (a message after one of its
                        # speaker is shown without the label)
                        contexts[ckey] = recall_fraction(q.evidence, in_full(ctx, dia_of))
                    row[f"R@{b}tok"] = contexts[ckey]
                rows.append((q.category, row))
            scores.atlas[index][conv.sample_id] = rows
            if progress is not None:
                progress.update(1)
    return scores


def _cache_key(point: dict[str, Any]) -> tuple[Any, ...]:
    """The retrieval fields' values, a field `INERT_WHEN` its lever is off counted as None."""
    return tuple(None if f in INERT_WHEN and point.get(INERT_WHEN[f][0]) == INERT_WHEN[f][1] else point.get(f)
                 for f in RETRIEVAL_FIELDS)


def _mean(rows: Iterable[tuple[int, dict[str, float]]], metric: str, category: int | None = None) -> float:
    values = [r[metric] for c, r in rows if category in (None, c)]
    return float(np.mean(values)) if values else float("nan")


def _objective(scores: CVScores, index: int, convs: Sequence[str]) -> float:
    rows = [r for c in convs for r in scores.atlas[index][c]]
    return float(np.mean([_mean(rows, m) for m in OBJECTIVE]))


def choose(scores: CVScores, convs: Sequence[str], allowed: Sequence[int] | None = None) -> int:
    """The grid point with the best objective on ``convs`` (ties: the earlier point)."""
    candidates = range(len(scores.points)) if allowed is None else allowed
    return max(candidates, key=lambda i: (_objective(scores, i, convs), -i))


def _restricted(scores: CVScores, hold: dict[str, tuple[Any, ...]]) -> list[int]:
    return [i for i, p in enumerate(scores.points) if all(p[f] in v for f, v in hold.items())]


def select(scores: CVScores, hold: dict[str, tuple[Any, ...]] | None = None
           ) -> tuple[int, list[tuple[int, dict[str, float]]], dict[str, int]]:
    """(the fitted point, the cross-validated rows, conversation -> the point chosen without it)."""
    allowed = _restricted(scores, hold or {})
    convs = list(scores.atlas[0])
    fitted = choose(scores, convs, allowed)
    rows: list[tuple[int, dict[str, float]]] = []
    chosen = {}
    for held in convs:
        best = choose(scores, [c for c in convs if c != held], allowed)
        chosen[held] = best
        rows += scores.atlas[best][held]
    return fitted, rows, chosen


def _row(label: str, rows: Sequence[tuple[int, dict[str, float]]]) -> str:
    cells = [_mean(rows, m) for m in METRICS] + [_mean(rows, "R@2000tok", c) for c in CATEGORIES]
    return f"| {label} | " + " | ".join(f"{v:.3f}" for v in cells) + " |"


def _head() -> list[str]:
    cols = ["R@5", "R@10", "R@20", "R@1000 tok", "R@2000 tok"] + [f"{n} R@2000" for n in CATEGORIES.values()]
    return ["| method | " + " | ".join(cols) + " |", "|---|" + "---:|" * len(cols)]


def _point(p: dict[str, Any], base: dict[str, Any] | None = None) -> str:
    return ", ".join(f"{k}={v}" for k, v in p.items() if base is None or base.get(k) != v) or "presets"


def cv_tables(scores: CVScores) -> str:
    """The fitted and the cross-validated tables, the points chosen, and the baselines."""
    convs = list(scores.atlas[0])
    fitted, rows, chosen = select(scores)
    every = [r for c in convs for r in scores.atlas[fitted][c]]
    preset = [r for c in convs for r in scores.atlas[0][c]]
    out = [f"Grid: {len(scores.points)} points, " + "; ".join(f"{n} in {v}" for n, v in scores.grid)
           + f". Objective: mean of {' and '.join(OBJECTIVE)}.", "",
           f"Fitted on all {len(convs)} conversations: {_point(scores.points[fitted])}.", ""]
    out += [f"- {c} held out: chosen on the other {len(convs) - 1}: {_point(scores.points[i])}"
            for c, i in chosen.items()]
    out += ["", f"### Fitted and cross-validated ({len(every)} questions; per category: R@2000 tok)", ""]
    out += _head()
    out.append(_row("**Elastic Atlas**, shipped presets (first grid point)", preset))
    out.append(_row("**Elastic Atlas**, fitted (chosen on all 5)", every))
    out.append(_row("**Elastic Atlas**, cross-validated (chosen without the scored one)", rows))
    for name, by_conv in scores.baselines.items():
        out.append(_row(name, [r for c in convs for r in by_conv[c]]))
    out.append(f"\nContexts over budget: {scores.over_budget}.")
    if len(scores.points) <= 30:  # a small grid: every point on all conversations (fitted, not held out)
        out += ["", "### Every point on all conversations (fitted)", "", *_head()]
        out += [_row(_point(p), [r for c in convs for r in scores.atlas[i][c]]) for i, p in enumerate(scores.points)]
    return "\n".join(out)


def ablations(scores: CVScores, levers: dict[str, dict[str, tuple[Any, ...]]] | None = None) -> str:
    """One cross-validated row per lever held off (the others still chosen by the folds)."""
    out = ["### Ablations (cross-validated; each lever held off, the others still chosen per fold)", ""]
    out += _head()
    out.append(_row("every lever chosen per fold", select(scores)[1]))
    levers = LEVERS if levers is None else levers
    fields = {name for name, _ in scores.grid}
    levers = {lever: hold for lever, hold in levers.items() if set(hold) <= fields}  # the grid's levers
    for lever, hold in levers.items():
        out.append(_row(f"without {lever}", select(scores, hold)[1]))
    off = {name: _OFF[name] for hold in levers.values() for name in hold if name in _OFF}
    out.append(_row("every lever off", select(scores, off)[1]))
    return "\n".join(out)
