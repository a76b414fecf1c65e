"""Recall in few round trips: `FalkorPartition`'s `candidates` and `expand`.

They give what `shared_core.store.base`'s defaults give over the same server (the same ids, the
same values, in the same order), with the server asked fewer, larger questions:

- `gather` (candidates): one pipelined round trip for the searches (the vector top-k, the
  BM25 top-k of a small namespace (`cypher.bm25_counted`) or else its query terms' document
  counts, a time range, a session's latest turns; each non-vector hit with its cosine to the
  query), then, in a large namespace, the BM25 top-k (`cypher.bm25`, pruned with those
  counts), then one statement reading the nodes that ``allowed`` will be asked about (the
  head of each path). ``allowed`` is the engine's own predicate, applied here, in the
  default's order, to the rows that came back: nothing about admission is re-implemented in
  Cypher.
  When every memory may be recalled (``every_admissible``) no node is read with the hits.
- `walk` (expand): `spread_max` over the server's edges, read one hop at a time for the whole
  frontier (`cypher.WALK_HOP`): each edge's direction and order; the other ends are known to
  exist (`FalkorGraphStore.has` answers without reading them), the seeds' nodes ride in the
  first hop's pipeline, and the other ends join the read-ahead list, most reachable first, for
  ``walkable`` and the ranking that follows. Their cosines with the query are not read per edge
  (an index lookup of each far end's vector, row by row, cost the server more than the hop's own
  work, and the ranking asks for a dozen of the hundred-odd memories a walk reaches): the second
  hop's pipeline reads those of the memories the first reached, most reachable first, once each
  (`FalkorVectorIndex.cosines_ahead`), and a cosine the ranking still lacks is read with the
  next ones (`FalkorVectorIndex.similarities`).

>>> from shared_core.store.falkordb.paths import order_edges
>>> order_edges("a", [("b", "SIMILAR_TO", 0.5, 7, False), ("c", "BEFORE", 1.0, 9, True)])
[('c', 'BEFORE', 1.0, 9, True), ('b', 'SIMILAR_TO', 0.5, 7, False)]
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from functools import partial
from typing import Any, Protocol

import numpy as np

from ...formulas.scoring import spread_max, step_over
from ...values.model import MemoryNode, Relation
from ...values.relations import RELATION_CODES, RELATIONS
from ..contract import CandidateQuery, Candidates, Predicate, Vector, WalkSpec
from . import cypher as q
from .client import GraphKey, Literal
from .graph import AHEAD, FalkorGraphStore
from .indexes import AMONG_IN_QUERY, FalkorKeywordIndex, FalkorVectorIndex, query_literal


class FalkorPartition(Protocol):
    """What these paths use of `shared_core.store.falkordb.partition.FalkorPartition`."""

    namespace: str
    graph: FalkorGraphStore
    vectors: FalkorVectorIndex
    keywords: FalkorKeywordIndex

    @property
    def graph_key(self) -> GraphKey: ...

    def default_candidates(self, query: CandidateQuery, allowed: Predicate) -> Candidates: ...

    def remember_cosines(self, query: Vector, values: dict[str, float]) -> None: ...

__all__ = ["gather", "neighbour_nodes", "order_edges", "walk"]

_RELATIONS = tuple(Relation)
_INDEX = {r.value.upper(): i for i, r in enumerate(_RELATIONS)}
_RELATED = _INDEX[Relation.RELATED_TO.value.upper()]


def _code(kind: str, known: int) -> int:
    """The relation code of an edge type read from the server; a custom relation (one this
    process has not registered, or registered after the walk's factors were built) is walked as
    ``related_to`` is, as in process."""
    code = _INDEX.get(kind)
    if code is None:
        code = RELATION_CODES.get(kind.lower(), _RELATED)
    return code if code < known else _RELATED


_CHUNK = 32  # nodes read at once when admission runs past what was read ahead
# nodes each walk hop's request reads for the ranking, per seed (at least `AHEAD`): the ranking of a
# wider recall (`build_context`'s) visits more of them (about five per seed over the two hops)
_AHEAD_PER_SEED = 2.5
_HEADS = 8  # nodes read with a path's hits beyond the k it keeps (room for inadmissible ones)
_NODE_WIDTH = len(q.NODE_FIELDS) + len(q.TIME_FIELDS) + 1  # columns of `cypher.NODE_COLUMNS`


def _sim(distance: Any) -> float:
    """A cosine distance from the server as the similarity the vector index reports."""
    return 0.0 if distance is None else float(np.float32(1.0 - float(distance)))


def _sims(distances: Sequence[Any]) -> list[float]:
    """`_sim` of each distance, at once (a walk hop reads hundreds).

    >>> _sims([0.25, None]) == [_sim(0.25), _sim(None)]
    True
    """
    values = np.array([1.0 if d is None else d for d in distances], dtype=np.float64)
    sims: list[float] = (1.0 - values).astype(np.float32).tolist()
    return sims


def _rows(literals: Iterable[str]) -> Literal:
    """A list of rows already written as Cypher, as one parameter."""
    return Literal("[" + ", ".join(literals) + "]")


def order_edges(node_id: str, rows: Iterable[tuple[str, str, float, int, bool]]
                ) -> list[tuple[str, str, float, int, bool]]:
    """(other, type, strength, seq, outgoing) in `GraphStore.edges`'s order: out-edges first,
    then in-edges, each in the order they were put."""
    return sorted(rows, key=lambda r: (not r[4], r[3] or 0))


# -- candidates -------------------------------------------------------------------------------
def gather(part: FalkorPartition, cq: CandidateQuery, allowed: Predicate) -> Candidates:
    """`Partition.candidates` in two or three round trips (see the module docstring)."""
    subset = cq.subset
    if subset is not None and len(subset) > AMONG_IN_QUERY:
        return part.default_candidates(cq, allowed)
    vector = query_literal(cq.vector)
    statements: list[tuple[str, dict[str, Any]]] = []
    every = cq.every_admissible
    heads = 0 if every else cq.k + _HEADS  # the nodes admission will ask about, read with the hits
    if subset is None and heads == 0:  # no admission to ask: the ids of the hits kept, every distance
        statements.append((q.VECTOR_SEARCH_HEAD, {"k": int(cq.vector_k), "query": vector, "head": int(cq.k)}))
    elif subset is None:
        statements.append((q.VECTOR_SEARCH_NODES, {"k": int(cq.vector_k), "query": vector, "heads": heads}))
    else:
        statements.append((q.VECTOR_AMONG, {"ids": list(subset), "query": vector}))
    # BM25: in a small namespace one statement here; else each stem's document count rides along
    # here and the (pruned) top-k follows
    keyword_options: dict[str, Any] = {"vector": vector}
    if cq.keyword_session is not None:
        keyword_options["session"] = cq.keyword_session
    if subset is not None:
        keyword_options["ids"] = list(subset)
    keyword_search = partial(q.bm25_cosine, session=cq.keyword_session is not None, among=subset is not None,
                             nodes=not every)
    one = part.keywords.one_statement(cq.text, cq.keyword_k) if cq.keywords else None
    counting = part.keywords.counting(cq.text, cq.keyword_k) if cq.keywords and one is None else None
    if one is not None:
        top, params = part.keywords.top_statement(one)
        statements.append((keyword_search(search=top), params | keyword_options))
    elif counting is not None:
        statements.append(counting[1])
    if cq.time_range is not None:
        statements.append((q.BETWEEN_COSINE, {"start": float(cq.time_range[0]), "end": float(cq.time_range[1]),
                                              "vector": vector}))
    if cq.recent_session is not None and cq.recent_n > 0:
        statements.append((q.session_cosine(cq.recent_session, nodes=not every),
                           {"session": cq.recent_session, "limit": int(cq.recent_n), "vector": vector}))
    results = iter(part.graph_key.read_many(statements))

    rows = next(results)
    remember = part.graph.remember
    searched: np.ndarray[Any, np.dtype[np.float64]] | None = None  # the whole search's similarities
    if subset is None and heads == 0:
        head, distances = rows[0] if rows else ([], [])
        sims = (1.0 - np.array(distances, dtype=np.float64)).astype(np.float32)  # `_sim` of each
        vector_hits = list(zip(map(str, head), sims[:len(head)].tolist(), strict=True))
        searched = sims.astype(np.float64)
    elif subset is None:
        vector_hits = [(str(i), _sim(d)) for i, d, _ in rows]
        remember([node for _, _, node in rows if node is not None])
    else:
        vector_hits = sorted(((str(i), _sim(d)) for i, d in rows), key=lambda kv: (-kv[1], kv[0]))[:cq.vector_k]
    cosine_of: dict[str, float] = {}
    keyword_hits: list[tuple[str, float]] = []
    if one is not None or counting is not None:  # best first, equal scores in the order they were indexed
        keyword_rows: list[list[Any]] = []
        if one is not None:
            keyword_rows = next(results)
        elif counting is not None:
            keyword = part.keywords.plan(counting[0], next(results), cq.keyword_k)
            if keyword is not None:
                top, params = part.keywords.top_statement(keyword)
                keyword_rows = part.graph_key.read(keyword_search(search=top), params | keyword_options)
        remember([r[3] for r in keyword_rows if r[3] is not None])
        keyword_hits = [(str(i), float(s)) for i, s, _, _ in keyword_rows]
        cosine_of.update((str(i), _sim(d)) for i, _, d, _ in keyword_rows)
    in_range: list[str] = []
    if cq.time_range is not None:
        timed = [(str(i), _sim(d)) for i, d in next(results)]
        cosine_of.update(timed)
        sims = np.fromiter((c for _, c in timed), dtype=np.float32, count=len(timed))
        in_range = [timed[int(j)][0] for j in np.argsort(-sims, kind="stable")]  # allowed ones keep this order
    latest: list[str] = []
    if cq.recent_session is not None and cq.recent_n > 0:
        recent_rows = sorted(next(results), key=lambda r: -int(r[2] or 0))
        remember([r[3] for r in recent_rows if r[3] is not None])
        latest = [str(r[0]) for r in recent_rows]
        cosine_of.update((str(r[0]), _sim(r[1])) for r in recent_rows)

    part.graph.prefetch([i for i, _ in vector_hits[:heads]] + in_range[:heads])  # a subset's, a time range's
    paths: dict[str, dict[str, float]] = {
        "vector": _keep(part, vector_hits, cq.k, allowed, every),
    }
    if cq.keywords:
        paths["keyword"] = _keep(part, keyword_hits, cq.k, allowed, every)
    if cq.time_range is not None:
        # the default keeps the allowed ids in timestamp order, then sorts them by cosine (stably)
        kept = _keep(part, [(i, 1.0) for i in in_range], cq.k, allowed, False)
        if kept:
            paths["time"] = kept
    if cq.recent_session is not None:
        paths["recent"] = _keep(part, [(i, 1.0 / (r + 1)) for r, i in enumerate(latest)], cq.recent_k,
                                allowed, every)
    # the ranking reads the nodes of the best candidates next: read them in chunks, vector path first
    part.graph.read_ahead([i for found_by in paths.values() for i in found_by])
    cosine = dict(paths["vector"])
    for path, found_by in paths.items():
        if path != "vector":
            for i in found_by:
                if i not in cosine:
                    cosine[i] = cosine_of.get(i, 0.0)
    part.remember_cosines(cq.vector, cosine_of)
    if searched is None:
        searched = np.array([s for _, s in vector_hits], dtype=np.float64)
    return Candidates(paths, searched, cosine)


def _keep(part: FalkorPartition, pairs: Sequence[tuple[str, float]], limit: int, allowed: Predicate,
          every: bool) -> dict[str, float]:
    """The first ``limit`` pairs whose id is allowed (all, with ``every``), reading the nodes
    ahead in chunks when admission runs past those already read."""
    if every:
        return dict(pairs[:limit])
    values: dict[str, float] = {}
    known = part.graph.cache.nodes
    for n, (node_id, value) in enumerate(pairs):
        if node_id not in known:
            part.graph.prefetch([i for i, _ in pairs[n:n + _CHUNK]])
        if allowed(node_id):
            values[node_id] = value
            if len(values) == limit:
                break
    return values


# -- the graph walk ---------------------------------------------------------------------------
def _steps_over(part: FalkorPartition, spec: WalkSpec) -> bool:
    """Whether a walk reads backchannels' own edges to step over them: ``spec.step_over``, unless
    this call's view says the graph has never held a backchannel (`ReadCache.chatter` False)."""
    return spec.step_over and part.graph.cache.chatter is not False


def walk(part: FalkorPartition, seeds: dict[str, float], spec: WalkSpec, walkable: Predicate | None
         ) -> dict[str, float]:
    """`Partition.expand`: `spread_max` with each hop's edges read for the whole frontier; with
    ``spec.step_over``, each backchannel's own edges read in the same statement
    (`cypher.WALK_HOP_THROUGH`) and stepped over (`scoring.step_over`), unless the call's view
    says the graph has never held one (`ReadCache.chatter`: plain `cypher.WALK_HOP` then)."""
    factors = spec.factors
    through_hop = _steps_over(part, spec)
    links: dict[str, list[tuple[str, float]]] = {}
    through: dict[str, list[tuple[str, float]]] = {}  # a backchannel's edges to memories that are not
    chatter: set[str] = set()  # the backchannels the hops have met
    cache = part.graph.cache
    present = cache.present
    codes: dict[str, int] = {}  # each edge type's `_code`

    def weigh(edges: list[tuple[bool, int, int, str, str, float]]) -> list[tuple[str, float]]:
        """The edges, sorted in `order_edges`'s order, as (other end, weight) of the walked types."""
        edges.sort()
        weighted = []
        for _, _, _, other, kind, strength in edges:
            code = codes.get(kind)
            if code is None:
                code = codes[kind] = _code(kind, len(factors))
            factor = factors[code]
            if factor is not None:
                weighted.append((other, (strength if strength < 1.0 else 1.0) * factor))  # min(1.0, strength) * factor
        return weighted

    hops = [0]
    room = max(AHEAD, math.ceil(_AHEAD_PER_SEED * len(seeds)))  # nodes each hop's request reads

    def fetch(ids: list[str]) -> None:
        wanted = [i for i in dict.fromkeys(ids) if i not in links]
        if not wanted:
            return
        hops[0] += 1
        # from the second hop on, the cosines of the memories the previous hops reached, most
        # reachable first, ride along (the ranking asks for those of the best of them)
        cosines = part.vectors.cosines_ahead(present) if hops[0] > 1 else None
        # so do the nodes the ranking asks for first: with the first hop the seeds (the best
        # candidates), with a later one the hop's own frontier (the best the walk reached), each
        # followed by the head of the read-ahead list (one round trip, not two)
        ahead = part.graph.next_ahead(list(seeds) if hops[0] == 1 else wanted, room)
        statements: list[tuple[str, dict[str, Any]]] = [
            (q.WALK_HOP_THROUGH if through_hop else q.WALK_HOP, {"ids": wanted})]
        if ahead:
            statements.append((q.NODES_AMONG, {"ids": ahead}))
        if cosines is not None:
            statements.append(cosines[1])
        results = part.graph_key.read_many(statements)
        rows = results[0]
        if ahead:
            part.graph.absorb(ahead, results[1])
        if cosines is not None:
            part.vectors.keep_cosines(cosines[0], results[-1])
        # each node's edges in `order_edges`'s order: sorted on (in-edge, seq, place in the reply)
        grouped: dict[str, list[tuple[bool, int, int, str, str, float]]] = {i: [] for i in wanted}
        if through_hop:
            seen: set[tuple[str, str, str, bool]] = set()
            beyond: dict[str, dict[tuple[str, str, bool], tuple[bool, int, int, str, str, float]]] = {}
            for n, row in enumerate(rows):
                node_id, other, kind, strength, seq, out, flag = row[:7]
                if not flag:  # one row per edge
                    grouped[str(node_id)].append((not out, int(seq or 0), n, str(other), str(kind), float(strength)))
                    continue
                # a backchannel's row comes once per edge of its own: each edge kept once
                node_id, other = str(node_id), str(other)
                if (node_id, other, kind, out) not in seen:
                    seen.add((node_id, other, kind, out))
                    grouped[node_id].append((not out, int(seq or 0), n, other, str(kind), float(strength)))
                chatter.add(other)
                own = beyond.setdefault(other, {})
                far, kind2, strength2, seq2, out2 = row[7:]
                if far is not None and (str(far), kind2, out2) not in own:
                    own[(str(far), kind2, out2)] = (not out2, int(seq2 or 0), n, str(far), str(kind2), float(strength2))
                    present.add(str(far))
            for other, own in beyond.items():
                if other not in through:
                    through[other] = weigh(list(own.values()))
        else:
            for n, (node_id, other, kind, strength, seq, out) in enumerate(rows):
                grouped[str(node_id)].append((not out, int(seq or 0), n, str(other), str(kind), float(strength)))
        present.update(str(r[1]) for r in rows)  # each other end is a memory on the server: `has` need not read it
        for node_id, edges in grouped.items():
            links[node_id] = weigh(edges)
        reach: dict[str, float] = {}  # what each other end may receive: the order its node is read in
        nodes = cache.nodes
        edges_of = step if chatter else links.__getitem__  # past a backchannel when there is one
        for node_id in wanted:
            act = seeds.get(node_id, 1.0)
            for other, w in edges_of(node_id):
                if other not in nodes:
                    passed, held = act * w, reach.get(other)  # reach[other] = max(held or 0.0, passed)
                    reach[other] = (passed if passed > 0.0 else 0.0) if held is None else \
                        (passed if passed > held else held)
        part.graph.read_ahead(sorted(reach, key=lambda i: -reach[i]))

    frontier: list[str] = [i for i, s in seeds.items() if s > spec.min_activation]
    admitted: list[str] = []

    def neighbours(node_id: str) -> list[tuple[str, float]]:
        if node_id not in links:
            if node_id in through:  # a backchannel stepped over: its edges came with the hop that met it
                return through[node_id]
            fetch([node_id, *frontier, *admitted])  # the first node of a hop: read the hop's frontier at once
        return links[node_id]

    step = step_over(neighbours, chatter.__contains__) if through_hop else neighbours

    def walks_on(node_id: str) -> bool:
        ok = walkable is None or walkable(node_id)
        if ok:
            admitted.append(node_id)
        return ok

    return spread_max(seeds, step, hops=spec.hops, decay=spec.decay, fanout=spec.fanout,
                      min_activation=spec.min_activation, beam=spec.beam,
                      walkable=None if walkable is None and spec.beam is None else walks_on)


# -- a one-hop walk with the nodes it reaches -------------------------------------------------
def _walked_types(factors: Sequence[float | None]) -> list[str] | None:
    """The edge types a walk with ``factors`` follows (None: any type, as an unknown one is walked
    as ``related_to``, which it follows).

    >>> _walked_types([1.0 if r is Relation.BEFORE else None for r in _RELATIONS])
    ['BEFORE']
    """
    if factors[_RELATED] is not None:
        return None
    return [q.rel_type(RELATIONS[c]) for c, f in enumerate(factors[:len(RELATIONS)]) if f is not None]


def neighbour_nodes(part: FalkorPartition, ids: Sequence[str], spec: WalkSpec) -> list[MemoryNode]:
    """`Partition.neighbour_nodes` of a one-hop ``spec``: the seeds' edges of the walked types and
    the node at each other end in one statement (with ``spec.step_over``, each backchannel's own
    edges of those types and their far ends' nodes too: `cypher.WALK_HOP_NODES_THROUGH`, unless
    the graph has never held a backchannel, `ReadCache.chatter`), then
    `spread_max` over them as `walk` runs it (each node's edges in `order_edges`'s order, weighted
    alike, backchannels stepped over). A node this call has read already keeps its first view."""
    seeds = dict.fromkeys(ids, 1.0)
    factors = spec.factors
    types = _walked_types(factors)
    if not seeds or types == []:
        return []
    through = _steps_over(part, spec)
    params: dict[str, Any] = {"ids": list(seeds)}
    statement = q.WALK_HOP_NODES_THROUGH if through else q.WALK_HOP_NODES
    if types is not None and len(types) == 1:  # that type's edges alone
        statement = q.walk_hop_nodes_of(types[0], through=through)
    elif types is not None:
        statement = q.WALK_HOP_NODES_TYPED_THROUGH if through else q.WALK_HOP_NODES_TYPED
        params["types"] = types
    rows = part.graph_key.read(statement, params)
    grouped: dict[str, list[tuple[bool, int, int, str, str, float]]] = {i: [] for i in seeds}
    beyond: dict[str, dict[tuple[str, str, bool], tuple[bool, int, int, str, str, float]]] = {}
    chatter: set[str] = set()
    seen: set[tuple[str, str, str, bool]] = set()
    nodes = part.graph.cache.nodes
    fresh: dict[str, Sequence[Any]] = {}
    width = _NODE_WIDTH
    for n, row in enumerate(rows):
        node_id, kind, strength, seq, out = row[:5]
        node_id, other = str(node_id), str(row[5])  # the other end's node: its id first
        flag = through and row[5 + width]
        if not flag:  # one row per edge
            grouped[node_id].append((not out, int(seq or 0), n, other, str(kind), float(strength)))
        elif (node_id, other, kind, out) not in seen:  # a backchannel's row comes once per edge of its own
            seen.add((node_id, other, kind, out))
            grouped[node_id].append((not out, int(seq or 0), n, other, str(kind), float(strength)))
        if other not in nodes:
            fresh[other] = row[5:5 + width]
        if flag:
            chatter.add(other)
            own = beyond.setdefault(other, {})
            kind2, strength2, seq2, out2 = row[6 + width:10 + width]
            if kind2 is not None:
                far = str(row[10 + width])
                own.setdefault(
                    (far, str(kind2), bool(out2)), (not out2, int(seq2 or 0), n, far, str(kind2), float(strength2)))
                if far not in nodes:
                    fresh[far] = row[10 + width:]
    part.graph.remember(list(fresh.values()))

    def weigh(edges: list[tuple[bool, int, int, str, str, float]]) -> list[tuple[str, float]]:
        edges.sort()
        weighted = []
        for _, _, _, other, kind, strength in edges:
            factor = factors[_code(kind, len(factors))]
            if factor is not None:
                weighted.append((other, (strength if strength < 1.0 else 1.0) * factor))
        return weighted

    links = {node_id: weigh(edges) for node_id, edges in grouped.items()}
    for other, own in beyond.items():
        links.setdefault(other, weigh(list(own.values())))
    reached = spread_max(seeds, step_over(links.__getitem__, chatter.__contains__) if through else links.__getitem__,
                         hops=1, decay=spec.decay, fanout=spec.fanout, min_activation=spec.min_activation,
                         beam=spec.beam)
    get_node = part.graph.get_node
    return [node for node_id in sorted(reached) if node_id not in seeds and (node := get_node(node_id)) is not None]
