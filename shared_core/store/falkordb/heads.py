"""Each session's newest memory, the source of the next memory's ``before`` edge: the Cypher
that a batch write (`shared_core.store.falkordb.cypher.write_reserving`,
`shared_core.store.falkordb.writes`) appends to find and name it.

A ``(:Session {id})`` node names the newest memory of its session (``last``); the (:Atlas) node
does so for the memories without a session. Every statement that gives a memory a new position
names it (`session_heads`, `cypher.TRACK`, `cypher.SET_POSITIONS`). A name is trusted only while its memory is
still tracked in that session; otherwise (forgotten, untracked, or a graph written before these
nodes) the session's memories are scanned (positions up to ``seq0``, the counter before the
batch) for the largest ``pos``.
"""

from __future__ import annotations

__all__ = ["SESSION_INDEX", "session_heads"]

SESSION_INDEX = "CREATE INDEX FOR (s:Session) ON (s.id)"
_NEWEST = "reduce(b = [-1, null], x IN found | CASE WHEN x[0] > b[0] THEN x ELSE b END)[1]"


def _scan(session: str, first: str) -> str:
    """The subquery answering ``scanned``, the newest memory of ``session`` (a Cypher expression)
    when ``k``, the memory its node names, is null and a ``before`` edge is wanted (``first``,
    the seq of that edge, not null); no scan otherwise."""
    where, carried = ("p.session_id IS NULL", "k, seq0") if session == "null" else \
        (f"p.session_id = {session}", "h, k, seq0")
    return (f"CALL {{ WITH {carried} WITH {carried} WHERE k IS NULL AND {first} IS NOT NULL "
            f"OPTIONAL MATCH (p:Memory) WHERE {where} AND p.tracked AND p.pos <= seq0 "
            f"WITH collect([p.pos, p.id]) AS found RETURN {_NEWEST} AS scanned }}")


# each row [session, first id, seq, last id] of $sessions, one per session of the batch: the
# `BEFORE` edge row (`cypher.write_edges`) from the session's newest memory before the batch to the
# batch's first memory of the session (none without one, or when seq is null), and the session's
# node naming the batch's last memory of the session
_NAMED = ("CALL { WITH seq0 UNWIND $sessions AS h MERGE (s:Session {id: h[0]}) "
          "WITH h, seq0, s, s.last AS last "
          "OPTIONAL MATCH (k:Memory {id: last}) WHERE k.tracked AND k.session_id = h[0] "
          f"WITH h, s, k, seq0 {_scan('h[0]', 'h[2]')} "
          "WITH h, s, coalesce(k.id, scanned) AS prev SET s.last = h[3] "
          "RETURN collect(CASE WHEN prev IS NOT NULL AND h[2] IS NOT NULL THEN [prev, h[1], 'BEFORE', 1.0, h[2]] END) "
          "AS named }")  # (no WHERE after the SET: FalkorDB 4.16 drops the updates of rows filtered after them)
# the same for $null_session, [first id, seq, last id], the memories without a session (named
# by the (:Atlas) node)
_UNNAMED = ("CALL { WITH seq0 MATCH (c:Atlas) WITH seq0, c, c.last AS last "
            "OPTIONAL MATCH (k:Memory {id: last}) WHERE k.tracked AND k.session_id IS NULL "
            f"WITH c, k, seq0 {_scan('null', '$null_session[1]')} "
            "WITH c, coalesce(k.id, scanned) AS prev SET c.last = $null_session[2] "
            "RETURN CASE WHEN prev IS NULL OR $null_session[1] IS NULL THEN [] "
            "ELSE [[prev, $null_session[0], 'BEFORE', 1.0, $null_session[1]]] END AS unnamed }")


def session_heads(*, named: bool, unnamed: bool, carry: str = "") -> str:
    """Clauses answering ``before``, the `BEFORE` edge rows from each session's newest memory
    before the batch to its first memory in the batch, and naming each session's newest memory
    after it (``$sessions``, ``$null_session``: see `_NAMED`), after a statement writing the batch's
    ``$rows`` (`cypher.WRITE_NODES`) that ends in one row (``carry``: variables kept, such as ``first``).
    Statements run one at a time, so two writers of one session each link from the other's
    memory."""
    keep = f"{carry}, " if carry else ""
    return (f"MATCH (c0:Atlas) WITH {keep}c0.seq - size($rows) AS seq0 "
            f"{_NAMED if named else f'WITH {keep}seq0, [] AS named'} "
            f"{_UNNAMED if unnamed else f'WITH {keep}seq0, named, [] AS unnamed'} "
            f"WITH {keep}named + unnamed AS before")
