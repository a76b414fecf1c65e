"""Recall through the entity layer: the ``entity`` path and the seed -> entity -> memory walk.

Both read the partition's `EntityIndex` (entities and their ``mentions`` edges, written by
`shared_core.engine.writes`), so they work alike on every backend.

- `entity_path`: the query's entity keys (`shared_core.text.entities.extract_entities`: names,
  a speaker, key phrases) that name entities of the namespace; each memory mentioning one of
  them gets ``min(1, sum(idf of the keys it mentions) / ln(1 + n))`` with
  ``idf = ln(1 + n / mentions)`` (``n``: memories in the namespace): 1 for an entity that one
  memory names, little for a speaker who says half of the turns, so a memory naming the rare
  entity of the query outranks one naming only the speaker; the ``k`` best by (that value,
  cosine) form the path. An entity named by very many memories still helps: among its memories
  the cosine ranks.
- `entity_walk`: from each seed to the entities it mentions and on to their other memories:
  ``activation(seed) * factor``, the best per memory, through entities that 2 to ``max_mentions``
  memories mention (a speaker named by half the namespace links nothing in particular).

>>> from shared_core.store.memory.backend import InProcessBackend
>>> part = InProcessBackend(dim=2).partition("ns", create=True)
>>> part.entities.add_many([("a", ["lake tahoe", "caroline"]), ("b", ["lake tahoe"]), ("c", ["caroline"])])
>>> entity_walk(part, {"a": 1.0}, lambda i: True, factor=0.5, max_mentions=10)
{'b': 0.5, 'c': 0.5}
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..store.contract import Partition, Vector
from ..text.entities import extract_entities

__all__ = ["entity_path", "entity_walk"]

#: The most memories of one query entity ranked by cosine for the entity path.
PATH_LIMIT = 1024


def entity_path(part: Partition, query: str, vector: Vector, k: int, allowed: Callable[[str], bool]
                ) -> tuple[dict[str, float], dict[str, float]]:
    """The entity path (id -> value in (0, 1], best first) and the cosine of each of its
    memories; empty when the query names no entity of the namespace (see the module docstring)."""
    keys = extract_entities(query)
    if not keys or k <= 0:
        return {}, {}
    found = part.entities.mentions(keys, limit=PATH_LIMIT)
    if not found:
        return {}, {}
    n = max(part.graph.node_count(), 2)
    top = math.log1p(n)  # the idf of an entity one memory mentions
    value: dict[str, float] = {}
    for count, ids in found.values():
        share = math.log1p(n / max(count, 1)) / top
        for node_id in ids:
            value[node_id] = value.get(node_id, 0.0) + share
    ids = [i for i in value if allowed(i)]
    if not ids:
        return {}, {}
    sims = part.vectors.similarities(vector, ids)
    order = sorted(range(len(ids)), key=lambda j: (-value[ids[j]], -float(sims[j]), ids[j]))[:k]
    path = {ids[j]: min(1.0, value[ids[j]]) for j in order}
    return path, {ids[j]: float(sims[j]) for j in order if np.isfinite(sims[j])}


def entity_walk(part: Partition, seeds: dict[str, float], walkable: Callable[[str], bool], *, factor: float,
                max_mentions: int) -> dict[str, float]:
    """Memory -> entity -> memory from ``seeds`` (id -> activation): the activation each
    other memory gets, ``max(activation(seed) * factor)`` over the seeds that share an entity
    with it, through entities that 2 to ``max_mentions`` memories mention; seeds themselves and
    memories ``walkable`` refuses are left out."""
    if factor <= 0 or not seeds or max_mentions < 2:
        return {}
    named = part.entities.entities_of(list(seeds))
    if not named:
        return {}
    keys = list(dict.fromkeys(key for keys in named.values() for key in keys))
    found = part.entities.mentions(keys, limit=max_mentions)
    best: dict[str, float] = {}  # the best activation reaching each entity
    for seed, seed_keys in named.items():
        act = seeds[seed] * factor
        for key in seed_keys:
            if key in found and 2 <= found[key][0] <= max_mentions and act > best.get(key, 0.0):
                best[key] = act
    out: dict[str, float] = {}
    for key, act in best.items():
        for other in found[key][1]:
            if other not in seeds and act > out.get(other, 0.0):
                out[other] = act
    return {i: a for i, a in out.items() if walkable(i)}
