"""Storage backends: where each namespace's graph, vectors and keywords live.

A backend hands out one `Partition` per namespace. The in-process default keeps a dict graph,
a `TieredVectorIndex` and an `InvertedKeywordIndex` (BM25) per namespace; a server backend
(FalkorDB) keeps one graph key per namespace. Because each namespace is a separate partition,
isolation is structural: a search, a walk or a count only ever sees one partition.

Each namespace's vectors are searched exactly (one numpy matrix) while it is small, and with an
approximate inverted-file index (`shared_core.store.memory.ann_index`) once it holds ``ann_threshold`` vectors;
below half the threshold it goes back to exact. The switch is per namespace: a small tenant stays
exact next to a large one.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterator, MutableMapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from ...formulas.decay import effective_weight, reinforced_weight
from ...values.config import AtlasConfig
from ...values.model import MemoryNode, evolve
from ..base import BackendBase, PartitionBase, VectorIndexBase
from ..contract import GraphStore, Hits, Links, Ranked, Vector, VectorIndex
from ..vector_math import link_exactly
from ._directory import Directory
from ._sessions import SessionIds, SessionMap
from ._time_index import TimeIndex
from .ann_index import IVFVectorIndex, VectorDtype, ann_available
from .entity_index import DictEntityIndex
from .graph_store import DictGraphStore
from .inverted_index import InvertedKeywordIndex
from .keyword_index import FTS5KeywordIndex
from .vector_index import NumpyVectorIndex

__all__ = ["InProcessBackend", "InProcessPartition", "TieredVectorIndex"]

logger = logging.getLogger("shared_core")



@dataclass(slots=True, eq=False)
class InProcessPartition(PartitionBase):
    """The in-process `Partition`: stores and bookkeeping in this process's memory."""

    namespace: str
    graph: GraphStore
    vectors: VectorIndex
    keywords: InvertedKeywordIndex | FTS5KeywordIndex
    turn: int = 0
    inactive: set[str] = field(default_factory=set)
    entities: DictEntityIndex = field(default_factory=DictEntityIndex)
    _times: TimeIndex = field(default_factory=TimeIndex)  # ids by timestamp, for `between`
    # each session's ids in write order, sessions in first-write order: lists, not id-dicts
    # (`shared_core.store.memory._sessions`)
    _sessions: dict[str | None, SessionIds] = field(default_factory=dict)

    @property
    def sessions(self) -> SessionMap:
        return SessionMap(self._sessions)

    def next_turn(self, count: int = 1) -> int:
        first = self.turn + 1
        self.turn += count
        return first

    def track(self, node_id: str, session_id: str | None, timestamp: float) -> None:
        self._session_ids(session_id).append(node_id)
        self._times.add(timestamp, node_id)

    def track_many(self, node_ids: Sequence[str], session_ids: Sequence[str | None],
                   timestamps: Sequence[float]) -> None:
        """`track` of each memory, in order (one call for a written chunk; the time index takes
        the chunk in one `TimeIndex.add_many`, before the sessions, as `track` does each)."""
        self._times.add_many(timestamps, node_ids)
        for node_id, session_id in zip(node_ids, session_ids, strict=True):
            self._session_ids(session_id).append(node_id)

    def _session_ids(self, session_id: str | None) -> SessionIds:
        """The ids of a session, a new empty list the first time it is named."""
        ids = self._sessions.get(session_id)
        if ids is None:
            ids = self._sessions[session_id] = SessionIds()
        return ids

    def untrack(self, node_id: str, session_id: str | None, timestamp: float) -> None:
        # `track` puts an id in its session and the time index together (under the memory's
        # timestamp, which the caller passes again), so the time index says in O(1) whether it
        # is in the session: an id never tracked (a write rolled back early) is left alone
        ids = self._sessions.get(session_id)
        if self._times.remove(timestamp, node_id) and ids is not None and ids.discard(node_id):
            del self._sessions[session_id]
        self.inactive.discard(node_id)

    def between(self, start: float, end: float) -> list[str]:
        """Ids whose timestamp lies in ``[start, end)``, oldest first."""
        return self._times.between(start, end)

    def latest(self, session_id: str | None, n: int) -> list[str]:
        """The last ``n`` ids written to a session, newest first."""
        ids = self._sessions.get(session_id)
        return [] if ids is None or n <= 0 else ids.latest(n)

    def reinforce(self, node_id: str, *, now: float, config: AtlasConfig) -> MemoryNode | None:
        node = self.graph.get_node(node_id)
        if node is None:
            return None
        current = effective_weight(node, now=now, turn=self.turn, config=config)
        weight = reinforced_weight(current, factor=config.reinforce_factor, cap=config.weight_cap)
        updated = evolve(node, weight=weight, last_accessed_at=now, access_count=node.access_count + 1,
                          accessed_turn=self.turn)
        self.graph.put_node(updated)
        return updated

    def fade(self, node_id: str, factor: float, *, now: float, config: AtlasConfig) -> MemoryNode | None:
        node = self.graph.get_node(node_id)
        if node is None:
            return None
        w = effective_weight(node, now=now, turn=self.turn, config=config)
        updated = evolve(node, weight=max(config.weight_floor, w * factor), last_accessed_at=now,
                          accessed_turn=self.turn)
        self.graph.put_node(updated)
        return updated



