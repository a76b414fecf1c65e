"""Every Cypher statement of the FalkorDB backend, in one place.

Memories are ``(:Memory)`` nodes of the namespace's graph; their vectors are separate
``(:Embedding {id, embedding})`` nodes, which are never updated; each namespace also has one
``(:Atlas)`` node holding its write counter (``turn``), its tracking sequence (``seq``), the
number of vectors deleted from the vector index (``stale``) and BM25's counts (``docs``,
``tokens``, ``kwseq``). Edges are relationships typed by the
relation in upper case (``SIMILAR_TO``). Statements keep to the openCypher subset that Neo4j
also accepts, except where marked FalkorDB: the vector index procedure and
``vecf32``/``vec.cosineDistance`` (see ``docs/falkordb.md`` for what a Neo4j backend would write
instead).

Why vectors live apart: FalkorDB 4.16's HNSW index keeps a stale entry each time a node
holding a vector is updated or deleted, and those entries still count towards the k of a query
(which then returns fewer than k nodes). Memory nodes change on every recall (reinforcement), so
their vectors sit on nodes that never change, and a search asks for ``k + stale`` neighbours.

Bookkeeping properties besides the memory's own fields: ``terms``, ``tlen``, ``reps`` and
``kwseq`` (BM25: `shared_core.store.falkordb.bm25`), ``tracked`` and ``pos`` (in its session's
order and the time index; ``pos`` orders a session), ``superseded`` (in ``Partition.inactive``)
and ``bounded`` (it has an ``expires_at`` or a ``valid_to``: `GraphStore.bounded_nodes`); the two
flags are indexed, so recall counts them without scanning the namespace.

Result-set doubles come back with 15 significant digits, which would round POSIX times to
10 microseconds, so times are returned as two columns, ``floor(t)`` and ``t - floor(t)``, whose
sum is the stored double exactly.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

from ...values.model import AnyRelation
from . import bm25 as _terms
from .bm25 import (
    BACKFILL_REPEATS,
    BM25_COUNTS,
    HEAVY,
    REMOVE_TERMS,
    SET_TERMS,
    TERMS_COUNT,
    bm25,
    bm25_all,
    bm25_counted,
    bm25_heavy,
    bm25_scan,
    repeats,
)
from .heads import session_heads

__all__ = ["BACKFILL_REPEATS", "BM25_COUNTS", "EDGE_COLUMNS", "HEAVY", "NODE_COLUMNS", "NODE_FIELDS", "REMOVE_TERMS",
           "SET_TERMS", "TERMS_COUNT", "TIME_FIELDS", "bm25", "bm25_all", "bm25_counted", "bm25_heavy",
           "bm25_scan", "repeats"]

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


# BM25's terms: each element of the list is indexed, so `t IN n.terms` is an index lookup
TERMS_INDEX = "CREATE INDEX FOR (n:Memory) ON (n.terms)"
# the graph's (:Atlas) node, made with its counters and the flag that its memories carry BM25's
# ``tlen`` and ``reps`` (`bm25.BACKFILL_REPEATS`); `WRITE_NODES` begins with it
_MERGE_COUNTER = ("MERGE (c:Atlas) ON CREATE SET c.turn = 0, c.seq = 0, c.stale = 0, c.docs = 0, c.tokens = 0, "
                  "c.kwseq = 0, c.reps = true ")
COUNTER = _MERGE_COUNTER.rstrip()
# a graph written before the terms' index kept its text under a full-text index (RediSearch TF-IDF)
OLD_TEXTS = "MATCH (n:Memory) WHERE n.text IS NOT NULL RETURN n.id, n.text ORDER BY n.turn, n.id"
DROP_OLD_TEXTS = "MATCH (n:Memory) WHERE n.text IS NOT NULL SET n.text = null"
DROP_FULLTEXT_INDEX = "CALL db.idx.fulltext.drop('Memory')"  # FalkorDB
INDEXES = "CALL db.indexes() YIELD label, properties, options RETURN label, properties, options"  # FalkorDB
# each index's state: "OPERATIONAL" once the server has built it (`FalkorDBBackend.until_built`)
INDEX_STATES = "CALL db.indexes() YIELD label, options, status RETURN label, options, status"  # FalkorDB

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
# a memory indexed for BM25 leaves the namespace's document and token counts with it (no filter
# after the delete: FalkorDB 4.16 would drop the delete of a row filtered after it)
DELETE_NODE = ("MATCH (n:Memory {id: $id}) WITH n, n.terms AS terms DETACH DELETE n WITH terms MATCH (c:Atlas) "
               "SET c.docs = c.docs - CASE WHEN terms IS NULL THEN 0 ELSE 1 END, "
               f"c.tokens = c.tokens - coalesce(size(terms), 0) {_terms.counted(_terms.drop_counts('terms'))}")

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
#: the values of ``AtlasConfig.decay_unit`` and ``weight_model`` (`rescale`'s statements, one of each)
DECAY_UNITS = ("seconds", "turns")
WEIGHT_MODELS = ("simple", "rich")


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


@functools.lru_cache(maxsize=16)
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
# a memory given a new position (the namespace's last) is its session's newest (see `heads`)
TRACK = ("MERGE (c:Atlas) ON CREATE SET c.turn = 0, c.seq = 0 SET c.seq = c.seq + 1 "
         "WITH c MATCH (n:Memory {id: $id}) SET n.tracked = true, n.pos = coalesce(n.pos, c.seq) "
         "WITH c, n, n.pos = c.seq AS newest "
         "FOREACH (_ IN CASE WHEN newest AND n.session_id IS NULL THEN [1] ELSE [] END | SET c.last = n.id) "
         "FOREACH (_ IN CASE WHEN newest AND n.session_id IS NOT NULL THEN [1] ELSE [] END | "
         "MERGE (s:Session {id: n.session_id}) SET s.last = n.id)")
UNTRACK = "MATCH (n:Memory {id: $id}) SET n.tracked = null, n.pos = null, n.superseded = null"
_SESSION = "n.session_id = $session"
_NO_SESSION = "n.session_id IS NULL"


def session_ids(session: str | None, *, newest_first: bool = False) -> str:
    order = "DESC" if newest_first else ""
    where = _NO_SESSION if session is None else _SESSION
    return f"MATCH (n:Memory) WHERE n.tracked AND {where} RETURN n.id ORDER BY n.pos {order} LIMIT $limit"


SESSION_ITEMS = "MATCH (n:Memory) WHERE n.tracked RETURN n.session_id, n.id ORDER BY n.pos"
SESSION_POSITIONS = "UNWIND $ids AS id MATCH (n:Memory {id: id}) WHERE n.tracked RETURN n.pos"
# memories of a session reordered: they take the given positions (their own, permuted); when the
# session's newest was among them, the last of the rows, which took the largest, is the newest now
SET_POSITIONS = ("UNWIND $rows AS row MATCH (n:Memory {id: row[0]}) SET n.pos = row[1] "
                 "WITH DISTINCT 1 AS one MATCH (s:Session {id: $session}) "
                 "SET s.last = CASE WHEN s.last IN [r IN $rows | r[0]] THEN $rows[-1][0] ELSE s.last END")
SET_POSITIONS_UNNAMED = ("UNWIND $rows AS row MATCH (n:Memory {id: row[0]}) SET n.pos = row[1] "
                         "WITH DISTINCT 1 AS one MATCH (c:Atlas) "
                         "SET c.last = CASE WHEN c.last IN [r IN $rows | r[0]] THEN $rows[-1][0] ELSE c.last END")
BETWEEN = ("MATCH (n:Memory) WHERE n.tracked AND n.timestamp >= $start AND n.timestamp < $end "
           "RETURN n.id ORDER BY n.timestamp, n.id")
SET_SUPERSEDED = "MATCH (n:Memory {id: $id}) SET n.superseded = $flag"
IS_SUPERSEDED = "MATCH (n:Memory {id: $id}) WHERE n.superseded RETURN n.id"
SUPERSEDED = "MATCH (n:Memory) WHERE n.superseded = true RETURN n.id"  # `= true`: the flags' index answers
SUPERSEDED_AMONG = "UNWIND $ids AS id MATCH (n:Memory {id: id}) WHERE n.superseded RETURN n.id"

# -- vectors (FalkorDB: vecf32, db.idx.vector.queryNodes, vec.cosineDistance) ------------------
# adding a vector for an id that has one replaces it (a new node; the old one counts as stale);
# rows are [id, vector, raw]: ``raw`` the float32 bytes in base64, which a read decodes at once
# (a vector comes back as one decimal string per element, which costs a millisecond to parse)
SET_VECTORS = ("UNWIND $rows AS row OPTIONAL MATCH (old:Embedding {id: row[0]}) "
               "WITH row, old, CASE WHEN old IS NULL THEN 0 ELSE 1 END AS replaced DELETE old "
               "WITH row, replaced CREATE (:Embedding {id: row[0], embedding: vecf32(row[1]), raw: row[2]}) "
               "WITH toInteger(sum(replaced)) AS gone MERGE (c:Atlas) ON CREATE SET c.turn = 0, c.seq = 0, c.stale = 0 "
               "SET c.stale = c.stale + gone")
REMOVE_VECTORS = ("UNWIND $ids AS id MATCH (e:Embedding {id: id}) DELETE e WITH count(*) AS gone "
                  "MATCH (c:Atlas) SET c.stale = c.stale + gone")
# the raw bytes, or the vector itself where a vector was written without them (an older version)
_VECTOR = "e.raw, CASE WHEN e.raw IS NULL THEN e.embedding ELSE null END"
GET_VECTOR = f"MATCH (e:Embedding {{id: $id}}) RETURN {_VECTOR}"
VECTOR_COUNT = "MATCH (e:Embedding) RETURN count(e)"
# the index answers cosine *distances*, best first; filters apply after the k-nearest search, and
# stale entries (see above) take places among the k: ask for k + stale. FalkorDB's HNSW search
# keeps a beam of max(k, efRuntime) candidates, efRuntime 10 unless the index was made with
# another: a small k would search with a beam of 10 and miss true neighbours of a question as a
# namespace grows, so the search asks for at least `SEARCH_BREADTH` and keeps the k best (in the
# statement: graphs made by any version get it; `docs/falkordb.md`, The vector index's breadth).
SEARCH_BREADTH = 40
_BROAD_K = f"CASE WHEN $k < {SEARCH_BREADTH} THEN {SEARCH_BREADTH} ELSE $k END"
VECTOR_SEARCH = (f"OPTIONAL MATCH (c:Atlas) WITH {_BROAD_K} + coalesce(c.stale, 0) AS wanted "
                 "CALL db.idx.vector.queryNodes('Embedding', 'embedding', wanted, vecf32($query)) YIELD node, score "
                 "RETURN node.id, score ORDER BY score, node.id LIMIT $k")
VECTOR_AMONG = ("UNWIND $ids AS id MATCH (e:Embedding {id: id}) "
                "RETURN e.id, vec.cosineDistance(e.embedding, vecf32($query))")

# -- BM25: `shared_core.store.falkordb.bm25` (imported above) -----------------------------------

# -- a batch write in one round trip (`shared_core.store.falkordb.writes`) -----------------------
# rows [id, props, terms, vector, raw, repeats]: `PUT_NODE`, `TRACK`, `SET_VECTORS` and `SET_TERMS` of each, in
# order, in one statement (each memory's node, tracking, BM25 terms, per-term counts where kept
# (`bm25.counted`) and vector node; the counters once)
def _write_nodes(*, counter: str, counts: bool) -> str:
    """`WRITE_NODES` after ``counter`` (clauses leaving the (:Atlas) node ``c``), with the per-term
    counts' guarded updates (``counts``) or without them."""
    row_counts = _terms.counted(_terms.drop_counts("old") + " " + _terms.add_counts("row[2]")) if counts else ""
    return (counter
            + "WITH c, coalesce(c.seq, 0) AS seq, coalesce(c.kwseq, 0) AS base "
            "UNWIND range(0, size($rows) - 1) AS j WITH c, seq, base, j, $rows[j] AS row "
            "MERGE (n:Memory {id: row[0]}) WITH c, seq, base, j, row, n, n.terms AS old "
            "SET n += row[1], n.tracked = true, n.pos = coalesce(n.pos, seq + j + 1), "
            "n.terms = row[2], n.tlen = size(row[2]), n.reps = row[5], n.kwseq = base + j + 1 "
            f"{row_counts}"
            "WITH c, seq, base, row, old OPTIONAL MATCH (e:Embedding {id: row[0]}) "
            "WITH c, seq, base, row, old, e, CASE WHEN e IS NULL THEN 0 ELSE 1 END AS replaced DELETE e "
            "WITH c, seq, base, row, old, replaced "
            "CREATE (:Embedding {id: row[0], embedding: vecf32(row[3]), raw: row[4]}) "
            "WITH c, seq, base, toInteger(sum(replaced)) AS gone, "
            "toInteger(sum(CASE WHEN old IS NULL THEN 1 ELSE 0 END)) AS docs, "
            "toInteger(sum(size(row[2]) - coalesce(size(old), 0))) AS tokens, "
            "max(CASE WHEN row[1].chatter THEN 1 ELSE 0 END) AS chats "
            "SET c.seq = seq + size($rows), c.stale = coalesce(c.stale, 0) + gone, "
            "c.chatter = coalesce(c.chatter, false) OR chats = 1, "
            "c.docs = coalesce(c.docs, 0) + docs, c.tokens = coalesce(c.tokens, 0) + tokens, "
            "c.kwseq = base + size($rows)")


