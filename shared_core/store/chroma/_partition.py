"""In-process partitions that note what each write changes, for the chroma backend's log.

`ChromaPartition` is an `InProcessPartition` (reads stay in process) whose graph, vector index,
keyword index and superseded set mark the ids they change in a shared `Changes`. When the
atlas's write ends, the backend takes the final state of each marked memory from the partition
(`snapshot`, under the write lock) and encodes it as one log record (`to_ops`, outside it): the
record says what *is*, not what happened, so it is the same however many steps the write took.

Each tracked memory also gets a place in its session's order (``order``, a float that only
grows as memories are appended; a reorder gives the moved ids values in between), so the order
of every session can be rebuilt from the memories alone.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ...formulas.subqueries import keyword_text
from ...values._records import node_record
from ...values.model import AnyRelation, MemoryEdge
from ..memory._sessions import SessionIds, SessionMap
from ..memory.backend import InProcessPartition, TieredVectorIndex
from ..memory.entity_index import DictEntityIndex
from ..memory.graph_store import DictGraphStore
from ..memory.inverted_index import InvertedKeywordIndex
from ..vector_math import Links

__all__ = ["Changes", "ChromaPartition", "snapshot", "to_ops"]


class Changes:
    """What the current write changed: per namespace, memories, embeddings and edge sources
    (id-dicts, not sets: the record lists them in the order they were first changed, so a
    reopened graph holds its memories in the order they were written)."""

    __slots__ = ("dropped", "edges", "nodes", "vectors")

    def __init__(self) -> None:
        self.nodes: dict[str, dict[str, None]] = {}
        self.vectors: dict[str, dict[str, None]] = {}
        self.edges: dict[str, dict[str, None]] = {}
        self.dropped: list[str] = []

    def __bool__(self) -> bool:
        return bool(self.nodes or self.vectors or self.edges or self.dropped)

    def clear(self) -> None:
        self.nodes, self.vectors, self.edges, self.dropped = {}, {}, {}, []

    def node(self, ns: str, node_id: str) -> None:
        ids = self.nodes.get(ns)
        if ids is None:
            ids = self.nodes[ns] = {}
        ids[node_id] = None

    def many(self, table: dict[str, dict[str, None]], ns: str, ids: Iterable[str]) -> None:
        found = table.get(ns)
        if found is None:
            found = table[ns] = {}
        found.update(dict.fromkeys(ids))


class _Graph(DictGraphStore):
    __slots__ = ("_changes", "_ns")

    def __init__(self, changes: Changes, ns: str) -> None:
        super().__init__()
        self._changes, self._ns = changes, ns

    def put_node(self, node: Any) -> None:
        super().put_node(node)
        self._changes.node(self._ns, node.id)

    def remove_node(self, node_id: str) -> list[MemoryEdge]:
        edges = super().remove_node(node_id)
        self._changes.node(self._ns, node_id)
        self._changes.many(self._changes.edges, self._ns, (e.source for e in edges if e.source != node_id))
        return edges

    def mark_chatter(self, flags: Iterable[tuple[str, bool]]) -> None:
        rows = list(flags)
        super().mark_chatter(rows)
        self._changes.many(self._changes.nodes, self._ns, (node_id for node_id, _ in rows))

    def put_edge(self, edge: MemoryEdge) -> None:
        super().put_edge(edge)
        self._changes.many(self._changes.edges, self._ns, (edge.source,))

    def put_links(self, links: Iterable[tuple[str, str, AnyRelation, float]], *, created_at: float) -> None:
        rows = list(links)
        super().put_links(rows, created_at=created_at)
        self._changes.many(self._changes.edges, self._ns, (row[0] for row in rows))

    def remove_edge(self, source: str, target: str, relation: AnyRelation) -> bool:
        removed = super().remove_edge(source, target, relation)
        self._changes.many(self._changes.edges, self._ns, (source,))
        return removed


class _Vectors(TieredVectorIndex):
    def __init__(self, changes: Changes, ns: str, dim: int, **kwargs: Any) -> None:
        super().__init__(dim, **kwargs)
        self._changes, self._ns = changes, ns

    def add(self, ids: Sequence[str], vectors: npt.NDArray[np.float32]) -> None:
        super().add(ids, vectors)
        self._changes.many(self._changes.vectors, self._ns, ids)

    def add_and_link(self, ids: Sequence[str], vectors: npt.NDArray[np.float32], k: int, *,
                     min_similarity: float) -> Links:
        links = super().add_and_link(ids, vectors, k, min_similarity=min_similarity)
        self._changes.many(self._changes.vectors, self._ns, ids)
        return links

    def remove(self, ids: Sequence[str]) -> None:
        super().remove(ids)
        self._changes.many(self._changes.nodes, self._ns, ids)


class _Keywords(InvertedKeywordIndex):
    """Keeps each memory's keyword text (stored with the memory when it is not the one
    `keyword_text` derives from the memory's content and metadata)."""

    def __init__(self, texts: dict[str, str]) -> None:
        super().__init__()
        self.texts = texts  # id -> keyword text, every id of this index

    def add(self, node_id: str, text: str, *, session_id: str | None = None) -> None:
        super().add(node_id, text, session_id=session_id)
        self.texts[node_id] = text

    def add_many(self, rows: Sequence[tuple[str, str, str | None]]) -> None:
        super().add_many(rows)
        for node_id, text, _ in rows:
            self.texts[node_id] = text

    def remove(self, node_id: str) -> None:
        super().remove(node_id)
        self.texts.pop(node_id, None)


