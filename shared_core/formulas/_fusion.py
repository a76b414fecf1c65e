"""Fusion of recall's paths into one relevance per candidate (see `shared_core.engine.recall`).

`fuse` is the composition of `scoring`'s documented functions (`_fuse_signals` spells it out);
the usual case runs on arrays with the same floating-point operations in the same order, so the
two agree exactly (unit tests hold them, and `rounded`, equal).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from ..values.config import AtlasConfig
from .scoring import convex_fusion, max_normalize, normalize_relevance, pool_normalize, weighted_rrf

__all__ = ["cosine_scale", "fuse", "rounded"]


def cosine_scale(found: Mapping[str, float], floor: float | None) -> tuple[float, float]:
    """(floor, best) of the cosine scale; with fewer than k hits the floor is 0 similarity."""
    if not found:
        return 0.0, 1.0
    best = max(found.values())
    low = floor if floor is not None else min(0.0, min(found.values()))
    return low, best


def _scale_cosines(cosine: Mapping[str, float], vector_scale: tuple[float, float]) -> dict[str, float]:
    low, best = vector_scale
    if best <= low:
        return {}
    return pool_normalize({i: min(c, best) for i, c in cosine.items()}, floor=low)


def fuse(raw: Mapping[str, Mapping[str, float]], cosine: Mapping[str, float],
         vector_scale: tuple[float, float], weights: Mapping[str, float], config: AtlasConfig
         ) -> tuple[dict[str, float], float]:
    """Fuse the paths' signals into a relevance in [0, 1] for every candidate.

    Convex fusion scales each path to [0, 1]: cosine against the pool's scale (computed for
    every candidate, not only those the vector path returned), BM25 by the best score, the time,
    recent and entity paths as given. Returns the relevances and the share of the vector path in them
    (what a memory found by no path but the graph can get from its cosine alone).

    The usual case (the vector path found something and counts) is computed on arrays, with
    the same floating-point operations in the same order as `_fuse_signals`, the composition of
    `scoring`'s functions that states it (a unit test holds them equal).
    """
    low, best = vector_scale  # best: the vector path's best cosine, so the pool's best is best
    if config.fusion == "rrf" or not raw.get("vector") or best <= low or weights["vector"] <= 0:
        return _fuse_signals(raw, cosine, vector_scale, weights, config)
    keyword = raw.get("keyword") or {}
    extra = [(weights[p], raw[p]) for p in ("time", "recent", "entity", "feedback", "speaker") if raw.get(p)]
    total = sum(w for w in [weights["vector"], weights["keyword"] if keyword else 0.0, *(w for w, _ in extra)]
                if w > 0)
    ids = list(cosine)
    cosines = np.fromiter(cosine.values(), dtype=np.float64, count=len(ids))
    # the vector path's signal, max(0, (min(c, best) - low) / (best - low)), for every candidate
    value = 0.0 + weights["vector"] / total * np.maximum((np.minimum(cosines, best) - low) / (best - low), 0.0)
    if keyword and weights["keyword"] > 0:
        top_keyword = max(keyword.values())
        if top_keyword > 0:  # else the signal is 0 everywhere: it adds nothing
            rows, scores = _aligned(ids, keyword)
            value[rows] = value[rows] + weights["keyword"] / total * (np.maximum(scores, 0.0) / top_keyword)
    for w, values in extra:
        if w > 0:
            rows, scores = _aligned(ids, values)
            value[rows] = value[rows] + w / total * scores
    return dict(zip(ids, rounded(value, 12), strict=True)), weights["vector"] / total


def rounded(values: npt.NDArray[np.float64], digits: int) -> list[float]:
    """``[round(v, digits) for v in values]``, exactly, a third of the time.

    ``rint(v * 10**digits) / 10**digits`` is the same double as Python's ``round`` (the double
    nearest the decimal rounded half-even, and the division is correctly rounded) unless the
    product's rounding error moves it across a half: values whose scaled form is within 1e-3 of
    a half (the error is below 1.2e-4 under 2**40), larger or not finite are rounded one by one.
    """
    scale = 10.0 ** digits
    with np.errstate(all="ignore"):
        scaled = values * scale
        out: list[float] = (np.rint(scaled) / scale).tolist()
        doubt = ~(np.abs(scaled) < 2.0 ** 40) | (np.abs(scaled - np.floor(scaled) - 0.5) < 1e-3)
    for j in np.flatnonzero(doubt).tolist():
        out[j] = round(float(values[j]), digits)
    return out


def _aligned(ids: list[str], values: Mapping[str, float]) -> tuple[list[int], npt.NDArray[np.float64]]:
    """The places in ``ids`` of the ids that have a value, and their values."""
    rows = [j for j, i in enumerate(ids) if i in values]
    return rows, np.array([values[ids[j]] for j in rows], dtype=np.float64)


def _fuse_signals(raw: Mapping[str, Mapping[str, float]], cosine: Mapping[str, float],
                  vector_scale: tuple[float, float], weights: Mapping[str, float], config: AtlasConfig
                  ) -> tuple[dict[str, float], float]:
    """`fuse` as the composition of `scoring`'s functions: its definition."""
    if config.fusion == "rrf":
        rankings = {p: sorted(v, key=lambda i: -v[i]) for p, v in raw.items() if v}
        fused = weighted_rrf(rankings, weights, k=config.rrf_k)
        active = {p: weights[p] for p in rankings}
        return {i: normalize_relevance(fused.get(i, 0.0), active, k=config.rrf_k) for i in cosine}, 0.0
    signals: dict[str, dict[str, float]] = {
        "vector": _scale_cosines(cosine, vector_scale),
        "keyword": max_normalize(dict(raw["keyword"])) if raw.get("keyword") else {},
    }
    for p in ("time", "recent", "entity", "feedback", "speaker"):
        if raw.get(p):
            signals[p] = dict(raw[p])
    fused = convex_fusion(signals, weights)
    total = sum(weights[p] for p, v in signals.items() if v and weights[p] > 0)
    share = weights["vector"] / total if total > 0 and signals["vector"] else 0.0
    return {i: fused.get(i, 0.0) for i in cosine}, share