WRITE_NODES = _write_nodes(counter=_MERGE_COUNTER, counts=True)

# `WRITE_NODES` only when the first memory of $rows is not stored yet (see `write_reserving`); the counter
# matched, not merged (a MERGE after the filter ran on the row it dropped, FalkorDB 4.16). Without the
# per-term counts' updates, only where the namespace keeps none (their updates cost a statement the
# same whether they run or not: `write_reserving`'s ``counted``)
_NEW = "MATCH (c:Atlas) WITH c, $rows[0][0] AS id0 OPTIONAL MATCH (x0:Memory {id: id0}) WITH c, x0 WHERE x0 IS NULL "
_NEW_NODES = _write_nodes(counter=_NEW, counts=True)
_NEW_UNCOUNTED = _write_nodes(counter=_NEW + "AND c.dfs IS NULL ", counts=False)

# a batch's turns, reserved by the statement that writes it (appended to `WRITE_NODES`: one atomic
# step, so concurrent writers never share a turn and a refused write takes none): row j of $rows
# gets turn and accessed_turn `first + j`, the counter ends on the last; leaves `first` and `uncounted`
# (`bm25.UNCOUNTED`, after the write) in scope. An id is bound before its index lookup here and in
# `_NEW`: FalkorDB 4.16 costs `$rows[j][0]` as a lookup's key by the size of all of $rows, each row
# (a batch's write grew with its square)
RESERVE_TURNS = ("WITH DISTINCT 1 AS one MATCH (c:Atlas) WITH c, coalesce(c.turn, 0) + 1 AS first "
                 f"SET c.turn = first + size($rows) - 1 WITH first, {_terms.UNCOUNTED} AS uncounted "
                 "UNWIND range(0, size($rows) - 1) AS j WITH first, uncounted, j, $rows[j][0] AS id "
                 "MATCH (n:Memory {id: id}) "
                 "SET n.turn = first + j, n.accessed_turn = first + j WITH DISTINCT first, uncounted")


