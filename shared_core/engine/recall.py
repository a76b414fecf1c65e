"""Multi-path recall: vector, keyword, time, recent and graph paths, fused and ranked.

`recall` runs inside one namespace's `Partition` only. The steps:

1. **vector**: cosine of the query embedding (top ``candidate_k``);
2. **keyword**: BM25 over the memory text (top ``candidate_k``);
3. **time**: if the query names a time ("on 9 May", "last week", "in May"), the memories in
   that range, best cosine first;
4. **recent**: the latest ``recency_window`` memories of the current session;
   **entity** (``entity_weight`` > 0): the memories that mention an entity the query names
   (`shared_core.engine.entities.entity_path`);
   **speaker** (``speaker_weight`` > 0, a wide recall whose query names a speaker): the query
   without the names, over each named speaker's own memories
   (`shared_core.engine.decompose.speaker_path`);
   **feedback** (``feedback_weight`` > 0, a recall of at least ``feedback_min_k`` memories): a
   second round from the best fused candidates (Rocchio vector, RM3 words;
   `shared_core.engine.feedback.feedback_path`);
5. **fusion**: each path's signal scaled to [0, 1] and summed with the path weights
   (`scoring.convex_fusion`), or weighted reciprocal rank fusion (``fusion="rrf"``);
6. **graph**: relevance flows along the edges of the best candidates (`scoring.spread_max`,
   weighted by relation and strength, decaying per hop), so the turns around a match, its
   causes, parts and summaries come along; with ``entity_walk`` > 0 also from a seed to the
   entities it mentions and on to their other memories (`shared_core.engine.entities.entity_walk`;
   the seeds and the walk: `shared_core.engine.walk`);
7. rank by relevance x weight x recency (or the linear preset), session penalty applied.

Only relevant memories are ranked (and so returned and reinforced): with ``relevance_floor``
set, a candidate counts if its cosine with the query is at least the floor, or it shares a query
word (keyword path), or it mentions an entity the query names (entity path), or it lies in the
time range the query names, or it is one of the session's latest turns (recent path: the query
continues the conversation); only those seed the graph walk, and a memory the walk reaches from
them counts too. The fused relevance is relative to the
candidates (the best one scores 1 however weak it is), so the floor is on the cosine: a query
unrelated to every memory returns nothing. A message that carries no fact (a backchannel: "ok",
"lol", "haha nice", "👍"; `shared_core.formulas.chatter.contentless`) is never ranked nor seeds
the graph walk: a labelled one ("Kate: ok") is embedded near every question about Kate. The walk
still passes through it, and a context window may show it beside its neighbours
(`shared_core.engine.neighbours`).

With ``as_of`` a recall answers from the versions valid then (`MemoryNode.is_valid_at`): a
memory superseded or contradicted after ``as_of`` is still the one recalled for that time, and
one whose ``valid_from`` is later is not seen; relative time cues count from ``as_of``.
"""

from __future__ import annotations

import heapq
import math
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ..formulas._fusion import cosine_scale, fuse
from ..formulas.chatter import contentless
from ..formulas.decay import effective_weight, recency_score
from ..formulas.filters import Predicate
from ..formulas.scoring import (
    _Desc,
    linear_score,
    multiplicative_score,
    scale_to,
)
from ..formulas.timecues import TimeCue, parse_time_cue
from ..store.contract import CandidateQuery, Partition
from ..values.config import AtlasConfig
from ..values.model import MemoryNode, ScoredMemory, scored_of
from .decompose import Embed, Heard, may_name_speaker, speaker_path, speaker_weight
from .entities import entity_path
from .feedback import feedback_path
from .walk import graph_boost

__all__ = ["RecallRequest", "breadth", "recall", "resolve_time_cue"]

_PATHS = ("vector", "keyword", "time", "recent", "entity", "feedback", "speaker")
_MAX_YEARS_BACK = 30



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
    as_of: float | None = None
    embed: Embed | None = None  # the atlas's embedder, for sub-queries (speaker path)
    heard: Heard | None = None  # told the speakers the query names (speaker path)
    speakers: frozenset[str] = frozenset()  # the namespace's known speakers (`SpeakerBook`, speaker path)


