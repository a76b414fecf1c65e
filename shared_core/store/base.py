"""Defaults of the storage contract's derived operations (`shared_core.store.contract`).

An implementation subclasses the base class of each store it provides and overrides what it can
serve better: a batch in one call, a search in C, a round trip to a server. The defaults are
built from the protocol's basic operations only, so a new backend is correct before it is fast.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Collection, Iterable, Iterator, MutableMapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ..formulas.scoring import spread_max, step_over
from ..formulas.subqueries import speaker_of
from ..values.config import AtlasConfig
from ..values.model import NO_METADATA, AnyRelation, MemoryEdge, MemoryNode, Relation
from ..values.relations import RELATION_CODES
from .contract import (
    AtlasLock,
    CandidateQuery,
    Candidates,
    Hits,
    Link,
    Links,
    Predicate,
    Ranked,
    Vector,
    WalkSpec,
    WriteBatch,
)
from .vector_math import link_exactly, search_many, search_ranked, vectors_of

__all__ = ["BackendBase", "GraphStoreBase", "KeywordIndexBase", "PartitionBase", "VectorIndexBase"]

_RELATION_INDEX = RELATION_CODES
#: `VectorIndex.cosine_batch` of a store in process: each cosine computed is work
COSINE_BATCH = 16


class GraphStoreBase:
    """Defaults of `GraphStore`'s derived operations, from `put_edge` and `links`."""

    __slots__ = ()

    if TYPE_CHECKING:  # the basic operations an implementation provides
        def get_node(self, node_id: str) -> MemoryNode | None:
            ...

        def put_edge(self, edge: MemoryEdge) -> None:
            ...

        def links(self, node_id: str) -> list[Link]:
            ...

        def edges(self, node_id: str) -> list[MemoryEdge]:
            ...

        def is_chatter(self, node_id: str) -> bool:
            ...

    def put_links(self, links: Iterable[tuple[str, str, AnyRelation, float]], *, created_at: float) -> None:
        for source, target, relation, strength in links:
            self.put_edge(MemoryEdge(source=source, target=target, relation=relation, strength=strength,
                                     created_at=created_at, metadata=NO_METADATA))

    def has(self, node_id: str) -> bool:
        return self.get_node(node_id) is not None

    def prefetch(self, ids: Sequence[str]) -> None:
        return None  # in process every node is at hand

    def summarized(self, ids: Sequence[str]) -> dict[str, list[tuple[str, bool]]]:
        return {node_id: [(e.target, self.is_chatter(e.target)) for e in self.edges(node_id)
                          if e.relation is Relation.SUMMARIZES and e.source == node_id] for node_id in ids}

    def weighted_links(self, node_id: str, factors: Sequence[float | None]) -> list[tuple[str, float]]:
        index = _RELATION_INDEX
        return [(other, min(1.0, strength) * factor) for other, relation, strength in self.links(node_id)
                if (factor := factors[index[relation]]) is not None and other != node_id]

    @property
    def bounded_nodes(self) -> int | None:
        return None


class VectorIndexBase:
    """Defaults of `VectorIndex`'s derived operations, from `add`, `get` and `search`."""

    __slots__ = ()

    if TYPE_CHECKING:  # the basic operations an implementation provides
        def __len__(self) -> int:
            ...

        def add(self, ids: Sequence[str], vectors: npt.NDArray[np.float32]) -> None:
            ...

        def get(self, node_id: str) -> Vector | None:
            ...

        def search(self, query: Vector, k: int, *, subset: Collection[str] | None = None) -> Hits:
            ...

    def add_and_link(self, ids: Sequence[str], vectors: npt.NDArray[np.float32], k: int, *,
                     min_similarity: float) -> Links:
        return link_exactly(self, ids, vectors, k, min_similarity=min_similarity, add=self.add)

    def get_many(self, ids: Sequence[str]) -> list[Vector | None]:
        return vectors_of(self, ids)

    def search_many(self, queries: npt.NDArray[np.float32], k: int, *,
                    min_similarity: float | None = None) -> list[Hits]:
        return search_many(self, queries, k, min_similarity=min_similarity)

    def search_ranked(self, query: Vector, k: int, *, subset: Collection[str] | None = None) -> Ranked:
        return search_ranked(self, query, k, subset=subset)

    def nbytes(self) -> int | None:
        return None

    @property
    def cosine_batch(self) -> int:
        return COSINE_BATCH


class KeywordIndexBase:
    """Default of `KeywordIndex.add_many`: `add` of each row."""

    __slots__ = ()

    if TYPE_CHECKING:  # the basic operations an implementation provides
        def add(self, node_id: str, text: str, *, session_id: str | None = None) -> None:
            ...

    def add_many(self, rows: Sequence[tuple[str, str, str | None]]) -> None:
        for node_id, text, session in rows:
            self.add(node_id, text, session_id=session)