# -- each session's newest memory: `shared_core.store.falkordb.heads` (imported above) --------------


def write_reserving(kinds: Sequence[str], *, named: bool = False, unnamed: bool = False, counted: bool = True) -> str:
    """`WRITE_NODES` of ``$rows`` (the counter matched: a graph's schema is made before its first
    write) with their turns reserved (`RESERVE_TURNS`), the sessions' newest memories
    (`session_heads`, with ``named`` and ``unnamed``), then, when ``kinds`` is not empty, the
    edges of ``$edges`` and those from the sessions' newest memories (`write_edges`, in a
    subquery: the first turn's row stays whatever the edges match): one statement, returning the
    first turn and the ids of the sessions' newest memories linked from.

    Only when the first memory of ``$rows`` is not stored yet: the memories are new (their ids
    are random), so none of their edges exists and none is looked for (`write_edges`' ``new``:
    looking reads the relationship matrices, which FalkorDB then synchronises with the writes
    before it, the dearest part of a write); a statement sent again after its reply was lost
    (it ran once) writes nothing and returns no row. ``counted=False``: without the per-term
    counts' updates, and only where the namespace keeps no counts (else nothing written, no row:
    the caller sends it again counted), so a small namespace's write carries none of their cost.
    The last column is `bm25.UNCOUNTED` (the documents, while no counts are kept)."""
    heads = session_heads(named=named, unnamed=unnamed, carry="first, uncounted") if named or unnamed else \
        "WITH first, uncounted, [] AS before"
    edges = f" CALL {{ WITH before {write_edges(kinds, rows='before + $edges', new=True)} }}" if kinds else ""
    new = _NEW_NODES if counted else _NEW_UNCOUNTED
    return f"{new} {RESERVE_TURNS} {heads}{edges} RETURN first, [b IN before | b[0]], uncounted"