def _latest_timestamp(part: Partition, now: float) -> float | None:
    """The newest memory timestamp at or before ``now``: windows doubling back from ``now``,
    so the search costs O(log(age)) bisections, never a scan of the namespace."""
    span = 86_400.0
    while span < 1e11:
        ids = part.between(now - span, now + 1.0)
        if ids:
            newest = part.graph.get_node(ids[-1])
            return None if newest is None else newest.timestamp
        span *= 4
    return None


def resolve_time_cue(part: Partition, query: str, *, now: float, config: AtlasConfig) -> TimeCue | None:
    """The query's time cue, placed against the partition's memories.

    With ``time_reference="latest"`` relative cues ("last week") count back from the newest
    memory instead of the clock, which is what they mean in imported history. A cue with no
    written year ("in May") moves back a year at a time until its range holds memories.
    """
    cue = parse_time_cue(query, now=now)  # whether there is a cue does not depend on the reference
    if cue is not None and config.time_reference == "latest":
        reference = _latest_timestamp(part, now)
        if reference is not None and reference != now:
            cue = parse_time_cue(query, now=reference)
    if cue is None or not cue.floating:
        return cue
    for back in range(_MAX_YEARS_BACK):
        moved = cue.shifted(-back) if back else cue
        if part.between(moved.start, moved.end):
            return moved
    return cue


def breadth(top_k: int, config: AtlasConfig, candidate_k: int | None = None) -> tuple[int, int]:
    """How wide one recall looks: (candidates per path, graph seeds).

    With ``wanted = max(top_k, candidate_min / candidate_ratio)``:
    ``candidates = min(candidate_k, ceil(candidate_ratio * wanted))`` and
    ``seeds = min(graph_seeds, ceil(ratio * wanted))``, ``ratio`` being ``seed_ratio`` in a recall
    of at least ``seed_min_k`` memories and 1 below. The work follows what was asked: a top-10
    lookup scores a few dozen memories and walks from 10 seeds, while a 2,000-token context
    (top 100) looks as wide as the config allows. A wide recall walks from more seeds than it
    asked hits for: a memory beside the 60th best candidate may belong in a 1,000-token context
    (top 50); ``graph_seeds`` binds only where ``ratio * wanted`` reaches it. Every ``top_k`` up
    to ``candidate_min / candidate_ratio`` (10 by default) looks alike, so their answers are
    prefixes of one another. An explicit ``candidate_k`` (per request) raises the candidates to it.

    >>> breadth(3, AtlasConfig()), breadth(10, AtlasConfig()), breadth(20, AtlasConfig())
    ((40, 10), (40, 10), (80, 20))
    >>> breadth(40, AtlasConfig()), breadth(50, AtlasConfig()), breadth(200, AtlasConfig())
    ((160, 80), (200, 100), (200, 100))
    """
    wanted = max(float(top_k), config.candidate_min / config.candidate_ratio)
    pool = max(min(config.candidate_k, math.ceil(config.candidate_ratio * wanted)), top_k, candidate_k or 0)
    ratio = config.seed_ratio if top_k >= config.seed_min_k else 1.0
    return pool, min(config.graph_seeds, math.ceil(ratio * wanted))


