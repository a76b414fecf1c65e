"""The storage contract: every operation a backend may serve, declared on a protocol.

A backend hands out one `Partition` per namespace; a partition holds a `GraphStore`, a
`VectorIndex` and a `KeywordIndex` and the bookkeeping the read path needs. Each protocol
declares every operation the engine calls. The operations that have a portable default (a batch
form of a single-item call, a derived search) get it in a small base class
(`GraphStoreBase`, `VectorIndexBase`, `KeywordIndexBase`, `PartitionBase`, `BackendBase`), which
an implementation subclasses and overrides where it can do better (one round trip, one C call).
The values passed through the seam (a recall's `CandidateQuery` and its `Candidates`, a walk's
`WalkSpec`, a batch's `WriteBatch`) live in `shared_core.store.messages` and are exported here.
Operations whose answer may be unknown say so in their return type (``None``), never by being
absent; the engine never probes a store with ``getattr``.

Designed for a server: recall's candidate generation is one call (`Partition.candidates`: vector
top-k with the similarities, keyword top-k, a time range's memories, a session's latest turns,
and the cosine of every candidate) plus one per walked hop of the graph (`GraphStore.weighted_links`),
and a batch write is one call (`Partition.write_batch`: the turns' reservation, nodes, vectors
and neighbour search, keywords, session and time tracking, edges).

>>> from shared_core.store.memory.backend import InProcessBackend
>>> part = InProcessBackend(dim=4).partition("alice", create=True)
>>> isinstance(part, Partition), isinstance(part.graph, GraphStore), isinstance(part.vectors, VectorIndex)
(True, True, True)
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, MutableMapping, MutableSet, Sequence
from types import TracebackType
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from ..values.config import AtlasConfig
from ..values.model import AnyRelation, MemoryEdge, MemoryNode
from .messages import CandidateQuery, Candidates, WalkSpec, WriteBatch
from .vector_math import Hits, Links, Ranked, Vector

__all__ = ["AtlasLock", "Backend", "CandidateQuery", "Candidates", "EntityIndex", "GraphStore", "Hits",
           "KeywordIndex", "Link", "Links", "Partition", "Ranked", "StaleView",
           "Vector", "VectorIndex", "WalkSpec", "WriteBatch"]

#: One edge as the read path sees it: (the other end's id, relation, strength).
Link = tuple[str, AnyRelation, float]


# -- graph ------------------------------------------------------------------------------------
@runtime_checkable
class GraphStore(Protocol):
    """Nodes and typed edges of one namespace."""

    def put_node(self, node: MemoryNode) -> None:
        """Insert or replace a node (same id)."""

    def get_node(self, node_id: str) -> MemoryNode | None: ...

    def prefetch(self, ids: Sequence[str]) -> None:
        """Read these nodes at once, ahead of the `get_node` calls that will ask for them (a
        server store: one request, not one per node); a store in process has them already."""

    def has(self, node_id: str) -> bool:
        """Whether the node exists (`get_node` is not None), which a server store may know without
        reading the node: recall's admission when every memory may be recalled."""

    def remove_node(self, node_id: str) -> list[MemoryEdge]:
        """Remove a node and its edges; return the removed edges."""

    def put_edge(self, edge: MemoryEdge) -> None:
        """Insert or replace the edge (source, target, relation)."""

    def put_links(self, links: Iterable[tuple[str, str, AnyRelation, float]], *, created_at: float) -> None:
        """`put_edge` of each (source, target, relation, strength), no metadata, in order."""

    def mark_chatter(self, flags: Iterable[tuple[str, bool]]) -> None:
        """Store, with each stored memory of (id, flag), whether it is a backchannel
        (`shared_core.formulas.chatter.contentless`, computed once by the writer: `WriteBatch.chatter`);
        `Partition.write_batch` stores its batch's flags itself. A memory never flagged is not one."""

    def is_chatter(self, node_id: str) -> bool:
        """Whether the memory is flagged a backchannel (`mark_chatter`); False for an unknown id.
        The walk steps over such a memory (`WalkSpec.step_over`)."""

    def summarized(self, ids: Sequence[str]) -> dict[str, list[tuple[str, bool]]]:
        """Each of ``ids``' sources: the other end of each of its out-going ``summarizes`` edges,
        with whether that memory is a backchannel (`is_chatter`), in no set order (an id without
        such an edge: an empty list). One request on a server store: the summaries a context shows
        (`shared_core.engine.context.summaries_beside_sources`)."""

    def remove_edge(self, source: str, target: str, relation: AnyRelation) -> bool: ...

    def edges(self, node_id: str) -> list[MemoryEdge]:
        """Every edge into or out of a node: out-edges first, then in-edges (a self-loop once)."""

    def links(self, node_id: str) -> list[Link]:
        """(other end, relation, strength) for each edge of `edges`, in its order (a self-loop's
        other end is the node itself): the read path's form, with no edge objects to build."""

    def weighted_links(self, node_id: str, factors: Sequence[float | None]) -> list[tuple[str, float]]:
        """(other end, ``min(1, strength) * factors[relation]``) for each edge of `links` whose
        relation's factor (indexed by relation code, `shared_core.values.relations.RELATIONS`) is
        not None, self-loops left out: one hop of recall's graph walk."""

    def neighbors(self, node_id: str) -> list[tuple[str, float]]:
        """(neighbour id, edge strength) for every edge into or out of a node."""

    def nodes(self) -> Iterator[MemoryNode]: ...

    def node_count(self) -> int: ...

    @property
    def bounded_nodes(self) -> int | None:
        """How many nodes may stop being current (an ``expires_at`` or a ``valid_to``; None: not
        counted). While there are none, recall admits a memory without fetching its node."""

    def edge_count(self) -> int: ...

    def degree(self, node_id: str) -> int: ...