# `VECTOR_SEARCH` of each query vector of $queries in one statement: rows [index of the query,
# id, distance, the hit's superseded flag, k], each query's k best (by distance, then id), k being
# $top plus room for superseded hits (as `shared_core.store.base`'s default: one more than
# their number, at most 9), counted in the same statement. Its queries are new memories' own
# vectors, which a beam of 10 already finds the true neighbours of (unlike `VECTOR_SEARCH`'s
# question-like queries): no `SEARCH_BREADTH` here, the write path's cost unchanged
VECTOR_SEARCH_MANY = ("OPTIONAL MATCH (c:Atlas) WITH coalesce(c.stale, 0) AS stale "
                      "OPTIONAL MATCH (s:Memory) WHERE s.superseded = true WITH stale, count(s) AS superseded "
                      "WITH stale, $top + CASE WHEN superseded = 0 THEN 0 WHEN superseded < 8 THEN superseded + 1 "
                      "ELSE 9 END AS k UNWIND range(0, size($queries) - 1) AS qi "
                      "CALL db.idx.vector.queryNodes('Embedding', 'embedding', k + stale, vecf32($queries[qi])) "
                      "YIELD node, score WITH k, qi, node.id AS id, score ORDER BY qi, score, id "
                      "WITH k, qi, collect([id, score])[0..k] AS hits UNWIND hits AS hit "
                      "OPTIONAL MATCH (n:Memory {id: hit[0]}) RETURN qi, hit[0], hit[1], n.superseded, k")