def recall(part: Partition, req: RecallRequest, config: AtlasConfig) -> list[ScoredMemory]:
    """Run every path over one partition and return the ranked hits (best first)."""
    graph = part.graph
    if req.top_k <= 0:
        return []
    k, n_seeds = breadth(req.top_k, config, req.candidate_k)
    limited = req.session_id is not None and not req.cross_session

    def admissible(node: MemoryNode | None) -> bool:
        if node is None:
            return False
        if limited and node.session_id != req.session_id:
            return False
        if req.as_of is not None:
            if not node.is_valid_at(req.as_of):
                return False
        elif not req.include_history and (node.id in part.inactive or not node.is_current(req.now)):
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
    elif subset is not None and not req.include_history and req.as_of is None:
        subset -= part.inactive
    if subset is not None and not subset:
        return []

    overfetch = k if req.include_history or subset is not None else k + min(len(part.inactive), 4 * k)
    if req.as_of is not None and subset is None:  # later versions and later memories take places
        overfetch = 5 * k
    allowed, every = _admission(part, req, subset, admissible)
    cue = resolve_time_cue(part, req.query, now=req.now if req.as_of is None else req.as_of, config=config) \
        if config.time_weight > 0 else None
    recent = req.session_id is not None and config.recency_window > 0 and config.recent_weight > 0
    # The vector search always reaches the candidate_k-th best cosine, the floor of the cosine
    # scale, whatever the pool that goes on to fusion.
    found = part.candidates(CandidateQuery(
        text=req.query, vector=req.vector, k=k, vector_k=max(overfetch, config.candidate_k), keyword_k=overfetch,
        keywords=config.keyword_weight > 0, keyword_session=req.session_id if limited else None, subset=subset,
        time_range=None if cue is None else (cue.start, cue.end),
        recent_session=req.session_id if recent else None, recent_n=config.recency_window + 8,
        recent_k=config.recency_window, every_admissible=every), allowed)
    raw, found_sims, cosine = found.paths, found.vector_sims, found.cosine  # path -> node id -> the path's value
    if config.entity_weight > 0:
        entity_hits, entity_cosines = entity_path(part, req.query, req.vector, k, allowed)
        if entity_hits:
            raw["entity"] = entity_hits
            for node_id, c in entity_cosines.items():
                cosine.setdefault(node_id, c)
    weights = {"vector": config.vector_weight, "keyword": config.keyword_weight,
               "time": config.time_weight, "recent": config.recent_weight, "entity": config.entity_weight}
    if not cosine:
        return []
    # The cosine of the candidate_k-th best memory is the floor of the scale ("how close to the
    # best"), whatever top_k asked for, so a memory's relevance does not depend on top_k.
    floor = float(found_sims[config.candidate_k - 1]) if len(found_sims) >= config.candidate_k > 0 else None
    vector_scale = cosine_scale(raw["vector"], floor)
    base, vector_share = fuse(raw, cosine, vector_scale, weights, config)
    if config.speaker_weight > 0 and req.embed is not None and req.top_k >= config.speaker_min_k \
            and may_name_speaker(req.query, req.speakers):
        relevant = _evidence(cosine, raw, config.relevance_floor)
        spoken = speaker_path(part, req.query, req.vector, base if relevant is None else
                              {i: v for i, v in base.items() if i in relevant}, config, req.embed, k=k,
                              subset=subset, every_admissible=every, allowed=allowed,
                              keyword_session=req.session_id if limited else None, heard=req.heard)
        if spoken is not None:
            raw["speaker"], weights["speaker"] = spoken.signal, speaker_weight(req.query, config)
            cosine.update(spoken.cosine)
            base, vector_share = fuse(raw, cosine, vector_scale, weights, config)
    if config.feedback_weight > 0 and req.top_k >= config.feedback_min_k:  # a second round (wide recalls)
        relevant = _evidence(cosine, raw, config.relevance_floor)
        second = feedback_path(part, req.query, req.vector, base if relevant is None else
                               {i: v for i, v in base.items() if i in relevant}, config, k=k, subset=subset,
                               every_admissible=every, keyword_session=req.session_id if limited else None,
                               allowed=allowed)
        if second is not None and second.signal:
            raw["feedback"], weights["feedback"] = second.signal, config.feedback_weight
            cosine.update(second.cosine)
            base, vector_share = fuse(raw, cosine, vector_scale, weights, config)

    relevant = _evidence(cosine, raw, config.relevance_floor)
    if relevant is not None:
        if not relevant:
            return []
        base = {i: v for i, v in base.items() if i in relevant}
    boost = graph_boost(part, base, n_seeds, allowed, config)  # the seeds' walk (`shared_core.engine.walk`)
    spread_max_total = sum(config.graph_hop_decay ** h for h in range(1, config.graph_hops + 1))
    norm = 1.0 + config.graph_weight * spread_max_total if boost else 1.0
    gw = config.graph_weight

    def resolve(ids: list[str], ahead: list[str]) -> dict[str, float]:
        """Relevance of memories found only through the graph: their cosine's share plus the
        boost; their cosines are computed in one batch, and only for those `_rank` visits
        (``ahead``: the ones it may visit next, which a server store reads with them)."""
        for node_id, c in zip(ids, part.vectors.similarities(req.vector, ids, ahead=ahead).tolist(), strict=True):
            cosine[node_id] = c
            base[node_id] = vector_share * scale_to(c, *vector_scale)  # on the candidates' scale
        return {i: min(1.0, (base[i] + gw * boost[i]) / norm) for i in ids}

    # min(1, (fused + graph_weight * boost) / norm) for every candidate (on arrays: the walk
    # reaches a hundred-odd memories)
    get = boost.get
    relevance = _relevances(list(base), np.fromiter(base.values(), dtype=np.float64, count=len(base)),
                            [get(i, 0.0) for i in base], gw, norm)
    # A graph-only memory's relevance is at most (vector share * its scaled cosine + its boost)
    # / norm; its cosine is at most the vector path's last one when that path came back full (a
    # memory the search missed is the approximate index's miss, as on the vector path itself).
    found_all = len(raw["vector"]) < k
    top_share = vector_share * (1.0 if found_all else scale_to(min(raw["vector"].values()), *vector_scale))
    graph_only = [i for i in boost if i not in base]
    pending = _relevances(graph_only, top_share, [boost[i] for i in graph_only], gw, norm)
    ranked = _rank(part, relevance, pending, resolve, req, config, allowed)
    hits: list[ScoredMemory] = []
    present = [(p, raw[p]) for p in _PATHS if raw.get(p)]
    for score, node, factors in ranked:
        node_id = node.id
        fused = base[node_id]
        graph_part = gw * boost.get(node_id, 0.0)
        paths = tuple([p for p, found_by in present if node_id in found_by])
        components = {"vector": cosine.get(node_id, 0.0)}
        for p, found_by in present:
            if p != "vector" and node_id in found_by:
                components[p] = found_by[node_id]
        if graph_part > 0:
            paths += ("graph",)
            components["graph"] = boost[node_id]
        if req.explain:
            components["fused"] = fused
            components.update({f"rank_{p}": float(list(raw[p]).index(node_id) + 1)
                               for p in paths if p != "graph"})
        components.update(factors)
        other = req.session_id is not None and node.session_id != req.session_id
        hits.append(scored_of(node, score, components, paths, other))
    return hits