# -- vectors ----------------------------------------------------------------------------------
@runtime_checkable
class VectorIndex(Protocol):
    """Unit vectors by memory id, searchable by cosine similarity.

    Adding an id that is already present replaces its vector.
    """

    @property
    def dim(self) -> int: ...

    def add(self, ids: Sequence[str], vectors: npt.NDArray[np.float32]) -> None: ...

    def add_and_link(self, ids: Sequence[str], vectors: npt.NDArray[np.float32], k: int, *,
                     min_similarity: float) -> Links:
        """Add ``vectors`` under new ``ids`` and give, for each row, its ``k`` most similar vectors
        at or above ``min_similarity`` among those present before the call (by id) and the call's
        earlier rows (by row number), best first: what adding the rows one at a time, each after a
        search, would give."""

    def remove(self, ids: Sequence[str]) -> None: ...

    def get(self, node_id: str) -> Vector | None: ...

    def get_many(self, ids: Sequence[str]) -> list[Vector | None]:
        """`get` of each id (None for an unknown one); the rows may share one array."""

    def search(self, query: Vector, k: int, *, subset: Collection[str] | None = None) -> Hits:
        """The k most similar ids (best first), optionally among ``subset`` only."""

    def search_many(self, queries: npt.NDArray[np.float32], k: int, *,
                    min_similarity: float | None = None) -> list[Hits]:
        """`search` for each row of ``queries``, keeping hits at or above ``min_similarity``."""

    def search_ranked(self, query: Vector, k: int, *, subset: Collection[str] | None = None) -> Ranked:
        """`search` as (an iterator of its hits, their similarities as an array), best first."""

    def similarities(self, query: Vector, ids: Sequence[str], *, ahead: Sequence[str] = ()) -> npt.NDArray[np.float32]:
        """Cosine of ``query`` with each id (0 for an unknown id). ``ahead``: ids the caller may ask
        about next, most likely first; a store that makes a request for ``ids`` may read theirs
        with it, up to `cosine_batch` in all (a store in process computes only ``ids``)."""

    @property
    def cosine_batch(self) -> int:
        """How many cosines one `similarities` request may read, the asked ids and those named
        ``ahead``: recall's ranking asks for the memories only its graph walk reached in batches
        of ``max(16, top_k)``, best bounds first, and names the next ones up to this many
        (`shared_core.engine.recall._rank`; its answer does not depend on it). In process each
        cosine is work and a call no round trip: 16, the default (`VectorIndexBase`), names none;
        on a server each request is a round trip, so more."""

    def nbytes(self) -> int | None:
        """Bytes the index holds (None: not known, e.g. on a server)."""

    def __len__(self) -> int: ...


# -- keywords ---------------------------------------------------------------------------------
@runtime_checkable
class KeywordIndex(Protocol):
    """Full-text BM25 search over the memories of one namespace."""

    def add(self, node_id: str, text: str, *, session_id: str | None = None) -> None: ...

    def add_many(self, rows: Sequence[tuple[str, str, str | None]]) -> None:
        """`add` of each (id, text, session id), all or nothing."""

    def remove(self, node_id: str) -> None: ...

    def search(self, query: str, k: int, *, session_id: str | None = None,
               subset: Collection[str] | None = None) -> list[tuple[str, float]]:
        """Up to k ids (among ``subset``, when given), best first, with their BM25 score
        (higher is better)."""