# `VECTOR_SEARCH` as one row: the ids of the first $head hits, and the distances of them all
VECTOR_SEARCH_HEAD = VECTOR_SEARCH.replace(
    "RETURN node.id, score ORDER BY score, node.id LIMIT $k",
    "WITH node, score ORDER BY score, node.id LIMIT $k "
    "WITH collect(node.id) AS ids, collect(score) AS scores RETURN ids[0..$head], scores")


def write_edges(kinds: Sequence[str], *, after: str = "", rows: str = "$edges", new: bool = False) -> str:
    """`put_edge` (no metadata) of every row ``[source, target, kind, strength, seq]`` of ``$edges``
    (or of the list expression ``rows``) in one statement (``kinds`` the relationship types the
    rows use), run after ``after`` (a statement ending in a single row, such as `WRITE_NODES`, so
    that both are one atomic step). ``new``: no edge of a row can exist yet (each has a memory
    created by the same statement at one end), so none is looked for to be replaced."""
    creates = " ".join(f"FOREACH (_ IN CASE WHEN r[2] = '{kind}' THEN [1] ELSE [] END | "
                       f"CREATE (a)-[:{kind} {{strength: r[3], created_at: $created_at, metadata: null, "
                       f"seq: r[4]}}]->(b))"
                       for kind in kinds)
    head = f"{after} WITH DISTINCT 1 AS one " if after else ""
    replace = "" if new else "OPTIONAL MATCH (a)-[old]->(b) WHERE type(old) = r[2] DELETE old WITH DISTINCT a, b, r "
    return f"{head}UNWIND {rows} AS r MATCH (a:Memory {{id: r[0]}}), (b:Memory {{id: r[1]}}) {replace}{creates}"