def _evidence(cosine: Mapping[str, float], raw: Mapping[str, Mapping[str, float]], floor: float | None
              ) -> set[str] | None:
    """The candidates relevant on their own (None: no floor): cosine >= ``floor``, a query word
    in common (a positive BM25 score), in the query's time range or among the session's latest
    turns.

    >>> sorted(_evidence({"a": 0.5, "b": 0.02, "c": 0.01}, {"keyword": {"c": 1.2}}, 0.2))
    ['a', 'c']
    """
    if floor is None:
        return None
    out = {i for i, c in cosine.items() if c >= floor}
    out.update(i for i, v in raw.get("keyword", {}).items() if v > 0)
    out.update(raw.get("time", ()))
    out.update(raw.get("recent", ()))
    out.update(raw.get("entity", ()))
    out.update(raw.get("feedback", ()))  # reached from relevant candidates, as the graph walk
    out.update(raw.get("speaker", ()))  # said by a speaker a relevant candidate names
    return out


def _relevances(ids: list[str], fused: npt.NDArray[np.float64] | float, boosts: list[float], graph_weight: float,
                norm: float) -> dict[str, float]:
    """``min(1, (fused + graph_weight * boost) / norm)`` by id, the same operations as one at a
    time."""
    if not ids:
        return {}
    values = np.minimum((fused + graph_weight * np.array(boosts, dtype=np.float64)) / norm, 1.0)
    return dict(zip(ids, values.tolist(), strict=True))


