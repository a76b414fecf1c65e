"""A batch write in two round trips: `FalkorPartition.write_batch`.

It stores what `shared_core.store.base`'s default `write_batch` stores over the same server (the
same nodes, vectors, BM25 terms, session order, and edges with the same strengths in the same
order), with the server asked twice instead of several times per memory:

1. one read: each new vector's nearest stored memories (with their superseded flag, so
   superseded ones are dropped without asking again); in an atlas call whose partition was
   handed out without a request (`FalkorDBBackend.partition`), ``EXISTS`` rides along;
2. one write: `cypher.WRITE_NODES` of the nodes (their backchannel flag a property) with their
   tracking (session order and time index), BM25 terms and vector nodes, the counters once, the
   turns' reservation (`cypher.RESERVE_TURNS`: the statement takes the next turns from the
   counter and answers the first), each session's newest memory before the batch (the source of the ``before`` edge to
   the batch's first memory of the session: `cypher.write_reserving`'s heads) and the edges
   (`cypher.write_edges`), each numbered as `put_edge` would number it (a head's number is
   taken whether or not the session had a memory: numbers only order edges). BM25's per-term
   counts: a batch of one statement is sent without their updates while this process has not
   seen the namespace keep them, on the condition that it keeps none (else it is refused, and
   sent again with them); a larger batch's statements carry the updates, run only where the
   counts are kept (`bm25.counted`). A write that leaves the namespace large enough to keep them
   without them is followed by their one-time count (`FalkorKeywordIndex.count_terms`; a larger
   batch sends it with its statements).

A statement is atomic (the server undoes one that fails part-way), so a batch of up to 512
memories, an ``add_memory`` among them, is written whole or not at all, turns included: the
nodes are built (`WriteBatch.build`) before the write with the turns the counter promised when
last read, and built again with the turns the statement answers if another process took turns
in between. The statement writes only if the batch's first memory is not stored yet, and then
creates its edges without looking for old ones (the memories are new): a request sent again
after its reply was lost writes nothing, and the turns are read back from the stored memory.
A larger batch reserves its turns first (`Partition.next_turn`), reads each
session's newest memory with its search (step 1), and is written 512 memories a statement; one
refused after the first statements leaves their memories, which the engine removes (as after
any failed write), and gives the turns back.

The edges' rows, one per (source, target, relation), the later of two kept:

>>> from shared_core.values.model import Relation
>>> rows = _edge_rows([("a", "b", Relation.SIMILAR_TO, 0.5), ("b", "c", Relation.BEFORE, 1.0),
...                    ("a", "b", Relation.SIMILAR_TO, 0.75)])
>>> [row[:4] for row in rows]
[['b', 'c', 'BEFORE', 1.0], ['a', 'b', 'SIMILAR_TO', 0.75]]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol

import numpy as np

from ...values.errors import BackendError, NamespaceViolationError
from ...values.model import AnyRelation, MemoryNode, Relation
from ..contract import WriteBatch
from ..vector_math import batch_pairs, merge_links
from . import cypher as q
from .bm25 import BACKFILL_COUNTS
from .client import GraphKey, Literal
from .graph import FalkorGraphStore, next_seq, node_props
from .heads import session_heads
from .indexes import FalkorKeywordIndex, FalkorVectorIndex, quote

__all__ = ["node_statements", "write_batch"]

Statement = tuple[str, dict[str, Any]]
_ROWS = 512  # memories per node statement
#: The source of a `BEFORE` edge from a session's newest memory, which the write statement finds.
_HEAD: Any = object()


class Target(Protocol):
    """What the batch write needs of its partition (`FalkorPartition`; named here, not imported,
    so that the partition can import this module)."""

    @property
    def namespace(self) -> str: ...

    @property
    def graph_key(self) -> GraphKey: ...

    @property
    def vectors(self) -> FalkorVectorIndex: ...

    @property
    def keywords(self) -> FalkorKeywordIndex: ...

    @property
    def known_turn(self) -> int | None: ...

    def next_turn(self, count: int = 1) -> int: ...

    def give_back(self, first: int) -> None: ...

    def read_checked(self, statements: Sequence[Statement]) -> list[list[list[Any]]]: ...

    def took_turns(self, first: int, count: int) -> None: ...

    def written(self, nodes: Sequence[MemoryNode], touched: Iterable[str] | None) -> None: ...

    @property
    def graph(self) -> FalkorGraphStore: ...


def _sim(distance: Any) -> float:
    return float(np.float32(1.0 - float(distance)))


def write_batch(part: Target, batch: WriteBatch) -> list[MemoryNode]:
    """`Partition.write_batch` in two round trips (see the module docstring)."""
    count = batch.count
    if not count:
        return []
    whole = count <= _ROWS  # one statement: the turns are reserved by the write itself
    first = (part.known_turn or 0) + 1 if whole else part.next_turn(count)
    try:
        nodes = _write(part, batch, first, whole)
    except BaseException:
        if not whole:
            part.give_back(first)
        raise
    return nodes


def _write(part: Target, batch: WriteBatch, first: int, whole: bool) -> list[MemoryNode]:
    nodes = list(batch.build(first))
    if len(nodes) != batch.count:
        raise ValueError(f"WriteBatch.build gave {len(nodes)} nodes for {batch.count} vectors")
    for node in nodes:
        if node.namespace != part.namespace:
            raise NamespaceViolationError(f"memory {node.id!r} belongs to namespace {node.namespace!r}, "
                                          f"not {part.namespace!r}")
    ids = [n.id for n in nodes]
    vectors = np.asarray(batch.vectors, dtype=np.float32)
    top = batch.similar_top
    sessions = [n.session_id for n in nodes]
    # -- 1. the reads ------------------------------------------------------------------------
    encoded: list[tuple[Literal, str]] = []  # each vector's text and raw bytes, for the search and the write
    part.vectors.add(ids, vectors, rows=encoded)
    terms: list[list[str]] = []
    part.keywords.add_many(batch.keyword_rows(nodes), terms=terms)
    reads: list[Statement] = []
    if top > 0:
        queries = Literal("[" + ",".join(text for text, _ in encoded) + "]")
        reads.append((q.VECTOR_SEARCH_MANY, {"top": top, "queries": queries}))
    # each session's newest memory: found by the write statement itself (`cypher.write_reserving`),
    # or read here for a batch written in several statements
    first_of: list[str | None] = list(dict.fromkeys(sessions)) if batch.link_temporal and not whole else []
    reads += [(q.session_ids(s, newest_first=True), {"limit": 1} if s is None else {"limit": 1, "session": s})
              for s in first_of]
    results = part.read_checked(reads)
    searched = 1 if top > 0 else 0
    similar: list[list[tuple[str | int, float]]] = [[] for _ in ids]
    if top > 0:
        found: list[list[tuple[str, float, bool]]] = [[] for _ in ids]
        rows = sorted(results[0], key=lambda row: (int(row[0]), float(row[2]), str(row[1])))
        spare = int(rows[0][4]) - top if rows else 0  # the statement's room for superseded hits
        for qi, i, d, flag, _ in rows:
            found[int(qi)].append((str(i), _sim(d), bool(flag)))
        hits = [[(i, s) for i, s, _ in found_of if s >= batch.min_similarity] for found_of in found]
        flagged = {i for found_of in found for i, _, flag in found_of if flag}
        merged = merge_links(hits, *batch_pairs(vectors, batch.min_similarity), top + spare)
        similar = [[h for h in row if not (isinstance(h[0], str) and h[0] in flagged)][:top] if spare else row[:top]
                   for row in merged]
    latest = {s: (str(rows[0][0]) if rows else None) for s, rows in zip(first_of, results[searched:], strict=True)}
    # -- the edges, in the default's order ---------------------------------------------------
    links: list[tuple[str, str, AnyRelation, float]] = []
    last: dict[str | None, str | None] = dict(latest)
    for node_id, session, extra, hits_of in zip(ids, sessions, batch.links, similar, strict=True):
        if batch.link_temporal:
            previous = last.get(session, _HEAD)  # _HEAD: the statement finds it (whole batches)
            if previous is not None:
                links.append((previous, node_id, Relation.BEFORE, 1.0))
            last[session] = node_id
        for other, sim in hits_of:
            links.append((node_id, other if isinstance(other, str) else ids[other], Relation.SIMILAR_TO, sim))
        if extra:
            links.extend((node_id, target, relation, strength) for target, relation, strength in extra)
    # -- 2. the write -------------------------------------------------------------------------
    flags = [flag for _, flag in batch.chatter_flags(nodes)]
    writes = node_statements(nodes, encoded, terms, flags)
    head_seq: dict[str, int] = {}  # the first memory of a session -> the number of its `before` edge
    edges: list[list[Any]] = []
    for row in _edge_rows(links):
        if row[0] is _HEAD:
            head_seq[row[1]] = row[4]
        else:
            edges.append(row)
    # each session of the batch: [session, first id, seq of the edge from the session's newest, last id]
    ends: dict[str | None, list[Any]] = {}
    for node_id, session in zip(ids, sessions, strict=True):
        ends.setdefault(session, [session, node_id, head_seq.get(node_id), node_id])[3] = node_id
    named = [row for session, row in ends.items() if session is not None]
    unnamed = ends[None][1:] if None in ends else None
    kinds = sorted({r[2] for r in edges} | ({q.rel_type(Relation.BEFORE)} if head_seq else set()))
    params: dict[str, Any] = {"edges": edges, "created_at": float(batch.created_at)} if kinds else {}
    if named:
        params["sessions"] = named
    if unnamed is not None:
        params["null_session"] = unnamed
    touched: set[str] = set()
    unknown = False  # which memories' edges changed is not known (every edge of the call is read again)
    if whole:
        _, node_params = writes[0]
        kept = part.keywords.kept  # as this process last saw it: the write is refused if it turned on
        answer = part.graph_key.write(q.write_reserving(kinds, named=bool(named), unnamed=unnamed is not None,
                                                        counted=kept), {**node_params, **params})
        if not answer and not kept and not part.graph_key.read(q.HAS_NODE, {"id": ids[0]}):
            part.keywords.kept = True  # refused: the namespace keeps its per-term counts now
            answer = part.graph_key.write(q.write_reserving(kinds, named=bool(named), unnamed=unnamed is not None),
                                          {**node_params, **params})
        if answer:
            reserved = int(answer[0][0])
            touched = {str(source) for source in answer[0][1]}  # the sessions' newest: their edges changed
            part.keywords.count_terms(answer[0][2])  # the namespace grew large enough: count its stems once
        else:  # the batch is stored already: this request ran before and its reply was lost (see `write_reserving`)
            stored = part.graph.get_node(ids[0])
            if stored is None or stored.content != nodes[0].content:
                raise BackendError(f"FalkorDB wrote nothing for memory {ids[0]!r} in namespace {part.namespace!r}")
            reserved, unknown = stored.turn, True
        part.took_turns(reserved, len(nodes))
        if reserved != first:  # another process took turns since the counter was read
            nodes = list(batch.build(reserved))
    else:  # the edges and the sessions' newest memories ride on the last node statement
        query, node_params = writes[-1]
        query = f"{query} WITH DISTINCT 1 AS one {session_heads(named=bool(named), unnamed=unnamed is not None)}"
        writes[-1] = (q.write_edges(kinds, after=query) if edges else f"{query} RETURN size(before)",
                      {**node_params, **params})
        # the one-time count of the per-term counts, should the batch make the namespace large enough
        writes.append((BACKFILL_COUNTS, {"from": part.keywords.counts_from}))
        part.graph_key.write_many(writes)
    if any(flags):  # the graph holds a backchannel now (`cypher.WRITE_NODES` set its flag): walks step over
        part.graph.cache.chatter = True
    part.written(nodes, None if unknown else
                 touched | {i for source, target, _, _ in links for i in (source, target) if i is not _HEAD})
    return nodes


def node_statements(nodes: Sequence[MemoryNode], vectors: Sequence[tuple[str, str]],
                    terms: Sequence[Sequence[str]], chatter: Sequence[bool]) -> list[Statement]:
    """`cypher.WRITE_NODES` of the nodes, `_ROWS` a statement: what `GraphStore.put_node`,
    `GraphStore.mark_chatter` (``chatter``: each node's flag, a property of its node), tracking,
    `FalkorVectorIndex.add` and `FalkorKeywordIndex.add_many` write, in one statement per chunk.
    ``vectors`` and ``terms`` are each node's, as those two give them (``rows=``, ``terms=``); the
    rows are one Cypher literal."""
    from falkordb.helpers import stringify_param_value

    out: list[Statement] = []
    for start in range(0, len(nodes), _ROWS):
        chunk = zip(nodes[start:start + _ROWS], vectors[start:start + _ROWS], terms[start:start + _ROWS],
                    chatter[start:start + _ROWS], strict=True)
        rows = ", ".join(f"[{quote(n.id)}, {stringify_param_value(node_props(n) | {'chatter': bool(flag)})}, "
                         f"{stringify_param_value(list(words))}, {text}, '{raw}', "
                         f"{stringify_param_value(q.repeats(list(words)))}]"
                         for n, (text, raw), words, flag in chunk)
        out.append((q.WRITE_NODES, {"rows": Literal(f"[{rows}]")}))
    return out


def _edge_rows(links: Sequence[tuple[str, str, AnyRelation, float]]) -> list[list[Any]]:
    """The rows of `cypher.write_edges`, as `GraphStore.put_links` puts them: each edge replaces
    one of the same (source, target, relation); a later one of the batch replaces an earlier one,
    taking its later number."""
    latest: dict[tuple[str, str, AnyRelation], tuple[float, int]] = {}
    for source, target, relation, strength in links:
        key = (source, target, relation)
        latest.pop(key, None)
        latest[key] = (float(strength), next_seq())
    return [[source, target, q.rel_type(relation), strength, seq]
            for (source, target, relation), (strength, seq) in latest.items()]