# -- entities ---------------------------------------------------------------------------------
@runtime_checkable
class EntityIndex(Protocol):
    """The entity layer of one namespace: entity nodes (people, places, key phrases, by key:
    `shared_core.text.entities.entity_key`) and their ``mentions`` edges to the memories that
    name them. An entity exists while a memory mentions it: removing a memory's mentions removes
    the entities left with none. Keys are compared exactly (the caller normalises them)."""

    def add_many(self, rows: Sequence[tuple[str, Sequence[str]]]) -> None:
        """Mentions: each (memory id, its entity keys) adds the memory's edges to those
        entities, creating the entities not seen before (the engine adds a memory's mentions
        right after writing it, in the same atlas write)."""

    def remove(self, node_id: str) -> None:
        """Drop a memory's mentions, and every entity that no memory mentions any more."""

    def entities_of(self, node_ids: Sequence[str]) -> dict[str, list[str]]:
        """The entity keys each memory mentions (memories that mention none left out)."""

    def mentions(self, keys: Sequence[str], *, limit: int) -> dict[str, tuple[int, list[str]]]:
        """For each key that names an entity: how many memories mention it, and up to ``limit``
        of them (in no particular order)."""

    def entities(self) -> list[tuple[str, int]]:
        """Every entity with its number of mentions."""

    def __len__(self) -> int:
        """The number of entities."""


# -- partitions and backends ----------------------------------------------------------------
Predicate = Callable[[str], bool]


@runtime_checkable
class Partition(Protocol):
    """Everything kept for one namespace: three stores and the bookkeeping.

    Besides the graph, vector, keyword and entity stores, a partition answers what the read path needs
    without scanning the namespace: the ids of each session in write order (``sessions``), the
    superseded ids (``inactive``), the memories' timestamps for time ranges (`between`) and the
    namespace's write counter (``turn``). `shared_core.store.memory.backend.InProcessPartition`
    keeps them in this process; a server backend answers them from the server, the one source
    of truth when several processes share a namespace.

    Weight updates go through `reinforce` and `fade`, each one atomic step (decay to ``now``,
    then scale), so concurrent workers sharing a server never lose an update.
    """

    namespace: str

    @property
    def graph(self) -> GraphStore: ...

    @property
    def vectors(self) -> VectorIndex: ...

    @property
    def keywords(self) -> KeywordIndex: ...

    @property
    def entities(self) -> EntityIndex: ...

    @property
    def sessions(self) -> MutableMapping[str | None, Collection[str]]:
        """Session id -> its tracked ids in write order, sessions in first-write order; assigning a
        session's ids reorders it."""

    @property
    def inactive(self) -> MutableSet[str]:
        """The ids of superseded memories."""

    turn: int  # the namespace's write counter; assigning rolls back a failed write's turns

    def next_turn(self, count: int = 1) -> int:
        """Reserve ``count`` consecutive turns; returns the first (the counter ends on the last).
        (`write_batch` reserves its memories' turns itself.)"""

    def track(self, node_id: str, session_id: str | None, timestamp: float) -> None:
        """Count a stored memory in its session's order and in the time index."""

    def track_many(self, node_ids: Sequence[str], session_ids: Sequence[str | None],
                   timestamps: Sequence[float]) -> None:
        """`track` of each memory, in order."""

    def untrack(self, node_id: str, session_id: str | None, timestamp: float) -> None: ...

    def between(self, start: float, end: float) -> list[str]:
        """Ids whose timestamp lies in ``[start, end)``, oldest first."""

    def latest(self, session_id: str | None, n: int) -> list[str]:
        """The last ``n`` ids written to a session, newest first."""

    def reinforce(self, node_id: str, *, now: float, config: AtlasConfig) -> MemoryNode | None:
        """Recall's reinforcement, in one step: the weight decayed to ``now`` times
        ``reinforce_factor`` (at most ``weight_cap``), one more access, last access now.
        Returns the updated node (None if it is gone)."""

    def reinforce_many(self, node_ids: Sequence[str], *, now: float, config: AtlasConfig,
                       vectors: bool = True) -> list[MemoryNode | None]:
        """`reinforce` of each id (each one atomic step), in one call: a recall's hits.
        ``vectors`` says whether the caller reads these memories' vectors next (`retrieve` does,
        `build_context` does not): a store that can send them with the write's reply sends them
        only then; the nodes returned are the same either way."""

    def fade(self, node_id: str, factor: float, *, now: float, config: AtlasConfig) -> MemoryNode | None:
        """The weight decayed to ``now`` times ``factor`` (at least ``weight_floor``), last access
        now. Returns the updated node (None if it is gone)."""

    def candidates(self, query: CandidateQuery, allowed: Predicate) -> Candidates:
        """Recall's candidate generation in one call (see `CandidateQuery`); ``allowed`` admits
        a memory (asked of each hit unless ``query.every_admissible``, and of the time range's)."""

    def expand(self, seeds: dict[str, float], walk: WalkSpec, walkable: Predicate | None) -> dict[str, float]:
        """The graph expansion of recall's seeds: `spread_max` over `GraphStore.weighted_links`
        (stepping over the backchannels, `GraphStore.is_chatter`, with ``walk.step_over``)."""

    def neighbour_nodes(self, ids: Sequence[str], walk: WalkSpec) -> list[MemoryNode]:
        """The memories `expand` reaches from ``ids`` (each at activation 1.0, every memory
        walkable), other than ``ids``, in id order, as nodes: the turns a context window shows
        beside its hits (`shared_core.engine.neighbours`), which a server store reads with their
        nodes at once."""

    def speakers(self) -> set[str]:
        """Who said the namespace's memories: `shared_core.formulas.subqueries.speaker_of` of
        each (its metadata's speaker, else its chat label), each once; one pass over the
        memories in process, one request on a server. The engine asks it once per namespace
        after a reopen (its `SpeakerBook` learns the rest from the writes)."""

    def write_batch(self, batch: WriteBatch) -> list[MemoryNode]:
        """Store a chunk of new memories in one call and return their nodes as stored.

        Reserves ``batch.count`` consecutive turns (one atomic step, as `next_turn`: concurrent
        writers never share a turn), builds the nodes from the first (``batch.build``), and
        stores them: nodes, vectors, keywords, session and time tracking, ``similar_to`` edges
        to the neighbours found, ``before`` edges, extra links. If it raises, the reserved turns
        are given back (as assigning ``turn`` does), and what it stored of the chunk is for the
        caller to remove (the nodes of ``batch.build``: ids do not depend on the turn)."""


