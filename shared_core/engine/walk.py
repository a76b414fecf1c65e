"""Recall's graph path: the seeds' walk (step 6 of `shared_core.engine.recall`).

`graph_boost` takes the fused relevance of the candidates and returns each memory's activation
from the walk (its "boost"):

1. the seeds are the best ``n`` candidates that carry a fact (ties to the smaller id): a
   backchannel ("ok", "Kate: lol"; `shared_core.formulas.chatter.contentless`) is embedded near
   every question about its speaker and would spread relevance to whatever sits beside it
   (`walk_from_facts`);
2. relevance flows along their edges (`Partition.expand`: `scoring.spread_max`, weighted by
   relation and strength, ``graph_hop_decay`` per hop, the ``graph_fanout`` strongest edges of
   each node, the ``graph_beam`` x seeds most activated nodes of a hop walked on), leaving out
   activations under 0.1% of the best seed's, which cannot move a ranking; the walk steps over
   a backchannel (`WalkSpec.step_over`: flagged on write, `GraphStore.is_chatter`) to its own
   neighbours, the two strengths multiplied and no hop spent, so that "Kate: I went hiking" ->
   "Sam: lol" -> "Kate: the view was great" is one step (`scoring.step_over`);
3. with ``entity_walk`` > 0, also from a seed to the entities it mentions and on to their other
   memories (`shared_core.engine.entities.entity_walk`), as one more hop.

>>> beam(10, AtlasConfig(graph_beam=1.5)), beam(10, AtlasConfig(graph_beam=None))
(15, None)
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping

from ..formulas.chatter import contentless
from ..store.contract import Partition, WalkSpec
from ..values.config import AtlasConfig
from ..values.model import Relation
from ..values.relations import RELATIONS
from .entities import entity_walk

__all__ = ["beam", "graph_boost", "relation_factors", "walk_from_facts"]


def graph_boost(part: Partition, base: Mapping[str, float], n_seeds: int, allowed: Callable[[str], bool],
                config: AtlasConfig) -> dict[str, float]:
    """Each memory's activation from the walk of the best ``n_seeds`` of ``base`` (fused
    relevance by id) that carry a fact, and from the entities they mention (``entity_walk``);
    empty when the graph path is off (no hops, no weight, no seeds). ``allowed`` admits a
    memory to the walk."""
    if config.graph_hops <= 0 or config.graph_weight <= 0 or n_seeds <= 0:
        return {}
    # the best n_seeds that carry a fact, ties to the smaller id
    seeds, boost = walk_from_facts(part, sorted([(-v, i) for i, v in base.items()]), n_seeds, allowed, config)
    floor_act = 0.001 * max(seeds.values(), default=0.0)
    if config.entity_walk > 0:  # seed -> entity -> memory, as one more hop of the walk
        for node_id, act in entity_walk(part, seeds, allowed, factor=config.entity_walk * config.graph_hop_decay,
                                        max_mentions=config.entity_max_mentions).items():
            if act >= floor_act and act > boost.get(node_id, 0.0):
                boost[node_id] = act
    return boost


def beam(seeds: int, config: AtlasConfig) -> int | None:
    """How many nodes of each hop walk on: ``graph_beam`` times the seeds (None: all)."""
    return None if config.graph_beam is None else max(1, math.ceil(config.graph_beam * seeds))


def walk_from_facts(part: Partition, ordered: list[tuple[float, str]], n: int, allowed: Callable[[str], bool],
                    config: AtlasConfig) -> tuple[dict[str, float], dict[str, float]]:
    """The seeds, the first ``n`` of ``ordered`` (negated relevance, id) that are not
    backchannels, and the graph walk's activations from them (`Partition.expand`).

    A labelled "Kate: ok" is embedded near every question about Kate; as a seed it would spread
    relevance to whatever sits beside it. The seeds are chosen optimistically: the best ``n`` not
    yet known to be backchannels are walked from, then checked (a server store's walk has read
    their nodes with its first hop, so the check costs no request); a backchannel among them is
    skipped and the walk runs again. A conversation without backchannels walks once."""
    skip: set[str] = set()
    while True:
        seeds: dict[str, float] = {}
        for neg, i in ordered:
            if i not in skip:
                seeds[i] = -neg
                if len(seeds) == n:
                    break
        # an activation under 0.1% of the best seed's cannot move a ranking: do not walk it
        floor_act = 0.001 * max(seeds.values(), default=0.0)
        walk = WalkSpec(factors=relation_factors(config.relation_weights)[1], hops=config.graph_hops,
                        decay=config.graph_hop_decay, fanout=config.graph_fanout, min_activation=floor_act,
                        beam=beam(n, config), step_over=True)
        boost = part.expand(seeds, walk, allowed)
        empty = {i for i in seeds if (node := part.graph.get_node(i)) is None
                 or contentless(node.content, node.metadata)}
        if not empty:
            return seeds, boost
        skip |= empty


def relation_factors(relation_weights: tuple[tuple[str, float], ...]
                     ) -> tuple[dict[Relation, float], list[float | None]]:
    """The walked relations' weights, by relation and by code (None: not walked); a custom
    relation is walked as ``related_to`` is.

    >>> by_relation, by_code = relation_factors((("before", 1.0), ("related_to", 0.0)))
    >>> by_relation == {Relation.BEFORE: 1.0}, by_code[RELATIONS.index(Relation.BEFORE)]
    (True, 1.0)
    """
    return _factors(relation_weights, len(RELATIONS))


@functools.lru_cache(maxsize=64)
def _factors(relation_weights: tuple[tuple[str, float], ...], known: int
             ) -> tuple[dict[Relation, float], list[float | None]]:
    """`relation_factors` for the first ``known`` relations of the table, once per config and
    table size (parsing the relations costs more than a small walk)."""
    by_relation = {Relation(name): w for name, w in relation_weights if w > 0}
    custom = by_relation.get(Relation.RELATED_TO)
    return by_relation, [by_relation.get(r) if isinstance(r, Relation) else custom for r in RELATIONS[:known]]
