"""`FalkorGraphStore`: the `GraphStore` of one namespace's graph on a FalkorDB server.

A memory is a ``(:Memory)`` node whose properties are the `MemoryNode` fields (metadata as a
JSON string); an edge is a relationship typed by its relation, with ``strength``,
``created_at``, ``metadata`` and ``seq`` (the order edges were put, which `edges` keeps, as the
in-process store does).

Reads within one atlas call share a `ReadCache`: the backend clears it each time it hands the
partition out (every atlas call starts that way), so a call sees the server as of its first
reads and never a previous call's view; this process's own writes update it. Searches prefetch
the nodes and edges of what they found in two statements, so a recall costs a handful of round
trips instead of one per candidate.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from ...formulas.chatter import contentless
from ...values.errors import NamespaceViolationError
from ...values.model import AnyRelation, MemoryEdge, MemoryNode
from ...values.relations import relation_of
from ..base import GraphStoreBase
from . import cypher as q
from .client import GraphKey

__all__ = ["FalkorGraphStore", "Nodes", "next_seq", "node_from_row", "node_props"]

_PLAIN = [f for f in q.NODE_FIELDS if f not in q.TIME_FIELDS]
_PAGE = 5000
_EDGE_BATCH = 4000
AHEAD = 32  # nodes read at once from the walk's read-ahead list
# nodes read at once when a call asks for one of the read-ahead list that it lacks: the ranking,
# past what the walk's hops read, asks for many more on a chat's namespace, one chunk at a time
MISS_CHUNK = 96
_UNREAD: Any = object()


def _time(hi: Any, lo: Any) -> float | None:
    return None if hi is None else float(hi) + float(lo)


def _metadata(text: Any) -> dict[str, Any]:
    if not text:
        return {}
    value = json.loads(text)
    return value if isinstance(value, dict) else {}


_AT = {f: i for i, f in enumerate(_PLAIN)}  # each plain field's column, then each time field's two
_AT.update({f: len(_PLAIN) + 2 * i for i, f in enumerate(q.TIME_FIELDS)})
(_ID, _CONTENT, _SESSION, _WEIGHT, _IMPORTANCE, _ACCESS_COUNT, _TURN, _ACCESSED_TURN, _METADATA, _PINNED, _KIND,
 _TIMESTAMP, _CREATED_AT, _LAST_ACCESSED_AT, _EXPIRES_AT, _VALID_FROM, _VALID_TO) = (
    _AT[f] for f in ("id", "content", "session_id", "weight", "importance", "access_count", "turn", "accessed_turn",
                     "metadata", "pinned", "kind", *q.TIME_FIELDS))


def node_from_row(row: Sequence[Any], namespace: str) -> MemoryNode:
    """A `MemoryNode` from the columns of `cypher.NODE_COLUMNS` (a time as two columns, its
    whole seconds and the rest: a double comes back with 15 significant digits).

    A recall reads dozens of nodes: each column is taken by its position, with no mapping built."""
    session, expires, valid_to = row[_SESSION], row[_EXPIRES_AT], row[_VALID_TO]
    return MemoryNode(
        id=str(row[_ID]), content=str(row[_CONTENT]), namespace=namespace,
        session_id=None if session is None else str(session),
        weight=float(row[_WEIGHT]), importance=float(row[_IMPORTANCE]), access_count=int(row[_ACCESS_COUNT]),
        turn=int(row[_TURN]), accessed_turn=int(row[_ACCESSED_TURN]), metadata=_metadata(row[_METADATA]),
        pinned=bool(row[_PINNED]), kind=str(row[_KIND]),
        timestamp=_time(row[_TIMESTAMP], row[_TIMESTAMP + 1]) or 0.0,
        created_at=_time(row[_CREATED_AT], row[_CREATED_AT + 1]) or 0.0,
        last_accessed_at=_time(row[_LAST_ACCESSED_AT], row[_LAST_ACCESSED_AT + 1]) or 0.0,
        expires_at=None if expires is None else float(expires) + float(row[_EXPIRES_AT + 1]),
        valid_from=_time(row[_VALID_FROM], row[_VALID_FROM + 1]) or 0.0,
        valid_to=None if valid_to is None else float(valid_to) + float(row[_VALID_TO + 1]),
    )


def node_props(node: MemoryNode) -> dict[str, Any]:
    """The stored properties of a node (``None`` removes a property)."""
    props: dict[str, Any] = {}
    for f in q.NODE_FIELDS:
        if f == "id":
            continue
        value = getattr(node, f)
        if f == "metadata":
            value = json.dumps(dict(value), allow_nan=False, separators=(",", ":")) if value else None
        elif isinstance(value, float) or f in q.TIME_FIELDS:
            value = None if value is None else float(value)
        props[f] = value
    props["bounded"] = True if node.expires_at is not None or node.valid_to is not None else None
    return props


def _edge(row: Sequence[Any]) -> MemoryEdge:
    source, target, rel, strength, metadata, _seq, hi, lo = row
    return MemoryEdge(source=str(source), target=str(target), relation=relation_of(str(rel).lower()),
                      strength=float(strength), created_at=_time(hi, lo) or 0.0, metadata=_metadata(metadata))


class _Sequence:
    """Increasing edge sequence numbers: nanoseconds, never repeated within the process."""

    def __init__(self) -> None:
        self._last = 0
        self._lock = threading.Lock()

    def next(self) -> int:
        with self._lock:
            self._last = max(self._last + 1, time.time_ns())
            return self._last


_SEQ = _Sequence()


def next_seq() -> int:
    """The next edge sequence number of this process."""
    return _SEQ.next()


class _Row:
    """A node's `cypher.NODE_COLUMNS` row, read but not yet asked for."""

    __slots__ = ("namespace", "row")

    def __init__(self, row: Sequence[Any], namespace: str) -> None:
        self.row, self.namespace = row, namespace