class PartitionBase:
    """Defaults of `Partition`'s composite operations, from its stores and bookkeeping."""

    __slots__ = ()

    graph: Any
    vectors: Any
    keywords: Any
    inactive: Any

    if TYPE_CHECKING:  # the basic operations an implementation provides
        def track(self, node_id: str, session_id: str | None, timestamp: float) -> None:
            ...

        def between(self, start: float, end: float) -> list[str]:
            ...

        def latest(self, session_id: str | None, n: int) -> list[str]:
            ...

        def reinforce(self, node_id: str, *, now: float, config: AtlasConfig) -> MemoryNode | None:
            ...

        def next_turn(self, count: int = 1) -> int:
            ...

        @property
        def turn(self) -> int:
            ...

        @turn.setter
        def turn(self, value: int) -> None:
            ...

    def reinforce_many(self, node_ids: Sequence[str], *, now: float, config: AtlasConfig,
                       vectors: bool = True) -> list[MemoryNode | None]:
        return [self.reinforce(node_id, now=now, config=config) for node_id in node_ids]

    def track_many(self, node_ids: Sequence[str], session_ids: Sequence[str | None],
                   timestamps: Sequence[float]) -> None:
        for node_id, session_id, timestamp in zip(node_ids, session_ids, timestamps, strict=True):
            self.track(node_id, session_id, timestamp)

    def candidates(self, query: CandidateQuery, allowed: Predicate) -> Candidates:
        return _gather(self, query, allowed)

    def expand(self, seeds: dict[str, float], walk: WalkSpec, walkable: Predicate | None) -> dict[str, float]:
        weighted, factors = self.graph.weighted_links, walk.factors

        def links(node_id: str) -> list[tuple[str, float]]:
            return weighted(node_id, factors)  # type: ignore[no-any-return]

        return spread_max(seeds, step_over(links, self.graph.is_chatter) if walk.step_over else links,
                          hops=walk.hops, decay=walk.decay, fanout=walk.fanout, min_activation=walk.min_activation,
                          beam=walk.beam, walkable=walkable)

    def neighbour_nodes(self, ids: Sequence[str], walk: WalkSpec) -> list[MemoryNode]:
        seeds = dict.fromkeys(ids, 1.0)
        get_node = self.graph.get_node
        return [node for node_id in sorted(self.expand(seeds, walk, None))
                if node_id not in seeds and (node := get_node(node_id)) is not None]

    def write_batch(self, batch: WriteBatch) -> list[MemoryNode]:
        return _write(self, batch)

    def speakers(self) -> set[str]:
        return {who for node in self.graph.nodes() if (who := speaker_of(node.content, node.metadata)) is not None}


class BackendBase:
    """Defaults of `Backend.directory` (the backend keeps none), `Backend.attach` (no lock of its
    own), `Backend.recall_partition` (`partition`), `Backend.lifecycle_state` and `keep` (nothing
    to restore or keep), `watch` (every partition, now), `memory_count` (from the partition),
    `keeps_partitions_in_process` (no: another process may share them), `flush` and `close`
    (nothing to do)."""

    __slots__ = ()

    def keeps_partitions_in_process(self) -> bool:
        return False

    def directory(self) -> MutableMapping[str, str] | None:
        return None

    def attach(self, *, dim: int, config: AtlasConfig | None) -> AtlasLock | None:
        return None

    def lifecycle_state(self) -> dict[str, Any] | None:
        return None

    def keep(self, bookkeeping: Callable[[], dict[str, Any]]) -> None:
        return None

    def watch(self, adopt: Callable[[Any], None]) -> None:
        for ns in self.namespaces():  # type: ignore[attr-defined]
            part = self.partition(ns)  # type: ignore[attr-defined]
            if part is not None:
                adopt(part)

    def recall_partition(self, namespace: str) -> Any:
        """`Backend.recall_partition`: `partition` (no view handed out ahead of the server's)."""
        return self.partition(namespace)  # type: ignore[attr-defined]

    def memory_count(self, namespace: str) -> int:
        part = self.partition(namespace)  # type: ignore[attr-defined]
        return 0 if part is None else int(part.graph.node_count())

    def maintenance_interval(self) -> float | None:
        return None

    def flush(self) -> None:
        return None

    def close(self) -> None:
        return None