class TieredVectorIndex(VectorIndexBase):
    """Exact search while small, approximate from ``threshold`` vectors (None: always exact).

    Starts as a `NumpyVectorIndex`; the add that reaches ``threshold`` moves the vectors into an
    `IVFVectorIndex` (trained on them); a remove that leaves fewer than ``threshold // 2`` moves
    them back, so a namespace hovering at the threshold does not flip on every write. Without
    faiss installed it stays exact and logs a warning once. `add_and_link` (the write path's
    batched neighbour search and add) goes to the current index. ``vector_dtype`` is how the
    approximate index stores vectors (`IVFVectorIndex`): with "float16" the vectors read back
    (`get`, `get_many`, `similarities`, and those moved back to the exact index) are the stored
    ones, rounded to float16.

    >>> import numpy as np
    >>> index = TieredVectorIndex(4, threshold=64)
    >>> index.add([f"m{i}" for i in range(64)], np.eye(4, dtype=np.float32)[np.arange(64) % 4])
    >>> index.approximate, len(index)
    (True, 64)
    """

    _warned = False

    def __init__(self, dim: int, *, threshold: int | None = 2048, probe_fraction: float = 0.08,
                 vector_dtype: VectorDtype = "float16") -> None:
        self._dim = dim
        self.threshold = threshold
        self.probe_fraction = probe_fraction
        self.vector_dtype: VectorDtype = vector_dtype
        self._impl: NumpyVectorIndex | IVFVectorIndex = NumpyVectorIndex(dim)

    @property
    def approximate(self) -> bool:
        """Whether searches currently go through the approximate index."""
        return isinstance(self._impl, IVFVectorIndex)

    @property
    def dim(self) -> int:
        return self._dim

    def __len__(self) -> int:
        return len(self._impl)

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._impl

    def add(self, ids: Sequence[str], vectors: npt.NDArray[np.float32]) -> None:
        self._impl.add(ids, vectors)
        if self.threshold is not None and not self.approximate and len(self._impl) >= self.threshold:
            self._to_approximate()

    def add_and_link(self, ids: Sequence[str], vectors: npt.NDArray[np.float32], k: int, *,
                     min_similarity: float) -> Links:
        """`shared_core.store.memory.vector_index.add_and_link` on the current index (the add may switch it
        to approximate)."""
        if isinstance(self._impl, IVFVectorIndex):
            return self._impl.add_and_link(ids, vectors, k, min_similarity=min_similarity)
        return link_exactly(self._impl, ids, vectors, k, min_similarity=min_similarity, add=self.add)

    def remove(self, ids: Sequence[str]) -> None:
        self._impl.remove(ids)
        if self.threshold is not None and self.approximate and len(self._impl) < self.threshold // 2:
            exact = NumpyVectorIndex(self._dim, capacity=self.threshold)
            exact.add(*self._impl.vectors())  # type: ignore[union-attr]
            self._impl = exact

    def get(self, node_id: str) -> Vector | None:
        return self._impl.get(node_id)

    def get_many(self, ids: Sequence[str]) -> list[Vector | None]:
        return self._impl.get_many(ids)

    def search(self, query: Vector, k: int, *, subset: Collection[str] | None = None) -> Hits:
        return self._impl.search(query, k, subset=subset)

    def search_many(self, queries: npt.NDArray[np.float32], k: int, *,
                    min_similarity: float | None = None) -> list[Hits]:
        return self._impl.search_many(queries, k, min_similarity=min_similarity)

    def search_ranked(self, query: Vector, k: int, *, subset: Collection[str] | None = None) -> Ranked:
        return self._impl.search_ranked(query, k, subset=subset)

    def similarities(self, query: Vector, ids: Sequence[str], *, ahead: Sequence[str] = ()) -> npt.NDArray[np.float32]:
        return self._impl.similarities(query, ids)

    def nbytes(self) -> int:
        return self._impl.nbytes()

    def _to_approximate(self) -> None:
        if not ann_available():
            if not TieredVectorIndex._warned:
                logger.warning("faiss is not installed: vector search stays exact past %d memories "
                               "(install the 'ann' extra: pip install \".[ann]\")", self.threshold)
                TieredVectorIndex._warned = True
            self.threshold = None
            return
        exact = self._impl
        assert isinstance(exact, NumpyVectorIndex)
        self._impl = IVFVectorIndex.build(exact.ids(), exact.matrix(), probe_fraction=self.probe_fraction,
                                          vector_dtype=self.vector_dtype)


class InProcessBackend(BackendBase):
    """Dict graph + tiered numpy/faiss vectors + in-memory BM25 keywords, all in this process.

    ``config`` supplies the vector index's ``ann_threshold``, ``ann_probe_fraction`` and
    ``ann_vector_dtype``.
    """

    def __init__(self, *, dim: int, config: AtlasConfig | None = None) -> None:
        self.dim = dim
        cfg = config or AtlasConfig()
        self.ann_threshold = cfg.ann_threshold
        self.ann_probe_fraction = cfg.ann_probe_fraction
        self.ann_vector_dtype = cfg.ann_vector_dtype
        self._partitions: dict[str, InProcessPartition] = {}

    def partition(self, namespace: str, *, create: bool = False) -> InProcessPartition | None:
        part = self._partitions.get(namespace)
        if part is None and create:
            vectors = TieredVectorIndex(self.dim, threshold=self.ann_threshold,
                                        probe_fraction=self.ann_probe_fraction,
                                        vector_dtype=self.ann_vector_dtype)
            part = InProcessPartition(namespace, DictGraphStore(), vectors, InvertedKeywordIndex())
            self._partitions[namespace] = part
        return part

    def namespaces(self) -> Iterator[str]:
        return iter(list(self._partitions))

    def directory(self) -> MutableMapping[str, str] | None:
        """Memory id -> namespace over this backend's partitions (`Directory`)."""
        return Directory(lambda: self)

    def keeps_partitions_in_process(self) -> bool:
        return True

    def drop(self, namespace: str) -> None:
        part = self._partitions.pop(namespace, None)
        if part is not None:
            part.keywords.drop()
