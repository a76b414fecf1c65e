"""Storage backends: where each namespace's graph, vectors and keywords live.

A backend hands out one `Partition` per namespace. The in-process default keeps a networkx graph,
a numpy matrix and an FTS5 table per namespace; a server backend (FalkorDB) keeps one graph key per
namespace. Because each namespace is a separate partition, isolation is structural: a search, a
walk or a count only ever sees one partition.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from .graph_store import GraphStore, NetworkXGraphStore
from .keyword_index import FTS5KeywordIndex, _SharedDatabase
from .vector_index import NumpyVectorIndex, VectorIndex

__all__ = ["Backend", "InProcessBackend", "Partition"]


@dataclass(slots=True, eq=False)
class Partition:
    """Everything the atlas keeps for one namespace.

    Besides the three stores, it keeps the bookkeeping the read path needs without scanning the
    namespace: the ids of each session in write order, the ids that are superseded, and the
    memories' timestamps sorted for time-range lookups.
    """

    namespace: str
    graph: GraphStore
    vectors: VectorIndex
    keywords: FTS5KeywordIndex
    turn: int = 0
    sessions: dict[str | None, dict[str, None]] = field(default_factory=dict)
    inactive: set[str] = field(default_factory=set)
    _times: list[tuple[float, str]] = field(default_factory=list)

    def track(self, node_id: str, session_id: str | None, timestamp: float) -> None:
        self.sessions.setdefault(session_id, {})[node_id] = None
        bisect.insort(self._times, (timestamp, node_id))

    def untrack(self, node_id: str, session_id: str | None, timestamp: float) -> None:
        ids = self.sessions.get(session_id)
        if ids is not None:
            ids.pop(node_id, None)
            if not ids:
                del self.sessions[session_id]
        i = bisect.bisect_left(self._times, (timestamp, node_id))
        if i < len(self._times) and self._times[i] == (timestamp, node_id):
            del self._times[i]
        self.inactive.discard(node_id)

    def between(self, start: float, end: float) -> list[str]:
        """Ids whose timestamp lies in ``[start, end)``, oldest first."""
        lo = bisect.bisect_left(self._times, (start, ""))
        hi = bisect.bisect_left(self._times, (end, ""))
        return [node_id for _, node_id in self._times[lo:hi]]

    def latest(self, session_id: str | None, n: int) -> list[str]:
        """The last ``n`` ids written to a session, newest first."""
        ids = self.sessions.get(session_id)
        if not ids or n <= 0:
            return []
        out: list[str] = []
        for node_id in reversed(ids):
            out.append(node_id)
            if len(out) == n:
                break
        return out


@runtime_checkable
class Backend(Protocol):
    """Hands out the partition of each namespace."""

    def partition(self, namespace: str, *, create: bool = False) -> Partition | None: ...

    def namespaces(self) -> Iterator[str]: ...

    def drop(self, namespace: str) -> None: ...


class InProcessBackend:
    """networkx + numpy + SQLite FTS5, all in this process."""

    def __init__(self, *, dim: int) -> None:
        self.dim = dim
        self._db = _SharedDatabase()
        self._partitions: dict[str, Partition] = {}

    def partition(self, namespace: str, *, create: bool = False) -> Partition | None:
        part = self._partitions.get(namespace)
        if part is None and create:
            part = Partition(namespace, NetworkXGraphStore(), NumpyVectorIndex(self.dim),
                             FTS5KeywordIndex.create(self._db))
            self._partitions[namespace] = part
        return part

    def namespaces(self) -> Iterator[str]:
        return iter(list(self._partitions))

    def drop(self, namespace: str) -> None:
        part = self._partitions.pop(namespace, None)
        if part is not None:
            part.keywords.drop()