class Nodes(dict[str, MemoryNode | None]):
    """A call's nodes by id (None: no such memory). A row read ahead becomes a `MemoryNode` only
    when it is first asked for: a recall reads its candidates' nodes in chunks, and its ranking
    stops after scoring a fraction of them.

    >>> row = ["m1", "text", None, 1.0, 1.0, 0, 1, 1, None, False, "memory", *[0.0] * 12, None]
    >>> nodes = Nodes()
    >>> nodes.keep("m1", row, "ns")
    >>> "m1" in nodes, nodes.get("m1").content, nodes["m1"] is nodes.get("m1")
    (True, 'text', True)
    >>> nodes.keep("m2", ["m2", *row[1:]], "ns")
    >>> nodes.pop("m2").id, sorted(nodes)
    ('m2', ['m1'])
    """

    __slots__ = ()

    def keep(self, node_id: str, row: Sequence[Any], namespace: str) -> None:
        """Keep ``row``, the node ``node_id`` of ``namespace``, to be made a node when asked for."""
        unread: Any = _Row(row, namespace)
        dict.__setitem__(self, node_id, unread)

    def _made(self, node_id: str, value: Any) -> MemoryNode | None:
        if value.__class__ is _Row:
            value = node_from_row(value.row, value.namespace)
            dict.__setitem__(self, node_id, value)
        return value  # type: ignore[no-any-return]

    def __getitem__(self, node_id: str) -> MemoryNode | None:
        return self._made(node_id, dict.__getitem__(self, node_id))

    def get(self, node_id: str, default: Any = None) -> Any:
        return self._made(node_id, dict.get(self, node_id, default))

    def pop(self, node_id: str, *default: Any) -> Any:
        value: Any = dict.pop(self, node_id, *default)
        return node_from_row(value.row, value.namespace) if value.__class__ is _Row else value

    def setdefault(self, node_id: str, default: MemoryNode | None = None) -> MemoryNode | None:
        return self._made(node_id, dict.setdefault(self, node_id, default))

    def exists(self, node_id: str) -> bool | None:
        """Whether ``node_id`` was read as a memory (True) or as none (False); None when it was
        not read. Makes no node."""
        value = dict.get(self, node_id, _UNREAD)
        return None if value is _UNREAD else value is not None

    def absent(self, ids: Iterable[str]) -> None:
        """Record each of ``ids`` not read (kept or made) as no such memory."""
        for node_id in ids:
            if node_id not in self:
                dict.__setitem__(self, node_id, None)

    def _all(self) -> None:
        for node_id, value in list(dict.items(self)):
            self._made(node_id, value)

    def items(self) -> Any:
        self._all()
        return dict.items(self)

    def values(self) -> Any:
        self._all()
        return dict.values(self)


