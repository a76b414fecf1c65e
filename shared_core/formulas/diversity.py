"""Diversity in a context: maximal marginal relevance (MMR) over the recalled memories.

A list or count question ("What are Kate's hobbies?") is answered by several memories, often
told in different sessions; ranked by relevance alone, a context fills with near-duplicates of
the best match (the same hobby mentioned five times) and the budget runs out before the other
pieces of evidence. `mmr_order` reorders the candidates so that each next one is the best trade
between its relevance and its novelty against those already chosen (Carbonell and Goldstein,
1998):

    next = argmax_i  (1 - diversity) * rel_i  -  diversity * max_{j chosen} cos(v_i, v_j)

with ``rel_i = score_i / max(score)`` (the best candidate scores 1). ``diversity = 0`` keeps the
given order; ``diversity = 1`` ignores relevance after the first pick. The packing then takes the
memories in that order while they fit the budget, so the context covers distinct evidence first.
Ties go to the earlier candidate, so the order is deterministic.

>>> import numpy as np
>>> v = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
>>> mmr_order([1.0, 0.95, 0.6], v, diversity=0.0)
[0, 1, 2]
>>> mmr_order([1.0, 0.95, 0.6], v, diversity=0.5)
[0, 2, 1]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["mmr_order"]


def mmr_order(scores: Sequence[float], vectors: npt.NDArray[np.floating] | Sequence[npt.NDArray[np.floating]],
              *, diversity: float) -> list[int]:
    """The indices of the candidates in MMR order (see the module docstring).

    ``scores`` are the candidates' scores (>= 0, any scale), ``vectors`` their embeddings, one
    row each (normalised here, so any length works; a zero vector is similar to nothing).
    Cost: O(n^2 d) for n candidates of dimension d, a few milliseconds for the few hundred a
    context packs.

    >>> import numpy as np
    >>> mmr_order([0.2, 0.9], np.eye(2), diversity=0.3)
    [1, 0]
    """
    if not 0.0 <= diversity <= 1.0:
        raise ValueError(f"diversity must be in [0, 1], got {diversity!r}")
    n = len(scores)
    if n == 0:
        return []
    rel = np.asarray(scores, dtype=np.float64)
    if len(rel) != len(vectors):
        raise ValueError(f"{len(rel)} scores but {len(vectors)} vectors")
    top = float(rel.max())
    rel = rel / top if top > 0 else np.ones_like(rel)
    if diversity == 0.0 or n == 1:
        return sorted(range(n), key=lambda i: -rel[i])
    mat = np.asarray(vectors, dtype=np.float64).reshape(n, -1)
    norms = np.linalg.norm(mat, axis=1, keepdims=True)
    mat = np.divide(mat, norms, out=np.zeros_like(mat), where=norms > 0)
    sims = mat @ mat.T
    gain = (1.0 - diversity) * rel
    closest = np.full(n, -np.inf)  # max cosine to a chosen candidate (none yet)
    open_ = np.ones(n, dtype=bool)
    order: list[int] = []
    for _ in range(n):
        value = gain - diversity * np.where(np.isfinite(closest), closest, 0.0)
        value[~open_] = -np.inf
        best = int(np.argmax(value))  # the first of equal values: the earlier candidate
        order.append(best)
        open_[best] = False
        closest = np.maximum(closest, sims[best])
    return order
