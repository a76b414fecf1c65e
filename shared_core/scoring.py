"""Fusion and ranking of retrieval candidates, as pure functions.

The atlas gathers candidates along several paths (vector, keyword, graph, recent, time), fuses
the per-path rankings with weighted reciprocal rank fusion into a *relevance* in [0, 1], then
ranks by the design card's score, relevance x weight x recency (or the seed's linear form).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = ["linear_score", "multiplicative_score", "normalize_relevance", "weighted_rrf"]


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