class _Inactive(set[str]):
    def __init__(self, changes: Changes, ns: str) -> None:
        super().__init__()
        self._changes, self._ns = changes, ns

    def add(self, node_id: str) -> None:
        super().add(node_id)
        self._changes.node(self._ns, node_id)

    def discard(self, node_id: object) -> None:
        if isinstance(node_id, str) and node_id in self:
            super().discard(node_id)
            self._changes.node(self._ns, node_id)


class _Entities(DictEntityIndex):
    """Marks each memory whose mentions change: its record carries them (``_ent``)."""

    __slots__ = ("_changes", "_ns")

    def __init__(self, changes: Changes, ns: str) -> None:
        super().__init__()
        self._changes, self._ns = changes, ns

    def add_many(self, rows: Sequence[tuple[str, Sequence[str]]]) -> None:
        super().add_many(rows)
        self._changes.many(self._changes.nodes, self._ns, (node_id for node_id, keys in rows if keys))

    def remove(self, node_id: str) -> None:
        super().remove(node_id)
        self._changes.node(self._ns, node_id)


class _Sessions(SessionMap):
    def __init__(self, store: dict[str | None, SessionIds], part: ChromaPartition) -> None:
        super().__init__(store)
        self._part = part

    def __setitem__(self, session: str | None, ids: Collection[str]) -> None:
        super().__setitem__(session, ids)
        self._part.reorder(session)


class ChromaPartition(InProcessPartition):
    """An `InProcessPartition` whose changes are noted for the log (see the module docstring)."""

    __slots__ = ("changes", "kw_texts", "next_seq", "order")

    def __init__(self, namespace: str, changes: Changes, *, dim: int, vector_args: Mapping[str, Any]) -> None:
        texts: dict[str, str] = {}
        super().__init__(namespace, _Graph(changes, namespace), _Vectors(changes, namespace, dim, **vector_args),
                         _Keywords(texts), inactive=_Inactive(changes, namespace),
                         entities=_Entities(changes, namespace))
        self.changes = changes
        self.kw_texts = texts
        self.order: dict[str, float] = {}
        self.next_seq = 0.0

    @property
    def sessions(self) -> SessionMap:
        return _Sessions(self._sessions, self)

    def note_changes(self, changes: Changes) -> None:
        """Note this partition's changes in ``changes`` from now on (a partition is built from
        the directory with changes of its own, which the log does not need)."""
        self.changes = changes
        self.graph._changes = changes  # type: ignore[attr-defined]
        self.vectors._changes = changes  # type: ignore[attr-defined]
        self.inactive._changes = changes  # type: ignore[attr-defined]

    def _place(self, node_id: str) -> None:
        self.next_seq += 1.0
        self.order[node_id] = self.next_seq
        self.changes.node(self.namespace, node_id)

    def track(self, node_id: str, session_id: str | None, timestamp: float) -> None:
        super().track(node_id, session_id, timestamp)
        self._place(node_id)

    def track_many(self, node_ids: Sequence[str], session_ids: Sequence[str | None],
                   timestamps: Sequence[float]) -> None:
        super().track_many(node_ids, session_ids, timestamps)
        for node_id in node_ids:
            self._place(node_id)

    def untrack(self, node_id: str, session_id: str | None, timestamp: float) -> None:
        super().untrack(node_id, session_id, timestamp)
        self.order.pop(node_id, None)
        self.changes.node(self.namespace, node_id)

    def reorder(self, session: str | None) -> None:
        """Give new places to the fewest ids of a reordered session: those kept (scanning from
        the end, each below the next kept) keep theirs; the others get values in between."""
        ids = list(self._sessions.get(session, ()))
        order = self.order
        keep = [False] * len(ids)
        upper = math.inf
        for k in range(len(ids) - 1, -1, -1):
            seq = order.get(ids[k])
            if seq is not None and seq < upper:
                keep[k], upper = True, seq
        following: list[float | None] = [None] * len(ids)
        nxt: float | None = None
        for k in range(len(ids) - 1, -1, -1):
            following[k] = nxt
            if keep[k]:
                nxt = order[ids[k]]
        lower: float | None = None
        for k, node_id in enumerate(ids):
            if keep[k]:
                lower = order[node_id]
                continue
            hi = following[k]
            lo = lower if lower is not None else (hi - 1.0 if hi is not None else self.next_seq)
            seq = (lo + hi) / 2 if hi is not None else lo + 1.0
            order[node_id] = lower = seq
            self.next_seq = max(self.next_seq, math.ceil(seq))
            self.changes.node(self.namespace, node_id)


