"""Multi-path recall: vector, keyword, graph, recent and time paths, fused and ranked.

`recall` runs inside one namespace's `Partition` only. The steps:

1. **vector**: cosine of the query embedding (top ``candidate_k``);
2. **keyword**: BM25 over the memory text (top ``candidate_k``);
3. **time**: if the query names a time ("last week", "in May"), memories in that range,
   ranked by cosine;
4. **recent**: the latest ``recency_window`` memories of the current session;
5. **graph**: spreading activation from the best ``graph_seeds`` of the paths above;
6. weighted reciprocal rank fusion of all paths gives a relevance in [0, 1];
7. rank by relevance x weight x recency (or the linear preset), session penalty applied.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .backend import Partition
from .config import AtlasConfig
from .decay import decayed_weight, recency_score, rich_weight
from .filters import Predicate
from .model import MemoryNode, ScoredMemory
from .scoring import linear_score, multiplicative_score, normalize_relevance, weighted_rrf
from .timecues import parse_time_cue

__all__ = ["RecallRequest", "effective_weight", "recall", "spread_activation"]


def spread_activation(seeds: Mapping[str, float],
                      neighbors: Callable[[str], Iterable[tuple[str, float]]], *,
                      hops: int = 2, decay: float = 0.5, fanout: int = 16) -> dict[str, float]:
    """Spreading activation from seed nodes along weighted edges, bounded in hops and fan-out.

    ``a_0 = seeds``; at each hop every active node ``n`` passes
    ``a_h(n) * strength(n, m) * decay`` to each of its ``fanout`` strongest neighbours ``m``,
    and a node's activation is the sum of what reaches it over all hops. Seeds are left out of
    the result: the paths that found them rank them. Hand-written: networkx offers personalised
    PageRank, which walks the whole graph per query; this touches at most ``seeds * fanout ** hops`` edges.

    >>> edges = {"a": [("b", 1.0)], "b": [("a", 1.0), ("c", 1.0)], "c": [("b", 1.0)]}
    >>> spread_activation({"a": 1.0}, lambda n: edges[n], hops=2, decay=0.5)
    {'b': 0.5, 'c': 0.25}
    """
    total: dict[str, float] = {}
    frontier = {node: act for node, act in seeds.items() if act > 0}
    for _ in range(hops):
        nxt: dict[str, float] = {}
        for node, act in frontier.items():
            edges = list(neighbors(node))
            if len(edges) > fanout:
                edges = heapq.nlargest(fanout, edges, key=lambda e: e[1])
            for other, strength in edges:
                if other == node:
                    continue
                passed = act * strength * decay
                if passed > 0:
                    nxt[other] = nxt.get(other, 0.0) + passed
        for node, act in nxt.items():
            total[node] = total.get(node, 0.0) + act
        frontier = nxt
    for seed in seeds:  # seeds are ranked by the paths that found them
        total.pop(seed, None)
    return total


def effective_weight(node: MemoryNode, *, now: float, turn: int, config: AtlasConfig,
                     association: float = 0.0) -> float:
    """A memory's weight now, decayed lazily from its last access (see `shared_core.decay`)."""
    elapsed = float(turn - node.turn) if config.decay_unit == "turns" else now - node.last_accessed_at
    if node.pinned:
        elapsed = 0.0
    if config.weight_model == "rich":
        return rich_weight(node.importance, node.access_count, elapsed, half_life=config.half_life,
                           association=association, floor=config.weight_floor, cap=config.weight_cap)
    return decayed_weight(node.weight, elapsed, half_life=config.half_life, floor=config.weight_floor)


@dataclass(frozen=True, slots=True, kw_only=True)
class RecallRequest:
    query: str
    vector: npt.NDArray[np.float32]
    now: float
    session_id: str | None = None
    top_k: int = 5
    predicate: Predicate | None = None
    include_history: bool = False
    cross_session: bool = False
    explain: bool = False
    candidate_k: int | None = None