def _admission(part: Partition, req: RecallRequest, subset: set[str] | None,
               admissible: Callable[[MemoryNode | None], bool]) -> tuple[Callable[[str], bool], bool]:
    """Whether a memory may be recalled (in ``subset`` when there is one, and ``admissible``),
    remembered per id for the call: the paths and the walk ask about the same memories; and
    whether every memory of the partition may be (then the check is only that the node exists).

    Every memory may be recalled when nothing narrows the call (no filter, no session scope,
    history or not) and nothing in the partition can be out of date: no superseded or retired
    memory (``inactive``) and no node with an expiry or an end of validity (the graph store's
    `GraphStore.bounded_nodes`; a store that does not count them is asked node by node). That is the
    common case, where a recall then fetches no node to admit its few dozen candidates.
    """
    cache: dict[str, bool] = {}
    get_node = part.graph.get_node
    if subset is None and req.predicate is None and req.as_of is None and (req.include_history or (
            not part.inactive and part.graph.bounded_nodes == 0)):
        return part.graph.has, True
    if subset is None and not req.include_history and req.as_of is None:  # no filter, no session scope: the common case
        inactive, now = part.inactive, req.now

        def current(node_id: str) -> bool:
            ok = cache.get(node_id)
            if ok is None:
                node = get_node(node_id)
                ok = cache[node_id] = node is not None and node_id not in inactive and node.is_current(now)
            return ok

        return current, False

    def allowed(node_id: str) -> bool:
        ok = cache.get(node_id)
        if ok is None:
            ok = cache[node_id] = (subset is None or node_id in subset) and admissible(get_node(node_id))
        return ok

    return allowed, False


def _rank(part: Partition, relevance: Mapping[str, float], pending: Mapping[str, float],
          resolve: Callable[[list[str], list[str]], dict[str, float]], req: RecallRequest, config: AtlasConfig,
          allowed: Callable[[str], bool]) -> list[tuple[float, MemoryNode, dict[str, float]]]:
    """The ``top_k`` best (score, node, factors), best first (ties: newer, then id).

    Candidates are visited by falling relevance and the visit stops once no remaining one can
    beat the k-th best score: the score is at most ``bound(relevance)`` (relevance times the
    largest weight and recency factors), so only a handful of nodes are ever fetched and
    scored, however many the graph walk reached. ``pending`` memories have only an upper bound
    of their relevance, in a line of their own; when the best bound comes before the best exact
    relevance, ``resolve`` gives the exact value of a batch of them (best bounds first, those
    that may still beat the k-th score, ``max(16, top_k)`` at most; the next ones by bound are
    named ahead up to the store's `VectorIndex.cosine_batch`: a server store reads their cosines
    with the request) and they join the exact line. The answer does not
    depend on the batches: a memory is scored when its exact relevance comes up, and the visit
    stops only when no memory left can beat the k-th score. (Two lines make fewer index calls
    than one line for both with batches cut at the next exact memory.)
    """
    get_node = part.graph.get_node
    top: list[tuple[float, float, str, MemoryNode, dict[str, float]]] = []  # min-heap on the sort key
    bound = _score_bound(config)
    score = _scorer(part, req, config)
    # two max-heaps on relevance: the exact ones and the pending ones' bounds
    line = list(zip(map(operator.neg, relevance.values()), relevance, strict=True))
    waiting = list(zip(map(operator.neg, pending.values()), pending, strict=True))
    heapq.heapify(line)
    heapq.heapify(waiting)
    batch = max(16, req.top_k)
    reach = part.vectors.cosine_batch  # in process 16: nothing named ahead
    top_k = req.top_k
    pop, push = heapq.heappop, heapq.heappush
    while line or waiting:
        if waiting and (not line or waiting[0] < line[0]):
            # the best bound comes first: resolve it with the next best bounds that may still
            # beat the k-th score (one index call for a batch of them, whatever exact ones
            # come between)
            ids: list[str] = []
            while waiting and len(ids) < batch and not (len(top) == top_k and bound(-waiting[0][0]) < top[0][0]):
                ids.append(pop(waiting)[1])
            if not ids:
                break
            ahead = [i for _, i in heapq.nsmallest(reach - len(ids), waiting)] if reach > batch and waiting else []
            ids = [i for i in ids if allowed(i)]
            for other, rel in (resolve(ids, ahead) if ids else {}).items():
                push(line, (-rel, other))
            continue
        neg, node_id = pop(line)
        if len(top) == top_k and bound(-neg) < top[0][0]:
            break
        node = get_node(node_id)
        if node is None or not allowed(node_id) or contentless(node.content, node.metadata):
            continue  # a backchannel ("ok", "lol") holds nothing to recall
        factors = score(node, -neg)
        if factors is None:
            continue
        key = (factors["score"], node.timestamp, _Desc(node_id))
        if len(top) < top_k:
            push(top, (*key, node, factors))
        elif key > top[0][:3]:
            heapq.heapreplace(top, (*key, node, factors))
    top.sort(key=lambda t: (t[0], t[1], t[2]), reverse=True)
    return [(t[0], t[3], t[4]) for t in top]