class ReadCache:
    """What the current atlas call has read from one graph (see the module docstring)."""

    __slots__ = ("ahead", "bounded", "chatter", "counted", "documents", "edges", "nodes", "present", "superseded",
                 "superseded_count", "turn")

    def __init__(self) -> None:
        self.nodes = Nodes()
        self.superseded: dict[str, bool] = {}
        self.edges: dict[str, list[MemoryEdge]] = {}
        self.turn: int | None = None
        self.superseded_count: int | None = None
        self.bounded: int | None = None
        self.documents: int | None = None  # BM25's documents (`FalkorKeywordIndex.one_statement`)
        # whether the graph keeps BM25's per-term counts (`FalkorKeywordIndex.counting`; None: not read)
        self.counted: bool | None = None
        # whether the graph has held a backchannel (None: not read this call); False lets a walk
        # read each hop without the step over's `OPTIONAL MATCH` (`paths.walk`)
        self.chatter: bool | None = None
        self.ahead: dict[str, None] = {}
        self.present: set[str] = set()  # ids seen on the server this call without their nodes read

    def clear(self) -> None:
        self.present.clear()
        self.superseded_count = None
        self.bounded = None
        self.documents = None
        self.counted = None
        self.chatter = None
        self.ahead.clear()
        self.nodes.clear()
        self.superseded.clear()
        self.edges.clear()
        self.turn = None


def _sorted_edges(node_id: str, rows: Sequence[Sequence[Any]]) -> list[MemoryEdge]:
    """Out-edges first, then in-edges, each in the order they were put."""
    return [_edge(r) for r in sorted(rows, key=lambda r: (r[0] != node_id, r[5] or 0))]