def snapshot(parts: Mapping[str, ChromaPartition], changes: Changes) -> list[tuple[Any, ...]]:
    """The final state of everything ``changes`` marked, as immutable objects (nodes and edges
    are frozen; vectors are copied): cheap to take under the write lock, encoded later by
    `to_ops` outside it."""
    out: list[tuple[Any, ...]] = [("x", ns) for ns in changes.dropped]
    touched = list(dict.fromkeys([*changes.nodes, *changes.vectors, *changes.edges]))
    for ns in touched:
        part = parts.get(ns)
        if part is None:
            continue
        graph = part.graph
        new_vectors = changes.vectors.get(ns, {})
        ids = list({**changes.nodes.get(ns, {}), **new_vectors})
        wanted = [i for i in ids if i in new_vectors]
        vectors = dict(zip(wanted, part.vectors.get_many(wanted), strict=True))
        order, inactive, texts = part.order, part.inactive, part.kw_texts
        mentioned = part.entities.entities_of(ids)
        for node_id in ids:
            node = graph.get_node(node_id)
            if node is None:
                out.append(("d", ns, node_id))
                continue
            vec = vectors.get(node_id)
            out.append(("n", ns, node, order.get(node_id), node_id in inactive, texts.get(node_id),
                        None if vec is None else np.array(vec, dtype=np.float32), mentioned.get(node_id),
                        graph.is_chatter(node_id)))
        for source in changes.edges.get(ns, ()):
            if graph.get_node(source) is not None:
                out.append(("e", ns, source, [e for e in graph.edges(source) if e.source == source]))
        out.append(("t", ns, part.turn))
    return out


def to_ops(items: list[tuple[Any, ...]], dim: int) -> tuple[list[list[Any]], npt.NDArray[np.float32]]:
    """The log operations (`shared_core.store.chroma._records`) of a `snapshot`."""
    ops: list[list[Any]] = []
    rows: list[npt.NDArray[np.float32]] = []
    for item in items:
        kind = item[0]
        if kind == "n":
            _, ns, node, seq, inactive, text, vec, keys, chatter = item
            record = node_record(node)
            record["_seq"] = seq
            record["_inactive"] = inactive
            record["_chat"] = chatter
            if keys:
                record["_ent"] = keys
            if text is not None and text != keyword_text(node.content, node.metadata):
                record["_kw"] = text
            if vec is not None:
                rows.append(vec)
            ops.append(["n", ns, record, len(rows) - 1 if vec is not None else -1])
        elif kind == "e":
            ops.append(["e", item[1], item[2], [[e.target, e.relation.value, e.strength, e.created_at, dict(e.metadata)]
                                                for e in item[3]]])
        else:
            ops.append(list(item))
    matrix = np.stack(rows) if rows else np.zeros((0, dim), dtype=np.float32)
    return ops, matrix