def _score_bound(config: AtlasConfig) -> Callable[[float], float]:
    """An upper bound of the final score given the relevance (weight at its cap, recency 1)."""
    if config.scoring == "linear":
        a, b, c = config.linear_weights
        return lambda rel: a * rel + b + c
    top_weight = max(config.weight_cap, 1.0) ** config.weight_exponent
    return lambda rel: rel * top_weight


def _scorer(part: Partition, req: RecallRequest, config: AtlasConfig
            ) -> Callable[[MemoryNode, float], dict[str, float] | None]:
    """The final score of one memory given its relevance, and its factors: relevance x weight
    x recency (or the linear preset); None when the score is not a finite number."""
    now, turn, session = req.now, part.turn, req.session_id
    cap, rich, linear = config.weight_cap, config.weight_model == "rich", config.scoring == "linear"
    recency_half_life, penalty = config.recency_half_life, config.cross_session_penalty
    weight_exponent, recency_exponent = config.weight_exponent, config.recency_exponent

    def score(node: MemoryNode, relevance: float) -> dict[str, float] | None:
        association = _association(part, node.id, config) if rich else 0.0
        # a weight counts at most weight_cap (an importance above the cap starts above it), which
        # is what lets `_rank` stop early
        weight = min(cap, effective_weight(node, now=now, turn=turn, config=config, association=association))
        recency = recency_score(now - node.timestamp, half_life=recency_half_life)
        session_factor = penalty if session is not None and node.session_id != session else 1.0
        if linear:
            value = linear_score(relevance, weight, recency, cap=cap, weights=config.linear_weights,
                                 session_factor=session_factor)
        else:
            value = multiplicative_score(relevance, weight, recency, weight_exponent=weight_exponent,
                                         recency_exponent=recency_exponent, session_factor=session_factor)
        if not math.isfinite(value):
            return None
        return {"relevance": relevance, "weight": weight, "recency": recency, "session": session_factor,
                "score": value}

    return score



def _association(part: Partition, node_id: str, config: AtlasConfig) -> float:
    """Mean stored weight of strongly linked neighbours, scaled to [0, 1] by the cap."""
    strong = [(other, s) for other, s in part.graph.neighbors(node_id) if s >= 0.5][:16]
    weights = [n.weight for other, _ in strong if (n := part.graph.get_node(other)) is not None]
    return 0.0 if not weights else min(1.0, sum(weights) / len(weights) / config.weight_cap)