def _gather(part: PartitionBase, q: CandidateQuery, allowed: Predicate) -> Candidates:
    """The default `Partition.candidates`: the searches one after another, then one
    `VectorIndex.similarities` call for the candidates the vector path did not find."""
    every = q.every_admissible
    paths: dict[str, dict[str, float]] = {}

    def keep(pairs: Iterator[tuple[str, float]] | list[tuple[str, float]], path: str, limit: int) -> None:
        if every:  # the partition's indexes hold only its memories, and each of them is admissible
            paths[path] = dict(itertools.islice(pairs, limit))
            return
        values: dict[str, float] = {}
        for node_id, value in pairs:
            if allowed(node_id):
                values[node_id] = value
                if len(values) == limit:
                    break
        paths[path] = values

    found, found_sims = part.vectors.search_ranked(q.vector, q.vector_k, subset=q.subset)
    keep(found, "vector", q.k)
    if q.keywords:
        keep(part.keywords.search(q.text, q.keyword_k, session_id=q.keyword_session, subset=q.subset),
             "keyword", q.k)
    if q.time_range is not None:
        in_range = [i for i in part.between(*q.time_range) if allowed(i)]
        if in_range:
            sims = part.vectors.similarities(q.vector, in_range)
            order = np.argsort(-sims, kind="stable")[:q.k]
            keep(((in_range[int(j)], 1.0) for j in order), "time", q.k)
    if q.recent_session is not None:
        latest = part.latest(q.recent_session, q.recent_n)
        keep(((i, 1.0 / (r + 1)) for r, i in enumerate(latest)), "recent", q.recent_k)
    cosine = dict(paths["vector"])  # every candidate's cosine: the vector path's, then the others'
    others = list(dict.fromkeys(i for path, found_by in paths.items() if path != "vector"
                                for i in found_by if i not in cosine))
    if others:
        cosine.update(zip(others, part.vectors.similarities(q.vector, others).tolist(), strict=True))
    return Candidates(paths, found_sims, cosine)


def _write(part: PartitionBase, batch: WriteBatch) -> list[MemoryNode]:
    """The default `Partition.write_batch`: the turns (`Partition.next_turn`), nodes and their
    backchannel flags, then vectors with their neighbour search, keywords, ``before``/``similar_to``/extra edges in one
    `GraphStore.put_links`, tracking; the turns given back if a store fails."""
    first = part.next_turn(batch.count)
    try:
        nodes = list(batch.build(first))
        _store(part, batch, nodes)
    except BaseException:
        part.turn = first - 1
        raise
    return nodes


def _store(part: PartitionBase, batch: WriteBatch, nodes: Sequence[MemoryNode]) -> None:
    graph = part.graph
    put_node = graph.put_node
    for node in nodes:
        put_node(node)
    graph.mark_chatter(batch.chatter_flags(nodes))
    ids = [n.id for n in nodes]
    similar = _link(part, ids, batch.vectors, batch.similar_top, batch.min_similarity)  # adds the vectors
    part.keywords.add_many(batch.keyword_rows(nodes))
    links: list[tuple[str, str, AnyRelation, float]] = []  # (source, target, relation, strength)
    last: dict[str | None, str] = {}  # each session's newest id so far
    similar_to, before, link_temporal = Relation.SIMILAR_TO, Relation.BEFORE, batch.link_temporal
    add, sessions = links.append, [node.session_id for node in nodes]
    for node_id, session, extra, hits in zip(ids, sessions, batch.links, similar, strict=True):
        if link_temporal:
            previous = last.get(session)
            if previous is None:  # the session's newest before this chunk (tracked below: none of the chunk)
                latest = part.latest(session, 1)
                previous = latest[0] if latest else None
            if previous is not None:
                add((previous, node_id, before, 1.0))
            last[session] = node_id
        for other, sim in hits:
            add((node_id, other if isinstance(other, str) else ids[other], similar_to, sim))
        if extra:
            links.extend((node_id, target, relation, strength) for target, relation, strength in extra)
    part.track_many(ids, sessions, [node.timestamp for node in nodes])
    graph.put_links(links, created_at=batch.created_at)


def _link(part: PartitionBase, ids: Sequence[str], vecs: npt.NDArray[np.float32], top: int,
          min_similarity: float) -> Links:
    """Add the rows to the partition's vectors and give, for each row, the ``top`` best
    (id, cosine) at or above ``min_similarity`` among the partition's current memories and
    the earlier rows (given by row number), superseded memories left out."""
    if top <= 0:
        part.vectors.add(ids, vecs)
        return [[] for _ in ids]
    inactive = part.inactive
    spare = min(len(inactive), 8) + 1 if inactive else 0  # room for superseded memories to drop
    found: Links = part.vectors.add_and_link(ids, vecs, top + spare, min_similarity=min_similarity)
    if inactive:
        return [[hit for hit in hits if hit[0] not in inactive][:top] for hits in found]
    return [hits[:top] for hits in found]