# -- one-round-trip forms of recall (`shared_core.store.falkordb.paths`) ----------------------
@functools.lru_cache(maxsize=32)
def batch_rescale(decay_unit: str, weight_model: str, *, reinforce: bool, vectors: bool = True) -> str:
    """`rescale` of every id of ``$ids`` in one statement (one row per memory still there), each
    row followed by the memory's raw vector (see `SET_VECTORS`) with ``vectors`` (a `retrieve`
    returns its hits' vectors), else the nodes alone (a `build_context` returns none)."""
    single = rescale(decay_unit, weight_model, reinforce=reinforce).replace("{id: $id}", "{id: id}")
    head, _, _ = single.rpartition(" RETURN ")
    if not vectors:
        return f"UNWIND $ids AS id {head} RETURN {NODE_COLUMNS}"
    return (f"UNWIND $ids AS id {head} WITH n OPTIONAL MATCH (e:Embedding {{id: n.id}}) "
            f"RETURN {NODE_COLUMNS}, e.raw")


_COSINE = "vec.cosineDistance(e.embedding, vecf32($vector))"
SUPERSEDED_COUNT = "MATCH (n:Memory) WHERE n.superseded = true RETURN count(n)"
BOUNDED_COUNT = "MATCH (n:Memory) WHERE n.bounded = true RETURN count(n)"
# `GET_TURN`, `SUPERSEDED_COUNT`, `BOUNDED_COUNT`, BM25's documents, whether the graph has ever
# held a backchannel (``c.chatter``, set by `WRITE_NODES` and `SET_CHATTER`) and whether it keeps its
# per-term counts (``c.dfs``, `bm25.BACKFILL_COUNTS`) in one statement (one row)
COUNTERS = ("OPTIONAL MATCH (c:Atlas) WITH c.turn AS turn, c.docs AS docs, c.chatter AS chatter, c.dfs AS dfs "
            "OPTIONAL MATCH (n:Memory) WHERE n.superseded = true WITH turn, docs, chatter, dfs, count(n) AS superseded "
            "OPTIONAL MATCH (m:Memory) WHERE m.bounded = true RETURN turn, superseded, count(m), docs, chatter, dfs")
VECTORS_AMONG = f"UNWIND $ids AS id MATCH (e:Embedding {{id: id}}) RETURN e.id, {_VECTOR}"
BETWEEN_COSINE = ("MATCH (n:Memory) WHERE n.tracked AND n.timestamp >= $start AND n.timestamp < $end "
                  f"OPTIONAL MATCH (e:Embedding {{id: n.id}}) RETURN n.id, {_COSINE} ORDER BY n.timestamp, n.id")
# one hop of recall's walk: every edge of each id (self-loops aside), its direction and order (not
# the other ends' cosines: the ranking asks for a dozen of the hundreds reached, `VECTOR_AMONG`)
WALK_HOP = ("UNWIND $ids AS id MATCH (n:Memory {id: id})-[r]-(m:Memory) WHERE m <> n "
            "WITH DISTINCT id, r, m, startNode(r) = n AS out "
            "RETURN id, m.id, type(r), r.strength, r.seq, out")