class AtlasLock(Protocol):
    """The re-entrant lock an atlas takes around every change and read of its memory."""

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool: ...

    def release(self) -> None: ...

    def __enter__(self) -> bool: ...

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None, /) -> None: ...


class StaleView(Exception):
    """Raised by a partition handed out by `Backend.recall_partition` when the view of the
    namespace it started the call with turns out, at the call's first request, not to be the
    server's (its counts changed, or the namespace is gone). Nothing was written: the caller asks
    `Backend.partition` again (a fresh view, or None) and starts its recall over."""


@runtime_checkable
class Backend(Protocol):
    """Hands out the partition of each namespace."""

    def partition(self, namespace: str, *, create: bool = False) -> Partition | None: ...

    def recall_partition(self, namespace: str) -> Partition | None:
        """`partition` for a recall (`retrieve`, `build_context`), which may be handed out on the
        view of the namespace its previous call read (a server backend then sends the question
        whether the namespace exists, and its counts, with the call's first request, instead of
        one round trip of their own). Such a partition raises `StaleView` at that request if the
        fresh view differs in anything the call may have used before it (nothing is written
        first); the caller then asks `partition` and starts over. Default: `partition`."""

    def namespaces(self) -> Iterator[str]: ...

    def drop(self, namespace: str) -> None: ...

    def keeps_partitions_in_process(self) -> bool:
        """Whether every partition lives in this process alone (no other process writes to it):
        the engine then drops a namespace's partition when it empties and counts the
        partition's own objects towards ``max_bytes``. False for a server shared by processes."""

    def directory(self) -> MutableMapping[str, str] | None:
        """Memory id -> namespace kept by the backend (a server shared by processes), or None:
        the engine keeps its own."""

    def attach(self, *, dim: int, config: AtlasConfig | None) -> AtlasLock | None:
        """Called once by the atlas that will use the backend, with its embedding dimension and
        config; returns the lock the atlas must take around its changes (a durable backend
        commits a write when the lock's outermost hold is released), or None for a plain
        re-entrant lock."""

    def lifecycle_state(self) -> dict[str, Any] | None:
        """The bookkeeping a durable backend reopened with its memories, as `keep` stored it
        (``lifecycle``: the form of ``Lifecycle.state``; ``events``: the event log's records,
        totals and size, or None; ``relations``: custom relation names), or None: nothing to
        restore."""

    def keep(self, bookkeeping: Callable[[], dict[str, Any]]) -> None:
        """A durable backend stores ``bookkeeping()`` (the atlas's, JSON-ready, taken under its
        lock) when it checkpoints and closes; others ignore it."""

    def watch(self, adopt: Callable[[Partition], None]) -> None:
        """Call ``adopt`` with every partition the backend holds now and, for a backend that
        loads namespaces lazily, with each it loads later (under the atlas's lock)."""

    def memory_count(self, namespace: str) -> int:
        """The memories stored in a namespace (a lazy backend answers without loading it)."""

    def maintenance_interval(self) -> float | None:
        """Seconds between the maintenance runs (`ElasticMemoryAtlas.maintain`: expiry, clean-up,
        caps, compression) the atlas schedules itself for this backend, or None: the app or a
        server process runs them (the durable local store asks for a timer)."""

    def flush(self) -> None:
        """Wait until every write so far is durable (a no-op for a backend that is not)."""

    def close(self) -> None:
        """Flush and release what the backend holds (files, connections)."""

