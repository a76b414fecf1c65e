"""Fusion and ranking of retrieval candidates, as pure functions.

The atlas gathers candidates along several paths (vector, keyword, time, recent), fuses their
signals into a *relevance* in [0, 1] (a calibrated weighted sum by default, reciprocal rank fusion
as a preset), lets relevance flow along the graph's edges (`spread_max`), then ranks by the
design card's score, relevance x weight x recency (or the seed's linear form).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

__all__ = [
    "convex_fusion",
    "linear_score",
    "max_normalize",
    "multiplicative_score",
    "normalize_relevance",
    "pool_normalize",
    "scale_to",
    "spread_max",
    "step_over",
    "weighted_rrf",
]


def weighted_rrf(rankings: Mapping[str, Sequence[str]], weights: Mapping[str, float], *,
                 k: float = 60.0) -> dict[str, float]:
    """Weighted reciprocal rank fusion.

    ``fused(d) = sum over paths p containing d of  weights[p] / (k + rank_p(d))`` with ranks
    starting at 1; a document found by several paths accumulates, duplicates within one path
    count once (at their best rank).

    >>> fused = weighted_rrf({"a": ["x", "y"], "b": ["y"]}, {"a": 1.0, "b": 1.0}, k=1.0)
    >>> sorted(fused.items())
    [('x', 0.5), ('y', 0.8333333333333333)]
    """
    fused: dict[str, float] = {}
    for path, ranking in rankings.items():
        w = weights.get(path, 0.0)
        if w <= 0:
            continue
        seen: set[str] = set()
        rank = 0
        for doc in ranking:
            if doc in seen:
                continue
            seen.add(doc)
            rank += 1
            fused[doc] = fused.get(doc, 0.0) + w / (k + rank)
    return fused


def normalize_relevance(fused: float, weights: Mapping[str, float], *, k: float = 60.0) -> float:
    """Map a fused RRF value into [0, 1]: divide by the best possible value.

    The best possible value is a document ranked first by every path:
    ``sum(weights) / (k + 1)``.

    >>> normalize_relevance(2 / 61, {"a": 1.0, "b": 1.0}, k=60.0)
    1.0
    """
    best = sum(w for w in weights.values() if w > 0) / (k + 1.0)
    return 0.0 if best <= 0 else min(1.0, fused / best)


def pool_normalize(values: Mapping[str, float], *, floor: float | None = None) -> dict[str, float]:
    """Scale similarities to [0, 1] within a candidate pool: ``(s - floor) / (best - floor)``.

    ``floor`` defaults to the pool's lowest value (the k-th best of a top-k search), so the scale
    means "how close to the best candidate" whatever the embedder's cosine range is (MiniLM's
    cosines sit around 0.1-0.7, other models' around 0.7-0.9). Values below the floor count 0.

    >>> pool_normalize({"a": 0.75, "b": 0.5, "c": 0.25})
    {'a': 1.0, 'b': 0.5, 'c': 0.0}
    >>> pool_normalize({"a": 0.8, "b": 0.1}, floor=0.2)
    {'a': 1.0, 'b': 0.0}
    """
    if not values:
        return {}
    best = max(values.values())
    low = min(values.values()) if floor is None else floor
    if best <= low:
        return {key: 1.0 if value >= best else 0.0 for key, value in values.items()}
    span = best - low
    return {key: max(0.0, (value - low) / span) for key, value in values.items()}


def scale_to(value: float, floor: float, best: float) -> float:
    """One similarity on a pool's scale: ``(value - floor) / (best - floor)`` clipped to [0, 1]
    (when the pool has no spread, 1 at or above ``best`` and 0 below), the same scale
    `pool_normalize` gives the pool's own members.

    >>> scale_to(0.5, 0.25, 0.75), scale_to(0.1, 0.25, 0.75), scale_to(0.9, 0.25, 0.75)
    (0.5, 0.0, 1.0)
    """
    if best <= floor:
        return 1.0 if value >= best else 0.0
    return min(1.0, max(0.0, (value - floor) / (best - floor)))


def max_normalize(values: Mapping[str, float]) -> dict[str, float]:
    """Divide non-negative scores (such as BM25) by the best one: ``s / max(s)``.

    >>> max_normalize({"a": 4.0, "b": 1.0})
    {'a': 1.0, 'b': 0.25}
    """
    best = max(values.values(), default=0.0)
    if best <= 0:
        return dict.fromkeys(values, 0.0)
    return {key: max(0.0, value) / best for key, value in values.items()}


def convex_fusion(signals: Mapping[str, Mapping[str, float]],
                  weights: Mapping[str, float]) -> dict[str, float]:
    """Calibrated fusion: ``relevance(d) = sum_p w_p * s_p(d) / sum_p w_p`` over the paths p that
    produced a signal for this query, each ``s_p`` already scaled to [0, 1] (a path that did not
    find ``d`` gives it 0).

    Unlike rank fusion it keeps the margins: a memory far ahead on one path stays ahead (Bruch et
    al., "An Analysis of Fusion Functions for Hybrid Retrieval", TOIS 2023, found a convex
    combination of normalised scores at least as good as RRF and more sample-efficient to tune).

    >>> convex_fusion({"vector": {"x": 1.0, "y": 0.5}, "keyword": {"y": 1.0}},
    ...               {"vector": 0.6, "keyword": 0.4})
    {'x': 0.6, 'y': 0.7}
    """
    active = {p: weights.get(p, 0.0) for p, s in signals.items() if s and weights.get(p, 0.0) > 0}
    total = sum(active.values())
    fused: dict[str, float] = {}
    if total <= 0:
        return fused
    for path, w in active.items():
        share = w / total
        for doc, value in signals[path].items():
            fused[doc] = fused.get(doc, 0.0) + share * value
    return {doc: round(value, 12) for doc, value in fused.items()}


def spread_max(scores: Mapping[str, float],
               neighbors: Callable[[str], Iterable[tuple[str, float]]], *,
               hops: int = 2, decay: float = 0.5, fanout: int = 16,
               min_activation: float = 0.0, beam: int | None = None,
               walkable: Callable[[str], bool] | None = None) -> dict[str, float]:
    """Relevance flowing along edges: what each node receives from its best neighbour per hop.

    ``a_1(m) = max over edges (n, m) of  decay * strength(n, m) * s(n)`` and
    ``a_h(m) = max over edges (n, m) of  decay * strength(n, m) * a_{h-1}(n)``; the boost of a
    node is ``sum_h a_h``. Taking the *best* neighbour (not the sum) keeps a dense cluster of
    weak matches from outranking one strong match; a walk never steps back to the node it came
    from nor to its seed, so no node is boosted by its own score. ``neighbors(n)`` gives
    ``(m, strength)`` pairs, already weighted by relation; at most ``fanout`` strongest are
    followed per node, and activations at or below ``min_activation`` are not passed on. With
    ``beam``, only the ``beam`` most activated nodes of a hop walk on (all of them are boosted),
    so a walk touches at most ``(len(scores) + (hops - 1) * beam) * fanout`` edges. A node for
    which ``walkable`` is false passes nothing on (it is asked only of the nodes that would walk
    on, most activated first, so a beam costs ``beam``-odd calls, not one per node reached).
    Hand-written: networkx's personalised PageRank walks the whole graph per query, this touches
    at most ``len(scores) * fanout ** hops`` edges.

    >>> chain = {"a": [("b", 1.0)], "b": [("a", 1.0), ("c", 1.0)], "c": [("b", 1.0)]}
    >>> spread_max({"a": 1.0}, lambda n: chain[n], hops=2, decay=0.5)
    {'b': 0.5, 'c': 0.25}
    >>> spread_max({"a": 1.0, "b": 0.8}, lambda n: chain[n], hops=1, decay=0.5)
    {'b': 0.5, 'a': 0.4, 'c': 0.4}
    >>> star = {"s": [("x", 1.0), ("y", 0.5)], "x": [("s", 1.0), ("u", 1.0)], "y": [("s", 1.0), ("v", 1.0)]}
    >>> spread_max({"s": 1.0}, lambda n: star[n], hops=2, decay=0.5, beam=1)  # only x walks on
    {'x': 0.5, 'y': 0.25, 'u': 0.25}
    """
    boost: dict[str, float] = {}
    # node -> (activation, the seed it started from, the node it came from)
    frontier = {node: (s, node, node) for node, s in scores.items() if s > min_activation}
    for hop in range(hops):
        nxt: dict[str, tuple[float, str, str]] = {}
        reached = nxt.get
        for node, (act, origin, came_from) in frontier.items():
            edges = neighbors(node)
            if not isinstance(edges, list):
                edges = list(edges)
            if len(edges) > fanout:  # ties go to the smaller id, whatever the edges' order
                edges = [(other, -neg) for neg, other in sorted([(-w, other) for other, w in edges])[:fanout]]
            for other, strength in edges:
                if other in (node, origin, came_from):  # no walking back
                    continue
                passed = act * strength * decay
                if passed > min_activation:
                    held = reached(other)
                    if passed > (0.0 if held is None else held[0]):
                        nxt[other] = (passed, origin, node)
        for node, (act, _, _) in nxt.items():
            boost[node] = boost.get(node, 0.0) + act
        if hop == hops - 1:
            break
        if beam is not None and (len(nxt) > beam or walkable is not None):
            frontier = {}
            for _, node in sorted([(-value[0], node) for node, value in nxt.items()]):  # best first, ties
                if walkable is None or walkable(node):  # to the smaller id
                    frontier[node] = nxt[node]
                    if len(frontier) == beam:
                        break
        else:
            frontier = nxt if walkable is None else {n: v for n, v in nxt.items() if walkable(n)}
    return boost


def step_over(neighbors: Callable[[str], Iterable[tuple[str, float]]], transparent: Callable[[str], bool]
              ) -> Callable[[str], list[tuple[str, float]]]:
    """``neighbors`` with each edge to a ``transparent`` node replaced by that node's own edges:
    the walk steps over it, the two strengths multiplied, no hop spent.

    For node ``n``: an edge ``(m, w)`` to an opaque ``m`` stays as it is; an edge to a transparent
    ``m`` becomes ``(f, w * w2)`` for each edge ``(f, w2)`` of ``m`` whose ``f`` is neither ``n``
    nor transparent (a second transparent node in a row ends the step), in ``m``'s order. Nothing
    else changes: a node without a transparent neighbour keeps its edges, and a node reached twice
    is reached as by two edges (`spread_max` passes the better one; each counts towards
    ``fanout``). Recall's walk steps over a backchannel so that "Kate: I went hiking" -> "Sam:
    lol" -> "Kate: the view was great" is one step (`shared_core.engine.walk`).

    >>> edges = {"a": [("lol", 1.0), ("c", 0.2)], "lol": [("a", 1.0), ("b", 0.5), ("ok", 1.0)],
    ...          "ok": [("lol", 1.0), ("d", 1.0)]}
    >>> step_over(edges.__getitem__, {"lol", "ok"}.__contains__)("a")
    [('b', 0.5), ('c', 0.2)]
    """
    def through(node_id: str) -> list[tuple[str, float]]:
        out: list[tuple[str, float]] = []
        for other, w in neighbors(node_id):
            if transparent(other):
                out.extend((far, w * w2) for far, w2 in neighbors(other) if far != node_id and not transparent(far))
            else:
                out.append((other, w))
        return out

    return through


class _Desc(str):
    """A string that sorts backwards: as a tie-breaker in a max-first ranking, the smaller
    string wins.

    >>> sorted(map(_Desc, ["a", "b"]))
    ['b', 'a']
    """

    __slots__ = ()

    def __lt__(self, other: str) -> bool:
        return str.__gt__(self, other)

    def __gt__(self, other: str) -> bool:
        return str.__lt__(self, other)


def multiplicative_score(relevance: float, weight: float, recency: float, *,
                         weight_exponent: float = 0.25, recency_exponent: float = 0.15,
                         session_factor: float = 1.0) -> float:
    """The design card's score: ``relevance * weight**a * recency**b * session_factor``.

    The exponents temper how much a strong or fresh memory can lift a weak match (a = b = 1
    is the plain product; 0 switches a factor off).

    >>> multiplicative_score(0.5, 1.0, 1.0)
    0.5
    >>> multiplicative_score(0.5, 3.0, 1.0, weight_exponent=1.0)
    1.5
    """
    return float(relevance * max(weight, 0.0) ** weight_exponent
                 * max(recency, 0.0) ** recency_exponent * session_factor)


def linear_score(relevance: float, weight: float, recency: float, *, cap: float = 3.0,
                 weights: tuple[float, float, float] = (0.5, 0.3, 0.2),
                 session_factor: float = 1.0) -> float:
    """The seed's linear score: ``(a*relevance + b*weight/cap + c*recency) * session_factor``.

    >>> round(linear_score(1.0, 3.0, 1.0), 6)
    1.0
    >>> round(linear_score(0.0, 1.5, 0.5), 6)
    0.25
    """
    a, b, c = weights
    return (a * relevance + b * min(weight / cap, 1.0) + c * recency) * session_factor
