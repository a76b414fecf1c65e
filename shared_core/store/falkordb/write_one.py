"""One memory written in one request: the Cypher of `FalkorPartition.write_batch` for a batch of one.

An ``add_memory`` is one transaction of two statements. The first (`write_one`), in this order:

1. the memory node (its turn and position the counter's next), the counters;
2. the session's newest memory (named by its ``(:Session)`` node, or the ``(:Atlas)`` node for
   memories without a session; a stale name is answered by a scan of the session, as in
   `cypher.session_heads`), renamed to the new memory;
3. the neighbour search: ``$top`` plus room for superseded hits (one more than their number, at
   most 9, counted over the flags' index) plus the index's stale entries asked of the HNSW index,
   the hits ordered by distance then id, the first k kept; each similarity is ``1 - distance``
   rounded to float32 (`f32`: what `indexes.similarity` gives on the client); the hits at or
   above ``$min`` whose memory is not superseded are kept, the first ``$top`` of them;
4. the edges, all from or to the new memory: ``before`` from the session's newest (numbered
   ``$seq``), ``similar_to`` to each neighbour kept (``$seq + 1 + i``), the caller's extra links.

The second (`STORE_VECTOR`) stores the vector node: the vector index takes no node in a statement
that searched it (FalkorDB 4.16 aborts on its own lock), and the search must not find the new
vector; in one transaction no other client's command runs between the two.

No edge is looked for before one is created (that reads the relationship matrices, which earlier
writes left to be synchronised: the dearest part of a write): the memory is new, so none of its
edges can exist. The statements write nothing when a memory with the new id exists already (a
transaction sent again after its reply was lost: it ran once) or when the graph has no
``(:Atlas)`` node (dropped by another process: the schema must be made first); the first then
returns no row, and `shared_core.store.falkordb.writes` finds out which. Otherwise it returns the
turn, the id of the memory linked from and the ids linked to.

The rounding to float32 of a Cypher expression:

>>> f32("x")
'sign(x) * vec.euclideanDistance(vecf32([x]), vecf32([0.0]))'
"""

from __future__ import annotations

import functools

__all__ = ["STORE_VECTOR", "f32", "write_one"]

#: The vector node (``$vector``, ``$raw``) of memory ``$id``, made only if that memory exists without
#: one: sent after `write_one` in one transaction (the vector index cannot take a node in a
#: statement that searched it: FalkorDB 4.16 aborts on its own lock).
STORE_VECTOR = ("MATCH (n:Memory {id: $id}) OPTIONAL MATCH (e:Embedding {id: $id}) WITH n, e WHERE e IS NULL "
                "CREATE (:Embedding {id: $id, embedding: vecf32($vector), raw: $raw}) RETURN 1")


def f32(x: str) -> str:
    """The Cypher expression of the double ``x`` rounded to the nearest float32, ties to even (what
    ``float(np.float32(x))`` gives): ``vecf32`` rounds it (a C ``float`` cast), and the euclidean
    distance of a one-element vector from 0 gives its magnitude back as a double, exactly (one
    product and a square root, each exact here); the sign is put back. Checked against numpy on
    the server, ties included (`tests/falkordb/test_writes.py`): a version of FalkorDB computing
    either step otherwise fails there. (The same rounding by exponent and spacing in plain
    arithmetic cost the server five times as much.)"""
    return f"sign({x}) * vec.euclideanDistance(vecf32([{x}]), vecf32([0.0]))"


def _search(top: int) -> str:
    """Clauses adding ``similar`` to the row: [node or null, similarity, id] of each neighbour
    kept (step 1); none when ``top`` is 0. A subquery, so that the row stays when nothing is found;
    after the memory's node (no index may be written once the vector index is searched: FalkorDB
    4.16 aborts on its own lock) and before its vector node (`STORE_VECTOR`)."""
    if top <= 0:
        return "WITH c, n, first, prev, [] AS similar "
    return ("WITH c, n, first, prev OPTIONAL MATCH (s0:Memory) WHERE s0.superseded = true "
            "WITH c, n, first, prev, count(s0) AS superseded "
            "WITH c, n, first, prev, "
            "$top + CASE WHEN superseded = 0 THEN 0 WHEN superseded < 8 THEN superseded + 1 ELSE 9 END AS k "
            "CALL { WITH c, k "
            "CALL db.idx.vector.queryNodes('Embedding', 'embedding', k + coalesce(c.stale, 0), vecf32($vector)) "
            "YIELD node, score WITH k, node.id AS hid, score ORDER BY score, hid "
            "WITH collect([hid, score]) AS found, max(k) AS k "
            "WITH found[0..coalesce(k, 0)] AS found UNWIND range(0, size(found) - 1) AS i "
            "WITH i, found[i] AS h OPTIONAL MATCH (m:Memory {id: h[0]}) "
            f"WITH i, h[0] AS hid, m, {f32('1.0 - h[1]')} AS sim ORDER BY i "
            "RETURN collect(CASE WHEN sim >= $min AND NOT coalesce(m.superseded, false) THEN [m, sim, hid] END)"
            "[0..$top] AS similar } ")