# `WALK_HOP` stepping over backchannels (`WalkSpec.step_over`): each row also says whether the other
# end is one (``m.chatter``, stored on write), and for one, the row is repeated for each of its own
# edges to a memory that is not one, with that edge's far end, type, strength, order and direction
# (nulls for an other end that is not one): the step over costs no request of its own
WALK_HOP_THROUGH = ("UNWIND $ids AS id MATCH (n:Memory {id: id})-[r]-(m:Memory) WHERE m <> n "
                    "WITH DISTINCT id, r, m, startNode(r) = n AS out "
                    "OPTIONAL MATCH (m)-[r2]-(far:Memory) WHERE m.chatter AND far <> m "
                    "AND NOT coalesce(far.chatter, false) "
                    "RETURN id, m.id, type(r), r.strength, r.seq, out, m.chatter, far.id, type(r2), r2.strength, "
                    "r2.seq, startNode(r2) = m")
# the backchannel flag of memories (rows [id, flag]; `GraphStore.mark_chatter`; a true flag also sets
# the graph's ``c.chatter``, as `WRITE_NODES` does), one memory's, and the memories of a graph
# written before the flag (backfilled when it is opened)
SET_CHATTER = ("UNWIND $rows AS row MATCH (n:Memory {id: row[0]}) SET n.chatter = row[1] "
               "WITH max(CASE WHEN row[1] THEN 1 ELSE 0 END) AS chats MATCH (c:Atlas) "
               "SET c.chatter = coalesce(c.chatter, false) OR chats = 1")
GET_CHATTER = "MATCH (n:Memory {id: $id}) RETURN n.chatter"
# `GraphStore.summarized`: each summary's sources with their backchannel flag, in one statement
SUMMARIZED = "UNWIND $ids AS id MATCH (s:Memory {id: id})-[r:`SUMMARIZES`]->(t:Memory) RETURN id, t.id, t.chatter"
CHATTER_MISSING = "MATCH (n:Memory) WHERE n.chatter IS NULL RETURN n.id, n.content, n.metadata"


def _walk_hop_nodes(typed: bool, pattern: str = "", *, through: bool = False) -> str:
    where = " AND type(r) IN $types" if typed else ""
    if not through:
        return (f"UNWIND $ids AS id MATCH (n:Memory {{id: id}})-[r{pattern}]-(m:Memory) WHERE m <> n{where} "
                "WITH DISTINCT id, r, m, startNode(r) = n AS out "
                f"RETURN id, type(r), r.strength, r.seq, out, {_columns('m', NODE_FIELDS, TIME_FIELDS)}, "
                "m.superseded")
    where2 = " AND type(r2) IN $types" if typed else ""
    return (f"UNWIND $ids AS hop MATCH (n:Memory {{id: hop}})-[r{pattern}]-(m:Memory) WHERE m <> n{where} "
            "WITH DISTINCT hop, r, m, startNode(r) = n AS out "
            f"OPTIONAL MATCH (m)-[r2{pattern}]-(far:Memory) WHERE m.chatter AND far <> m "
            f"AND NOT coalesce(far.chatter, false){where2} "
            f"RETURN hop, type(r), r.strength, r.seq, out, {_columns('m', NODE_FIELDS, TIME_FIELDS)}, "
            f"m.superseded, m.chatter, type(r2), r2.strength, r2.seq, startNode(r2) = m, "
            f"{_columns('far', NODE_FIELDS, TIME_FIELDS)}, far.superseded")