class FalkorGraphStore(GraphStoreBase):
    """Nodes and typed edges of one namespace, on the server."""

    def __init__(self, graph: GraphKey, namespace: str, cache: ReadCache | None = None) -> None:
        self._g = graph
        self.namespace = namespace
        self.cache = cache or ReadCache()
        self.snapshot: Callable[[], None] | None = None  # fills the cache's counts in one round trip

    def remember(self, rows: Sequence[Sequence[Any]]) -> None:
        """Keep nodes read as `cypher.NODE_COLUMNS` rows in this call's cache."""
        self._remember(rows)

    def _remember(self, rows: Sequence[Sequence[Any]]) -> None:
        keep, superseded, namespace = self.cache.nodes.keep, self.cache.superseded, self.namespace
        for row in rows:
            node_id = str(row[_ID])
            keep(node_id, row, namespace)  # made a node when asked for
            superseded[node_id] = bool(row[-1])

    def put_node(self, node: MemoryNode) -> None:
        if node.namespace != self.namespace:
            raise NamespaceViolationError(f"memory {node.id!r} belongs to namespace {node.namespace!r}, "
                                          f"not {self.namespace!r}")
        self.cache.nodes.pop(node.id, None)
        self.cache.bounded = None
        self._g.write(q.PUT_NODE, {"id": node.id, "props": node_props(node)})
        self.cache.nodes[node.id] = node

    def mark_chatter(self, flags: Iterable[tuple[str, bool]]) -> None:
        rows = [[node_id, bool(flag)] for node_id, flag in flags]
        if rows:
            self._g.write(q.SET_CHATTER, {"rows": rows})
            if any(flag for _, flag in rows):
                self.cache.chatter = True

    def is_chatter(self, node_id: str) -> bool:
        rows = self._g.read(q.GET_CHATTER, {"id": node_id})
        return bool(rows and rows[0][0])

    def summarized(self, ids: Sequence[str]) -> dict[str, list[tuple[str, bool]]]:
        """`GraphStore.summarized` in one statement (`cypher.SUMMARIZED`), none for no ids."""
        found: dict[str, list[tuple[str, bool]]] = {node_id: [] for node_id in ids}
        if found:
            for node_id, source, chatter in self._g.read(q.SUMMARIZED, {"ids": list(found)}):
                found[str(node_id)].append((str(source), bool(chatter)))
        return found

    def backfill_chatter(self) -> None:
        """Flag each memory stored without the backchannel flag (a graph written before it, a
        memory put without a batch write), computed from its content: one read, and one write
        when any lacks it."""
        missing = self._g.read(q.CHATTER_MISSING)
        if missing:
            self.mark_chatter([(str(i), contentless(str(content), _metadata(metadata), cached=False))
                               for i, content, metadata in missing])

    def get_node(self, node_id: str) -> MemoryNode | None:
        cache = self.cache.nodes
        if node_id not in cache:
            ahead = self.cache.ahead
            if node_id in ahead:  # a node the walk reached: read it with the next ones it may ask for
                del ahead[node_id]
                batch = [node_id]
                for other in list(ahead):
                    del ahead[other]
                    if other not in cache:
                        batch.append(other)
                        if len(batch) == MISS_CHUNK:
                            break
                self.prefetch(batch)
            else:
                rows = self._g.read(q.GET_NODE, {"id": node_id})
                self._remember(rows)
            cache.setdefault(node_id, None)
        return cache[node_id]

    def next_ahead(self, first: Sequence[str] = (), limit: int = AHEAD) -> list[str]:
        """``first``, then the next ids of the read-ahead list, whose nodes this call lacks (at most
        ``limit`` in all), taken off the list: a caller reads them with a statement of its own
        (`absorb`)."""
        ahead, nodes = self.cache.ahead, self.cache.nodes
        batch = [i for i in dict.fromkeys(first) if i not in nodes]
        for i in batch:
            ahead.pop(i, None)
        for other in list(ahead):
            if len(batch) >= limit:
                break
            del ahead[other]
            if other not in nodes:
                batch.append(other)
        return batch

    def absorb(self, ids: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        """Keep the `cypher.NODES_AMONG` rows read for ``ids`` (an id without a row: no node)."""
        self._remember(rows)
        self.cache.nodes.absent(ids)

    def read_ahead(self, ids: Sequence[str]) -> None:
        """Ids whose nodes the current call may ask for next, most likely first: a miss on one of
        them reads it with the next few (`get_node`)."""
        self.cache.ahead.update(dict.fromkeys(ids))

    @property
    def bounded_nodes(self) -> int | None:
        """The memories with an ``expires_at`` or a ``valid_to`` (read once per call)."""
        if self.cache.bounded is None:
            if self.snapshot is not None:
                self.snapshot()
            else:
                rows = self._g.read(q.BOUNDED_COUNT)
                self.cache.bounded = int(rows[0][0]) if rows else 0
        return self.cache.bounded

    def prefetch(self, ids: Sequence[str], *, edges: bool = False) -> None:
        """Read the nodes (and, with ``edges``, their edges and neighbours) that the cache lacks,
        in one or two statements."""
        missing = [i for i in dict.fromkeys(ids) if i not in self.cache.nodes]
        if missing:
            self._remember(self._g.read(q.NODES_AMONG, {"ids": missing}))
            self.cache.nodes.absent(missing)
        if not edges:
            return
        wanted = [i for i in dict.fromkeys(ids) if i not in self.cache.edges and self.cache.nodes.get(i)]
        if not wanted:
            return
        grouped: dict[str, list[Sequence[Any]]] = {i: [] for i in wanted}
        for row in self._g.read(q.EDGES_AMONG, {"ids": wanted}):
            grouped[str(row[0])].append(row[1:])
        ends: list[str] = []
        for node_id, rows in grouped.items():
            found = self.cache.edges[node_id] = _sorted_edges(node_id, rows)
            ends.extend(e.target if e.source == node_id else e.source for e in found)
        self.prefetch(ends)

    def remove_node(self, node_id: str) -> list[MemoryEdge]:
        removed = self.edges(node_id)
        self.cache.superseded_count = self.cache.bounded = None
        self.cache.nodes.pop(node_id, None)
        self.cache.present.discard(node_id)
        self._g.write(q.DELETE_NODE, {"id": node_id})
        self.cache.nodes[node_id] = None
        for e in removed:
            self._forget_edges(e.source, e.target)
        return removed

    def _forget_edges(self, *ids: str) -> None:
        for i in ids:
            self.cache.edges.pop(i, None)

    def put_edge(self, edge: MemoryEdge) -> None:
        metadata = json.dumps(dict(edge.metadata), allow_nan=False, separators=(",", ":")) if edge.metadata else None
        self._forget_edges(edge.source, edge.target)
        self._g.write(q.put_edge(edge.relation), {
            "source": edge.source, "target": edge.target, "strength": float(edge.strength),
            "created_at": float(edge.created_at), "metadata": metadata, "seq": _SEQ.next()})

    def remove_edge(self, source: str, target: str, relation: AnyRelation) -> bool:
        if not any(e.target == target and e.relation == relation and e.source == source for e in self.edges(source)):
            return False
        self._forget_edges(source, target)
        self._g.write(q.remove_edge(relation), {"source": source, "target": target})
        return True

    def edges(self, node_id: str) -> list[MemoryEdge]:
        """Out-edges first, then in-edges, each in the order they were put."""
        found = self.cache.edges.get(node_id)
        if found is None:
            # a walk asks for the edges of the nodes it just reached: load those of every node
            # read in this call at once, with the nodes at their other ends
            pending = [i for i, n in list(self.cache.nodes.items()) if n is not None and i not in self.cache.edges]
            if node_id in pending and len(pending) <= _EDGE_BATCH:
                self.prefetch(pending, edges=True)
            found = self.cache.edges.get(node_id)
            if found is None:
                found = self.cache.edges[node_id] = _sorted_edges(node_id, self._g.read(q.EDGES, {"id": node_id}))
        return list(found)

    def links(self, node_id: str) -> list[tuple[str, AnyRelation, float]]:
        return [(e.target if e.source == node_id else e.source, e.relation, e.strength) for e in self.edges(node_id)]

    def neighbors(self, node_id: str) -> list[tuple[str, float]]:
        return [(e.target if e.source == node_id else e.source, e.strength) for e in self.edges(node_id)]

    def nodes(self) -> Iterator[MemoryNode]:
        """Every memory in write order: a snapshot (callers may remove while iterating), read
        page by page."""
        out: list[MemoryNode] = []
        while True:
            rows = self._g.read(q.NODES, {"skip": len(out), "limit": _PAGE})
            self._remember(rows)
            out.extend(node_from_row(r, self.namespace) for r in rows)
            if len(rows) < _PAGE:
                return iter(out)

    def node_count(self) -> int:
        rows = self._g.read(q.NODE_COUNT)
        return int(rows[0][0]) if rows else 0

    def edge_count(self) -> int:
        rows = self._g.read(q.EDGE_COUNT)
        return int(rows[0][0]) if rows else 0

    def degree(self, node_id: str) -> int:
        return len(self.edges(node_id))

    def node_ids(self) -> list[str]:
        return [str(r[0]) for r in self._g.read(q.NODE_IDS)]

    def has(self, node_id: str) -> bool:
        """Whether the node exists: from this call's reads (a node read, or an id a walk's hop
        found on the server) or, failing them, one indexed lookup."""
        cache = self.cache
        read = cache.nodes.exists(node_id)
        if read is not None:
            return read
        if node_id in cache.present:
            return True
        found = bool(self._g.read(q.HAS_NODE, {"id": node_id}))
        if found:
            cache.present.add(node_id)
        else:
            cache.nodes[node_id] = None
        return found

    def __repr__(self) -> str:
        return f"FalkorGraphStore({self._g.key!r})"
