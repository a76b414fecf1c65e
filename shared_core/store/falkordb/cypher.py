"""Every Cypher statement of the FalkorDB backend, in one place.

Memories are ``(:Memory)`` nodes of the namespace's graph; their vectors are separate
``(:Embedding {id, embedding})`` nodes, which are never updated; each namespace also has one
``(:Atlas)`` node holding its write counter (``turn``), its tracking sequence (``seq``) and the
number of vectors deleted from the vector index (``stale``). Edges are relationships typed by the
relation in upper case (``SIMILAR_TO``). Statements keep to the openCypher subset that Neo4j
also accepts, except where marked FalkorDB: the vector and full-text index procedures and
``vecf32``/``vec.cosineDistance`` (see ``docs/falkordb.md`` for what a Neo4j backend would write
instead).

Why vectors live apart: FalkorDB 4.16's HNSW index keeps a stale entry each time a node
holding a vector is updated or deleted, and those entries still count towards the k of a query
(which then returns fewer than k nodes). Memory nodes change on every recall (reinforcement), so
their vectors sit on nodes that never change, and a search asks for ``k + stale`` neighbours.

Bookkeeping properties besides the memory's own fields: ``text`` (full-text index), ``tracked``
and ``pos`` (in its session's order and the time index; ``pos`` orders a session),
``superseded`` (in ``Partition.inactive``) and ``bounded`` (it has an ``expires_at`` or a
``valid_to``: `GraphStore.bounded_nodes`); the two flags are indexed, so recall counts them
without scanning the namespace.

Result-set doubles come back with 15 significant digits, which would round POSIX times to
10 microseconds, so times are returned as two columns, ``floor(t)`` and ``t - floor(t)``, whose
sum is the stored double exactly.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...values.model import AnyRelation

__all__ = ["EDGE_COLUMNS", "NODE_COLUMNS", "NODE_FIELDS", "TIME_FIELDS"]

TIME_FIELDS = ("timestamp", "created_at", "last_accessed_at", "expires_at", "valid_from", "valid_to")
#: The stored properties of a memory, in the order `NODE_COLUMNS` returns them.
NODE_FIELDS = ("id", "content", "session_id", "weight", "importance", "access_count", "turn", "accessed_turn",
               "metadata", "pinned", "kind", *TIME_FIELDS)


def _columns(alias: str, fields: Sequence[str], times: Sequence[str]) -> str:
    out = [f"{alias}.{f}" for f in fields if f not in times]
    for f in times:
        out += [f"floor({alias}.{f})", f"{alias}.{f} - floor({alias}.{f})"]
    return ", ".join(out)


NODE_COLUMNS = _columns("n", NODE_FIELDS, TIME_FIELDS) + ", n.superseded"  # the flag rides along
EDGE_COLUMNS = ("startNode(r).id, endNode(r).id, type(r), r.strength, r.metadata, r.seq, "
                "floor(r.created_at), r.created_at - floor(r.created_at)")


def rel_type(relation: AnyRelation) -> str:
    """The relationship type of a relation (a fixed identifier, never user text)."""
    return relation.value.upper()


# -- schema -------------------------------------------------------------------------------------
RANGE_INDEX = "CREATE INDEX FOR (n:Memory) ON (n.id, n.session_id, n.timestamp)"
EMBEDDING_INDEX = "CREATE INDEX FOR (e:Embedding) ON (e.id)"
# the two flags recall counts on every call (a count over an index, not a scan of the namespace)
FLAGS_INDEX = "CREATE INDEX FOR (n:Memory) ON (n.superseded, n.bounded)"
# a graph written before the flags' index: flag its memories that may stop being current
BACKFILL_BOUNDED = ("MATCH (n:Memory) WHERE n.bounded IS NULL AND (n.expires_at IS NOT NULL OR n.valid_to IS NOT NULL) "
                    "SET n.bounded = true")


def vector_index(dim: int) -> str:  # FalkorDB; Neo4j: CREATE VECTOR INDEX ... OPTIONS {indexConfig: {...}}
    return (f"CREATE VECTOR INDEX FOR (e:Embedding) ON (e.embedding) "
            f"OPTIONS {{dimension: {int(dim)}, similarityFunction: 'cosine'}}")


FULLTEXT_INDEX = "CALL db.idx.fulltext.createNodeIndex({label: 'Memory', language: 'english'}, 'text')"  # FalkorDB
COUNTER = "MERGE (c:Atlas) ON CREATE SET c.turn = 0, c.seq = 0, c.stale = 0"
INDEXES = "CALL db.indexes() YIELD label, properties, options RETURN label, properties, options"  # FalkorDB

# -- the write counter --------------------------------------------------------------------------
NEXT_TURN = "MERGE (c:Atlas) ON CREATE SET c.turn = 0, c.seq = 0 SET c.turn = c.turn + $count RETURN c.turn"
GET_TURN = "MATCH (c:Atlas) RETURN c.turn"
ROLLBACK_TURN = "MATCH (c:Atlas) WHERE c.turn = $expected SET c.turn = $turn RETURN c.turn"

# -- nodes --------------------------------------------------------------------------------------
PUT_NODE = "MERGE (n:Memory {id: $id}) SET n += $props"
GET_NODE = f"MATCH (n:Memory {{id: $id}}) RETURN {NODE_COLUMNS}"
NODES = f"MATCH (n:Memory) RETURN {NODE_COLUMNS} ORDER BY n.turn, n.id SKIP $skip LIMIT $limit"
NODES_AMONG = f"UNWIND $ids AS id MATCH (n:Memory {{id: id}}) RETURN {NODE_COLUMNS}"
NODE_COUNT = "MATCH (n:Memory) RETURN count(n)"
NODE_IDS = "MATCH (n:Memory) RETURN n.id"
HAS_NODE = "MATCH (n:Memory {id: $id}) RETURN n.id LIMIT 1"
DELETE_NODE = "MATCH (n:Memory {id: $id}) DETACH DELETE n"

# -- edges --------------------------------------------------------------------------------------
EDGES = f"MATCH (n:Memory {{id: $id}})-[r]-(:Memory) RETURN DISTINCT {EDGE_COLUMNS}"
EDGES_AMONG = f"UNWIND $ids AS id MATCH (n:Memory {{id: id}})-[r]-(:Memory) RETURN DISTINCT id, {EDGE_COLUMNS}"
EDGE_COUNT = "MATCH (:Memory)-[r]->(:Memory) RETURN count(r)"


def put_edge(relation: AnyRelation) -> str:
    """Replace the edge (source, target, relation): delete the old one, create the new one."""
    t = rel_type(relation)
    return (f"MATCH (a:Memory {{id: $source}}), (b:Memory {{id: $target}}) "
            f"OPTIONAL MATCH (a)-[old:{t}]->(b) DELETE old "
            f"WITH DISTINCT a, b "
            f"CREATE (a)-[r:{t} {{strength: $strength, created_at: $created_at, metadata: $metadata, seq: $seq}}]->(b)")


def remove_edge(relation: AnyRelation) -> str:
    return f"MATCH (:Memory {{id: $source}})-[r:{rel_type(relation)}]->(:Memory {{id: $target}}) DELETE r"


# -- weights: decay to now, then scale, in one statement ---------------------------------------
def _current_weight(decay_unit: str, weight_model: str) -> str:
    """`shared_core.engine.recall.effective_weight` (association 0) as Cypher over ``n`` and ``turn``."""
    elapsed = "toFloat(turn - n.accessed_turn)" if decay_unit == "turns" else "($now - n.last_accessed_at)"
    elapsed = f"(CASE WHEN n.pinned THEN 0.0 ELSE {elapsed} END)"
    if weight_model == "rich":
        r = f"(CASE WHEN {elapsed} > 0 THEN exp(-$ln2 * {elapsed} / $half_life) ELSE 1.0 END)"
        accesses = "(CASE WHEN n.access_count > 0 THEN n.access_count ELSE 0 END)"
        value = f"(n.importance + log(1 + {accesses}) + $recency_gain * {r} + 0.0 - n.importance * (1.0 - {r}))"
        floored = f"(CASE WHEN $floor >= {value} THEN $floor ELSE {value} END)"
        return f"(CASE WHEN $cap <= {floored} THEN $cap ELSE {floored} END)"
    decayed = f"n.weight * exp(-$ln2 * {elapsed} / $half_life)"
    return (f"(CASE WHEN {elapsed} <= 0 THEN (CASE WHEN $floor >= n.weight THEN $floor ELSE n.weight END) "
            f"ELSE (CASE WHEN $floor >= {decayed} THEN $floor ELSE {decayed} END) END)")


def rescale(decay_unit: str, weight_model: str, *, reinforce: bool) -> str:
    """Reinforce (``min(cap, w * factor)``, one more access) or fade (``max(floor, w * factor)``)
    a memory's weight decayed to ``$now``; the turn is read from the counter in the same
    statement, so concurrent writers never lose an update."""
    scaled = "current * $factor"
    new = f"CASE WHEN $cap <= {scaled} THEN $cap ELSE {scaled} END" if reinforce else \
        f"CASE WHEN $floor >= {scaled} THEN $floor ELSE {scaled} END"
    access = ", n.access_count = n.access_count + 1" if reinforce else ""
    return (f"MATCH (n:Memory {{id: $id}}) OPTIONAL MATCH (c:Atlas) "
            f"WITH n, coalesce(c.turn, 0) AS turn "
            f"WITH n, turn, {_current_weight(decay_unit, weight_model)} AS current "
            f"SET n.weight = {new}, n.last_accessed_at = $now, n.accessed_turn = turn{access} "
            f"RETURN {NODE_COLUMNS}")


# -- sessions, time index, superseded ------------------------------------------------------------
TRACK = ("MERGE (c:Atlas) ON CREATE SET c.turn = 0, c.seq = 0 SET c.seq = c.seq + 1 "
         "WITH c MATCH (n:Memory {id: $id}) SET n.tracked = true, n.pos = coalesce(n.pos, c.seq)")
UNTRACK = "MATCH (n:Memory {id: $id}) SET n.tracked = null, n.pos = null, n.superseded = null"
_SESSION = "n.session_id = $session"
_NO_SESSION = "n.session_id IS NULL"


def session_ids(session: str | None, *, newest_first: bool = False) -> str:
    order = "DESC" if newest_first else ""
    where = _NO_SESSION if session is None else _SESSION
    return f"MATCH (n:Memory) WHERE n.tracked AND {where} RETURN n.id ORDER BY n.pos {order} LIMIT $limit"


SESSION_ITEMS = "MATCH (n:Memory) WHERE n.tracked RETURN n.session_id, n.id ORDER BY n.pos"
SESSION_POSITIONS = "UNWIND $ids AS id MATCH (n:Memory {id: id}) WHERE n.tracked RETURN n.pos"
SET_POSITIONS = "UNWIND $rows AS row MATCH (n:Memory {id: row[0]}) SET n.pos = row[1]"
BETWEEN = ("MATCH (n:Memory) WHERE n.tracked AND n.timestamp >= $start AND n.timestamp < $end "
           "RETURN n.id ORDER BY n.timestamp, n.id")
SET_SUPERSEDED = "MATCH (n:Memory {id: $id}) SET n.superseded = $flag"
IS_SUPERSEDED = "MATCH (n:Memory {id: $id}) WHERE n.superseded RETURN n.id"
SUPERSEDED = "MATCH (n:Memory) WHERE n.superseded = true RETURN n.id"  # `= true`: the flags' index answers
SUPERSEDED_AMONG = "UNWIND $ids AS id MATCH (n:Memory {id: id}) WHERE n.superseded RETURN n.id"

# -- vectors (FalkorDB: vecf32, db.idx.vector.queryNodes, vec.cosineDistance) ------------------
# adding a vector for an id that has one replaces it (a new node; the old one counts as stale)
SET_VECTORS = ("UNWIND $rows AS row OPTIONAL MATCH (old:Embedding {id: row[0]}) "
               "WITH row, old, CASE WHEN old IS NULL THEN 0 ELSE 1 END AS replaced DELETE old "
               "WITH row, replaced CREATE (:Embedding {id: row[0], embedding: vecf32(row[1])}) "
               "WITH toInteger(sum(replaced)) AS gone MERGE (c:Atlas) ON CREATE SET c.turn = 0, c.seq = 0, c.stale = 0 "
               "SET c.stale = c.stale + gone")
REMOVE_VECTORS = ("UNWIND $ids AS id MATCH (e:Embedding {id: id}) DELETE e WITH count(*) AS gone "
                  "MATCH (c:Atlas) SET c.stale = c.stale + gone")
GET_VECTOR = "MATCH (e:Embedding {id: $id}) RETURN e.embedding"
VECTOR_COUNT = "MATCH (e:Embedding) RETURN count(e)"
# the index answers cosine *distances*, best first; filters apply after the k-nearest search, and
# stale entries (see above) take places among the k: ask for k + stale
VECTOR_SEARCH = ("OPTIONAL MATCH (c:Atlas) WITH $k + coalesce(c.stale, 0) AS wanted "
                 "CALL db.idx.vector.queryNodes('Embedding', 'embedding', wanted, vecf32($query)) YIELD node, score "
                 "RETURN node.id, score ORDER BY score, node.id LIMIT $k")
VECTOR_AMONG = ("UNWIND $ids AS id MATCH (e:Embedding {id: id}) "
                "RETURN e.id, vec.cosineDistance(e.embedding, vecf32($query))")

# -- full text (FalkorDB: db.idx.fulltext.queryNodes, RediSearch query syntax) -----------------
SET_TEXTS = "UNWIND $rows AS row MATCH (n:Memory {id: row[0]}) SET n.text = row[1]"
REMOVE_TEXT = "MATCH (n:Memory {id: $id}) SET n.text = null"
TEXT_COUNT = "MATCH (n:Memory) WHERE n.text IS NOT NULL RETURN count(n)"


def text_search(*, session: bool, among: bool) -> str:
    where = []
    if session:
        where.append("node.session_id = $session")
    if among:
        where.append("node.id IN $ids")
    clause = f"WITH node, score WHERE {' AND '.join(where)} " if where else ""
    return (f"CALL db.idx.fulltext.queryNodes('Memory', $query) YIELD node, score {clause}"
            f"RETURN node.id, score ORDER BY score DESC, node.id LIMIT $k")


# -- one-round-trip forms of recall (`shared_core.store.falkordb.paths`) ----------------------
def batch_rescale(decay_unit: str, weight_model: str, *, reinforce: bool) -> str:
    """`rescale` of every id of ``$ids`` in one statement (one row per memory still there)."""
    single = rescale(decay_unit, weight_model, reinforce=reinforce)
    return "UNWIND $ids AS id " + single.replace("{id: $id}", "{id: id}")


_COSINE = "vec.cosineDistance(e.embedding, vecf32($vector))"
SUPERSEDED_COUNT = "MATCH (n:Memory) WHERE n.superseded = true RETURN count(n)"
BOUNDED_COUNT = "MATCH (n:Memory) WHERE n.bounded = true RETURN count(n)"
VECTORS_AMONG = "UNWIND $ids AS id MATCH (e:Embedding {id: id}) RETURN e.id, e.embedding"
BETWEEN_COSINE = ("MATCH (n:Memory) WHERE n.tracked AND n.timestamp >= $start AND n.timestamp < $end "
                  f"OPTIONAL MATCH (e:Embedding {{id: n.id}}) RETURN n.id, {_COSINE} ORDER BY n.timestamp, n.id")
# one hop of recall's walk: every edge of each id (self-loops aside), its direction and order,
# and the other end's cosine with $vector
WALK_HOP = ("UNWIND $ids AS id MATCH (n:Memory {id: id})-[r]-(m:Memory) WHERE m <> n "
            "WITH DISTINCT id, r, m, startNode(r) = n AS out "
            f"OPTIONAL MATCH (e:Embedding {{id: m.id}}) "
            f"RETURN id, m.id, type(r), r.strength, r.seq, out, {_COSINE}")


# `VECTOR_SEARCH` with the node of each of the first $heads hits (null after them)
VECTOR_SEARCH_NODES = ("OPTIONAL MATCH (c:Atlas) WITH $k + coalesce(c.stale, 0) AS wanted "
                       "CALL db.idx.vector.queryNodes('Embedding', 'embedding', wanted, vecf32($query)) "
                       "YIELD node, score WITH node, score ORDER BY score, node.id LIMIT $k "
                       "WITH collect([node.id, score]) AS hits UNWIND range(0, size(hits) - 1) AS rank "
                       "WITH rank, hits[rank] AS hit OPTIONAL MATCH (n:Memory {id: hit[0]}) WHERE rank < $heads "
                       f"RETURN hit[0], hit[1], CASE WHEN n IS NULL THEN null ELSE [{NODE_COLUMNS}] END "
                       "ORDER BY rank")


def session_cosine(session: str | None) -> str:
    """`session_ids` newest first, with each memory's cosine with ``$vector`` and its node."""
    where = _NO_SESSION if session is None else _SESSION
    return (f"MATCH (n:Memory) WHERE n.tracked AND {where} WITH n ORDER BY n.pos DESC LIMIT $limit "
            f"OPTIONAL MATCH (e:Embedding {{id: n.id}}) RETURN n.id, {_COSINE}, n.pos, [{NODE_COLUMNS}]")


def text_search_cosine(*, session: bool, among: bool) -> str:
    """`text_search` with each hit's cosine with ``$vector`` and its node."""
    base = text_search(session=session, among=among)
    head, _, tail = base.partition("RETURN node.id, score ")
    return (f"{head}WITH node, score {tail.replace('LIMIT $k', '')}LIMIT $k "
            f"OPTIONAL MATCH (e:Embedding {{id: node.id}}) RETURN node.id, score, {_COSINE}, "
            f"[{NODE_COLUMNS.replace('n.', 'node.')}]")
