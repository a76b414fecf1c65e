"""Elastic weights: decay, reinforcement and the seed's richer weight, as pure functions.

Each function takes plain numbers and keyword parameters, reads no clock and keeps no state, so a
notebook can plot it. The atlas stores a memory's weight *as of its last access* and applies
`decayed_weight` lazily when it reads the memory, so decay never sweeps the whole graph.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..values.config import AtlasConfig
    from ..values.model import MemoryNode

__all__ = ["decayed_weight", "effective_weight", "eviction_value", "recency_score", "reinforced_weight", "rich_weight"]

LN2 = math.log(2.0)


def decayed_weight(weight: float, elapsed: float, *, half_life: float, floor: float = 0.0) -> float:
    """Exponential decay with a half-life, never below a floor.

    ``w(t) = max(floor, w0 * 2 ** (-elapsed / half_life))``; ``elapsed`` is in the half-life's
    unit (seconds or turns); a negative elapsed (a clock set back) counts as zero.

    >>> decayed_weight(1.0, 7.0, half_life=7.0)
    0.5
    >>> decayed_weight(1.0, 70.0, half_life=7.0, floor=0.05)
    0.05
    """
    if elapsed <= 0:
        return max(floor, weight)
    return max(floor, weight * math.exp(-LN2 * elapsed / half_life))


def reinforced_weight(weight: float, *, factor: float = 1.2, cap: float = 3.0) -> float:
    """Reinforcement on recall: ``min(cap, w * factor)``.

    >>> reinforced_weight(1.0)
    1.2
    >>> reinforced_weight(2.9)
    3.0
    """
    return min(cap, weight * factor)


def recency_score(age: float, *, half_life: float) -> float:
    """How recent a memory is, in (0, 1]: ``2 ** (-max(age, 0) / half_life)``.

    >>> recency_score(0.0, half_life=10.0)
    1.0
    >>> recency_score(10.0, half_life=10.0)
    0.5
    """
    return math.exp(-LN2 * max(age, 0.0) / half_life)


def rich_weight(importance: float, accesses: int, elapsed: float, *, half_life: float,
                association: float = 0.0, recency_gain: float = 0.5, association_gain: float = 0.3,
                floor: float = 0.05, cap: float = 3.0) -> float:
    """The seed's richer weight, clipped to [floor, cap].

    ``w = importance + log(1 + accesses) + recency_gain * r + association_gain * a - decay``
    with ``r = 2 ** (-elapsed / half_life)`` (recency of the last access), ``a`` the
    association (the mean weight of strong neighbours, PageRank-like) and
    ``decay = importance * (1 - r)``, the part of the base importance that has faded.

    >>> round(rich_weight(1.0, 0, 0.0, half_life=10.0), 3)
    1.5
    >>> round(rich_weight(1.0, 0, 10.0, half_life=10.0), 3)
    0.75
    """
    r = recency_score(elapsed, half_life=half_life)
    value = (importance + math.log1p(max(accesses, 0)) + recency_gain * r
             + association_gain * association - importance * (1.0 - r))
    return min(cap, max(floor, value))


def eviction_value(weight: float, age: float, degree: int, *, recency_half_life: float,
                   salience: float = 1.0) -> float:
    """The value that decides which memories go first when the atlas is full (lowest first).

    ``value = salience * weight * (0.5 + 0.5 * recency(age)) * (1 + log(1 + degree))``: weak,
    old and isolated memories go first; a linked memory is worth more than an isolated one of
    the same weight; ``salience`` in [0, 1] scales what the memory's content is worth (the
    atlas gives a durable fact 1 and the day's chatter ``AtlasConfig.episodic_value``). Pinned
    memories are never candidates (the atlas filters them out before).

    >>> eviction_value(1.0, 0.0, 0, recency_half_life=10.0)
    1.0
    >>> eviction_value(1.0, 0.0, 0, recency_half_life=10.0) < eviction_value(1.0, 0.0, 2, recency_half_life=10.0)
    True
    """
    recency = recency_score(age, half_life=recency_half_life)
    return salience * weight * (0.5 + 0.5 * recency) * (1.0 + math.log1p(max(degree, 0)))


def effective_weight(node: MemoryNode, *, now: float, turn: int, config: AtlasConfig,
                     association: float = 0.0) -> float:
    """A memory's weight now, decayed lazily from its last access: `rich_weight` or
    `decayed_weight` of the time (or turns, with ``decay_unit="turns"``) since its last access."""
    elapsed = float(turn - node.accessed_turn) if config.decay_unit == "turns" else now - node.last_accessed_at
    if node.pinned:
        elapsed = 0.0
    if config.weight_model == "rich":
        return rich_weight(node.importance, node.access_count, elapsed, half_life=config.half_life,
                           association=association, floor=config.weight_floor, cap=config.weight_cap)
    return decayed_weight(node.weight, elapsed, half_life=config.half_life, floor=config.weight_floor)