def _head(*, named: bool, linked: bool) -> str:
    """Clauses leaving ``prev``, the session's newest memory before ``n`` (null without one, or
    when ``linked`` is false: no ``before`` edge is wanted), and naming ``n`` its session's newest
    (step 3). A name is trusted while its memory is still tracked in that session; otherwise the
    session's memories before ``n`` are scanned for the largest ``pos``."""
    holder, session = ("s", "$session") if named else ("c", None)
    carried = "c, n, first, s" if named else "c, n, first"
    merge = "MERGE (s:Session {id: $session}) " if named else ""
    if not linked:
        return f"{merge}WITH {carried}, null AS prev SET {holder}.last = n.id "
    same = "session_id = $session" if session else "session_id IS NULL"
    return (f"{merge}WITH {carried}, pos, {holder}.last AS last "
            f"OPTIONAL MATCH (k:Memory {{id: last}}) WHERE k.tracked AND k.{same} "
            f"CALL {{ WITH k, pos WITH k, pos WHERE k IS NULL "
            f"OPTIONAL MATCH (p:Memory) WHERE p.{same} AND p.tracked AND p.pos < pos "
            f"WITH collect([p.pos, p]) AS found "
            f"RETURN reduce(b = [-1, null], x IN found | CASE WHEN x[0] > b[0] THEN x ELSE b END)[1] AS scanned }} "
            f"WITH {carried}, coalesce(k, scanned) AS prev SET {holder}.last = n.id ")


@functools.lru_cache(maxsize=64)
def write_one(*, top: int, session: bool, linked: bool, kinds: tuple[str, ...] = ()) -> str:
    """The statement writing memory ``$id`` (its stored properties ``$props``, as `graph.node_props`
    gives them, its BM25 terms ``$terms``, its vector ``$vector``) with its neighbours (``top`` > 0:
    ``$top``, ``$min``), its session's newest memory (``session``: ``$session`` names the session;
    else the memories without a session), a ``before`` edge from it (``linked``) and the extra
    edges ``$edges`` (rows ``[target, kind, strength, seq]``, ``kinds`` the relationship types
    they use); edges created at ``$created_at``, numbered from ``$seq``. Returns one row: the
    turn, the id linked from (or null) and the ids linked to (see the module docstring)."""
    extras = ""
    if kinds:
        creates = " ".join(f"FOREACH (_ IN CASE WHEN r[1] = '{kind}' THEN [1] ELSE [] END | "
                           f"CREATE (n)-[:{kind} {{strength: r[2], created_at: $created_at, metadata: null, "
                           f"seq: r[3]}}]->(b))" for kind in kinds)
        extras = (f"WITH n, first, prev, similar "
                  f"CALL {{ WITH n UNWIND $edges AS r MATCH (b:Memory {{id: r[0]}}) {creates} }} ")
    return (
        "MATCH (c:Atlas) OPTIONAL MATCH (x:Memory {id: $id}) WITH c, x WHERE x IS NULL "
        "WITH c, coalesce(c.seq, 0) + 1 AS pos, coalesce(c.kwseq, 0) + 1 AS kw, coalesce(c.turn, 0) + 1 AS first "
        "CREATE (n:Memory {id: $id}) "
        "SET n += $props, n.tracked = true, n.pos = pos, n.terms = $terms, n.kwseq = kw, n.turn = first, "
        "n.accessed_turn = first, c.seq = pos, c.kwseq = kw, c.turn = first, c.docs = coalesce(c.docs, 0) + 1, "
        "c.tokens = coalesce(c.tokens, 0) + size($terms) "
        f"{_head(named=session, linked=linked)}"
        f"{_search(top)}"
        "FOREACH (p IN CASE WHEN prev IS NULL THEN [] ELSE [prev] END | "
        "CREATE (p)-[:BEFORE {strength: 1.0, created_at: $created_at, metadata: null, seq: $seq}]->(n)) "
        "FOREACH (i IN range(0, size(similar) - 1) | FOREACH (m IN [x IN [similar[i][0]] WHERE x IS NOT NULL] | "
        "CREATE (n)-[:SIMILAR_TO {strength: similar[i][1], created_at: $created_at, metadata: null, "
        "seq: $seq + 1 + i}]->(m))) "
        f"{extras}"
        "RETURN first, prev.id, [h IN similar | h[2]]")