def recall(part: Partition, req: RecallRequest, config: AtlasConfig) -> list[ScoredMemory]:
    """Run every path over one partition and return the ranked hits (best first)."""
    graph = part.graph
    k = max(req.candidate_k or config.candidate_k, req.top_k)
    limited = req.session_id is not None and not req.cross_session

    def admissible(node: MemoryNode | None) -> bool:
        if node is None:
            return False
        if limited and node.session_id != req.session_id:
            return False
        if not req.include_history and (node.id in part.inactive or not node.is_current(req.now)):
            return False
        return req.predicate is None or req.predicate(node)

    # A candidate subset is computed only when the scope is narrow or a filter asks for it; the
    # unfiltered namespace-wide path never loops over every memory in Python.
    subset: set[str] | None = None
    if limited:
        subset = set(part.sessions.get(req.session_id, ()))
    if req.predicate is not None:
        pool = subset if subset is not None else (n.id for n in graph.nodes())
        subset = {i for i in pool if admissible(graph.get_node(i))}
    elif subset is not None and not req.include_history:
        subset -= part.inactive
    if subset is not None and not subset:
        return []

    overfetch = k if req.include_history or subset is not None else k + min(len(part.inactive), 4 * k)
    rankings: dict[str, list[str]] = {}
    signal: dict[str, dict[str, float]] = {}

    def keep(pairs: Iterable[tuple[str, float]], path: str, limit: int) -> None:
        ranked: list[str] = []
        values: dict[str, float] = {}
        for node_id, value in pairs:
            if subset is None and not admissible(graph.get_node(node_id)):
                continue
            ranked.append(node_id)
            values[node_id] = value
            if len(ranked) == limit:
                break
        rankings[path] = ranked
        signal[path] = values

    keep(part.vectors.search(req.vector, overfetch, subset=subset), "vector", k)
    kw = part.keywords.search(req.query, overfetch, session_id=req.session_id if limited else None,
                              subset=subset)
    keep(kw, "keyword", k)

    cue = parse_time_cue(req.query, now=req.now)
    if cue is not None:
        in_range = part.between(cue.start, cue.end)
        in_range = [i for i in in_range if admissible(graph.get_node(i))] if len(in_range) <= 20_000 \
            else in_range
        if in_range:
            sims = part.vectors.similarities(req.vector, in_range)
            order = np.argsort(-sims, kind="stable")[:k]
            keep(((in_range[int(j)], 1.0) for j in order), "time", k)

    if req.session_id is not None and config.recency_window > 0:
        latest = part.latest(req.session_id, config.recency_window + 8)
        keep(((i, 1.0 / (r + 1)) for r, i in enumerate(latest)), "recent", config.recency_window)

    weights = {"vector": config.vector_weight, "keyword": config.keyword_weight,
               "time": config.time_weight, "recent": config.recent_weight,
               "graph": config.graph_weight}
    if config.graph_hops > 0 and config.graph_weight > 0 and config.graph_seeds > 0:
        base = weighted_rrf(rankings, weights, k=config.rrf_k)
        seeds = heapq.nlargest(config.graph_seeds, base.items(), key=lambda kv: kv[1])
        seed_act = {i: normalize_relevance(v, {p: weights[p] for p in rankings}, k=config.rrf_k)
                    for i, v in seeds}
        act = spread_activation(seed_act, graph.neighbors, hops=config.graph_hops,
                                decay=config.graph_hop_decay, fanout=config.graph_fanout)
        top_act = heapq.nlargest(4 * k, act.items(), key=lambda kv: kv[1])
        keep((kv for kv in top_act if subset is None or kv[0] in subset), "graph", k)

    fused = weighted_rrf(rankings, weights, k=config.rrf_k)
    active = {p: weights[p] for p in rankings if rankings[p]}
    ids = list(fused)
    cosines = part.vectors.similarities(req.vector, ids) if ids else np.zeros(0, dtype=np.float32)
    hits: list[ScoredMemory] = []
    for node_id, cos in zip(ids, cosines, strict=True):
        node = graph.get_node(node_id)
        if node is None or not admissible(node):
            continue
        relevance = normalize_relevance(fused[node_id], active, k=config.rrf_k)
        association = _association(part, node_id, req.now, config) if config.weight_model == "rich" else 0.0
        weight = effective_weight(node, now=req.now, turn=part.turn, config=config, association=association)
        recency = recency_score(req.now - node.timestamp, half_life=config.recency_half_life)
        other = req.session_id is not None and node.session_id != req.session_id
        session_factor = config.cross_session_penalty if other else 1.0
        if config.scoring == "linear":
            score = linear_score(relevance, weight, recency, cap=config.weight_cap,
                                 weights=config.linear_weights, session_factor=session_factor)
        else:
            score = multiplicative_score(relevance, weight, recency,
                                         weight_exponent=config.weight_exponent,
                                         recency_exponent=config.recency_exponent,
                                         session_factor=session_factor)
        paths = tuple(p for p in rankings if node_id in signal[p])
        components = {"relevance": relevance, "weight": weight, "recency": recency,
                      "session": session_factor, "vector": float(cos)}
        for p in paths:
            if p != "vector":
                components[p] = signal[p][node_id]
        if req.explain:
            for p in paths:
                components[f"rank_{p}"] = float(rankings[p].index(node_id) + 1)
            components["fused"] = fused[node_id]
        components["score"] = score
        if math.isfinite(score):
            hits.append(ScoredMemory(node, score, components, paths, other))
    hits.sort(key=lambda h: (-h.score, -h.node.timestamp, h.node.id))
    return hits[: req.top_k]


def _association(part: Partition, node_id: str, now: float, config: AtlasConfig) -> float:
    """Mean stored weight of strongly linked neighbours, scaled to [0, 1] by the cap."""
    strong = [(other, s) for other, s in part.graph.neighbors(node_id) if s >= 0.5][:16]
    weights = [n.weight for other, _ in strong if (n := part.graph.get_node(other)) is not None]
    return 0.0 if not weights else min(1.0, sum(weights) / len(weights) / config.weight_cap)