#: `WALK_HOP`'s columns but the other end's id, then the other end's (`NODE_COLUMNS` of ``m``, its
#: id first): a one-hop walk with the nodes it reaches; `WALK_HOP_NODES_TYPED`: only the edges
#: whose type is in ``$types``
WALK_HOP_NODES = _walk_hop_nodes(False)
WALK_HOP_NODES_TYPED = _walk_hop_nodes(True)
#: how every `walk_hop_nodes_of` statement begins
WALK_HOP_NODES_OF = "UNWIND $ids AS id MATCH (n:Memory {id: id})-[r:`"
#: `WALK_HOP_NODES` and `WALK_HOP_NODES_TYPED` stepping over backchannels (`WalkSpec.step_over`, as
#: `WALK_HOP_THROUGH`): after the other end's node, its flag, and for a backchannel the row repeated
#: for each of its own edges (of the same types) to a memory that is not one: that edge's type,
#: strength, order and direction, and the node at its far end (`NODE_COLUMNS` of ``far``)
WALK_HOP_NODES_THROUGH = _walk_hop_nodes(False, through=True)
WALK_HOP_NODES_TYPED_THROUGH = _walk_hop_nodes(True, through=True)
#: how every `walk_hop_nodes_of` statement stepping over backchannels begins
WALK_HOP_NODES_THROUGH_OF = "UNWIND $ids AS hop MATCH (n:Memory {id: hop})-[r:`"


@functools.lru_cache(maxsize=64)
def walk_hop_nodes_of(kind: str, *, through: bool = False) -> str:
    """`WALK_HOP_NODES` (`WALK_HOP_NODES_THROUGH` with ``through``) over the edges of one
    relationship type (`rel_type`, a fixed identifier): the traversal reads that type's edges
    alone, where `WALK_HOP_NODES_TYPED` reads every edge and filters (the same rows, in the same
    order). The type is in the text (a pattern's type cannot be a parameter): one cached plan per
    type. For several types the filter stays (a pattern of several types reads their union, which
    cost the server more than the filter).

    >>> walk_hop_nodes_of("BEFORE").startswith(WALK_HOP_NODES_OF + "BEFORE`]-(m:Memory)")
    True
    >>> walk_hop_nodes_of("BEFORE", through=True).startswith(WALK_HOP_NODES_THROUGH_OF + "BEFORE`]-(m:Memory)")
    True
    """
    return _walk_hop_nodes(False, f":`{kind}`", through=through)


# `VECTOR_SEARCH` with the node of each of the first $heads hits (null after them)
VECTOR_SEARCH_NODES = (f"OPTIONAL MATCH (c:Atlas) WITH {_BROAD_K} + coalesce(c.stale, 0) AS wanted "
                       "CALL db.idx.vector.queryNodes('Embedding', 'embedding', wanted, vecf32($query)) "
                       "YIELD node, score WITH node, score ORDER BY score, node.id LIMIT $k "
                       "WITH collect([node.id, score]) AS hits UNWIND range(0, size(hits) - 1) AS rank "
                       "WITH rank, hits[rank] AS hit OPTIONAL MATCH (n:Memory {id: hit[0]}) WHERE rank < $heads "
                       f"RETURN hit[0], hit[1], CASE WHEN n IS NULL THEN null ELSE [{NODE_COLUMNS}] END "
                       "ORDER BY rank")


def _node_cell(nodes: bool) -> str:
    """The node of ``n`` as one list cell, or null (its admission will not be asked)."""
    return f"[{NODE_COLUMNS}]" if nodes else "null"


def session_cosine(session: str | None, *, nodes: bool = True) -> str:
    """`session_ids` newest first, with each memory's cosine with ``$vector`` and (``nodes``) its node."""
    where = _NO_SESSION if session is None else _SESSION
    return (f"MATCH (n:Memory) WHERE n.tracked AND {where} WITH n ORDER BY n.pos DESC LIMIT $limit "
            f"OPTIONAL MATCH (e:Embedding {{id: n.id}}) RETURN n.id, {_COSINE}, n.pos, {_node_cell(nodes)}")


def bm25_cosine(*, session: bool, among: bool, nodes: bool = True, search: Callable[..., str] = bm25) -> str:
    """``search`` (`bm25`, `bm25_heavy`, `bm25_all` or `bm25_counted`) with each hit's cosine with ``$vector``
    and (``nodes``) its node."""
    return search(session=session, among=among, tail=(
        f"OPTIONAL MATCH (e:Embedding {{id: n.id}}) RETURN n.id, score, {_COSINE}, {_node_cell(nodes)}"))
