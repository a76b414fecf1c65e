"""`FalkorPartition`: one namespace's `Partition`, its bookkeeping answered by the server.

Several processes may share a namespace, so nothing here is a process-local cache:

- ``turn`` is the ``(:Atlas)`` node's counter; `next_turn` reserves turns with one atomic
  statement, and `write_batch` reserves its memories' turns in the statement that writes them,
  so two writers never get the same turn;
- ``sessions`` is a view of the tracked memories grouped by ``session_id`` and ordered by
  ``pos`` (a per-namespace sequence taken when a memory is tracked, so sessions keep the order
  in which their memories were stored, and a summary can be moved before its members);
- ``inactive`` is a view of the memories flagged ``superseded``;
- `between` and `latest` are range and order queries over ``timestamp`` and ``pos``;
- `reinforce` and `fade` decay a weight to now and scale it in one statement (see
  `cypher.rescale`), so concurrent recalls never lose an increment.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, MutableMapping, MutableSet, Sequence
from typing import Any

from ...values.config import AtlasConfig
from ...values.model import MemoryNode
from ..base import PartitionBase
from ..contract import CandidateQuery, Candidates, Predicate, StaleView, Vector, WalkSpec, WriteBatch
from . import cypher as q
from . import paths, writes
from .client import Connection, GraphKey
from .entities import FalkorEntityIndex
from .graph import FalkorGraphStore, ReadCache, node_from_row
from .indexes import ONE_STATEMENT_BELOW, CosineCache, FalkorKeywordIndex, FalkorVectorIndex
from .speakers import SPEAKERS, speakers_of_rows

__all__ = ["FalkorPartition"]

_LN2 = math.log(2.0)
_NO_LIMIT = 2**31 - 1  # larger LIMITs return nothing on FalkorDB 4.16


class CheckedKey(GraphKey):
    """A namespace's `GraphKey` that may be handed out, within an atlas call, before the server
    was asked whether the graph exists:

    - ``check`` (`FalkorDBBackend.partition` for a write): the first write calls it first
      (``EXISTS``; the graph's schema created if it is missing), so that no write ever makes a
      graph without its indexes. Reads need no check: a graph that does not exist reads as empty.
    - a view to confirm (`FalkorDBBackend.recall_partition`: `view`): the call's first request,
      read or write, sends ``EXISTS`` and the view's statements (the counters) ahead of its own in
      the same round trip and hands their replies to the view's ``confirm``, which raises
      `StaleView` when they differ from the view the call started with (before any write is sent).
    """

    __slots__ = ("_check", "_view")
    _check: Callable[[], None] | None
    _view: tuple[Sequence[tuple[str, dict[str, Any]]], Callable[[bool, list[list[list[Any]]]], None]] | None

    def __init__(self, conn: Connection, key: str) -> None:
        super().__init__(conn, key)
        self.arm(None)
        self.view(None)

    @property
    def check(self) -> Callable[[], None] | None:
        return self._check

    def arm(self, check: Callable[[], None] | None) -> None:
        """Set ``check`` (None: the graph is known to exist). (`GraphKey` is frozen.)"""
        object.__setattr__(self, "_check", check)

    def view(self, pending: tuple[Sequence[tuple[str, dict[str, Any]]],
                                  Callable[[bool, list[list[list[Any]]]], None]] | None) -> None:
        """Set the view to confirm: (statements, confirm); None: nothing to confirm."""
        object.__setattr__(self, "_view", pending)

    def _confirming(self, statements: Sequence[tuple[str, Mapping[str, Any]]]) -> list[list[list[Any]]]:
        """``statements``' rows, read in one round trip with ``EXISTS`` and the view's statements,
        whose replies go to the view's ``confirm`` first (which may raise `StaleView`)."""
        assert self._view is not None
        asked, confirm = self._view
        self.view(None)
        exists, results = self.conn.exists_and_read(self.key, [*asked, *statements])
        confirm(exists, results[:len(asked)])
        return results[len(asked):]

    def read(self, query: str, params: Mapping[str, Any] | None = None) -> list[list[Any]]:
        if self._view is not None:
            return self._confirming([(query, params or {})])[0]
        return super().read(query, params)

    def read_many(self, statements: Sequence[tuple[str, Mapping[str, Any]]]) -> list[list[list[Any]]]:
        if self._view is not None:
            return self._confirming(statements)
        return super().read_many(statements)

    def write(self, query: str, params: Mapping[str, Any] | None = None) -> list[list[Any]]:
        if self._view is not None:
            self._confirming(())
        if self.check is not None:
            self.check()
        return super().write(query, params)

    def write_many(self, statements: Sequence[tuple[str, Mapping[str, Any]]]) -> list[list[list[Any]]]:
        if self._view is not None:
            self._confirming(())
        if self.check is not None:
            self.check()
        return super().write_many(statements)


class _Sessions(MutableMapping[str | None, Collection[str]]):
    """Session id -> its tracked ids in order (as dict keys); sessions in first-write order."""

    def __init__(self, graph: GraphKey) -> None:
        self._g = graph

    def _grouped(self) -> dict[str | None, dict[str, None]]:
        out: dict[str | None, dict[str, None]] = {}
        for session, node_id in self._g.read(q.SESSION_ITEMS):
            out.setdefault(None if session is None else str(session), {})[str(node_id)] = None
        return out

    def ids(self, session: str | None, *, limit: int = _NO_LIMIT, newest_first: bool = False) -> list[str]:
        params: dict[str, Any] = {"limit": limit}
        if session is not None:
            params["session"] = session
        return [str(r[0]) for r in self._g.read(q.session_ids(session, newest_first=newest_first), params)]

    def __getitem__(self, session: str | None) -> dict[str, None]:
        ids = self.ids(session)
        if not ids:
            raise KeyError(session)
        return dict.fromkeys(ids)

    def get(self, session: str | None, default: Any = None) -> Any:
        ids = self.ids(session)
        return dict.fromkeys(ids) if ids else default

    def __contains__(self, session: object) -> bool:
        return (session is None or isinstance(session, str)) and bool(self.ids(session, limit=1))

    def __setitem__(self, session: str | None, order: Collection[str]) -> None:
        """Reorder a session: its memories take the session's positions in the new order."""
        ids = list(order)
        positions = sorted(int(r[0]) for r in self._g.read(q.SESSION_POSITIONS, {"ids": ids}))
        if len(positions) == len(ids) and ids:
            rows = [[i, p] for i, p in zip(ids, positions, strict=True)]
            if session is None:
                self._g.write(q.SET_POSITIONS_UNNAMED, {"rows": rows})
            else:
                self._g.write(q.SET_POSITIONS, {"rows": rows, "session": session})

    def __delitem__(self, session: str | None) -> None:
        ids = self.ids(session)
        if not ids:
            raise KeyError(session)
        for node_id in ids:
            self._g.write(q.UNTRACK, {"id": node_id})

    def __iter__(self) -> Iterator[str | None]:
        return iter(list(self._grouped()))

    def __len__(self) -> int:
        return len(self._grouped())

    def items(self) -> Any:  # one query instead of one per session
        return self._grouped().items()


class _Inactive(MutableSet[str]):
    """The ids of superseded memories (the ``superseded`` flag)."""

    def __init__(self, graph: GraphKey, cache: ReadCache, snapshot: Callable[[], None]) -> None:
        self._g = graph
        self._cache = cache
        self._snapshot = snapshot  # reads the superseded count (and the turn) into the cache

    @classmethod
    def _from_iterable(cls, it: Iterable[Any]) -> set[Any]:
        return set(it)

    def __contains__(self, node_id: object) -> bool:
        if not isinstance(node_id, str):
            return False
        known = self._cache.superseded.get(node_id)
        if known is None:
            known = self._cache.superseded[node_id] = bool(self._g.read(q.IS_SUPERSEDED, {"id": node_id}))
        return known

    def __iter__(self) -> Iterator[str]:
        return iter([str(r[0]) for r in self._g.read(q.SUPERSEDED)])

    def __len__(self) -> int:
        if self._cache.superseded_count is None:  # asked twice by each recall
            self._snapshot()
        assert self._cache.superseded_count is not None
        return self._cache.superseded_count

    def add(self, node_id: str) -> None:
        self._cache.superseded_count = None
        self._cache.superseded.pop(node_id, None)
        self._g.write(q.SET_SUPERSEDED, {"id": node_id, "flag": True})
        self._cache.superseded[node_id] = True

    def discard(self, node_id: str) -> None:
        self._cache.superseded_count = None
        self._cache.superseded.pop(node_id, None)
        self._g.write(q.SET_SUPERSEDED, {"id": node_id, "flag": None})
        self._cache.superseded[node_id] = False

    def among(self, ids: Iterable[str]) -> set[str]:
        wanted = list(ids)
        found = {str(r[0]) for r in self._g.read(q.SUPERSEDED_AMONG, {"ids": wanted})}
        self._cache.superseded.update((i, i in found) for i in wanted)
        return found

    def __rsub__(self, other: Iterable[Any]) -> set[Any]:  # `subset - inactive`: one query
        items = set(other)
        return items - self.among(i for i in items if isinstance(i, str))


class FalkorPartition(PartitionBase):
    """One namespace on the server: graph, vectors, keywords and bookkeeping."""

    def __init__(self, graph: GraphKey, namespace: str, dim: int, *,
                 create_schema: Callable[[], None] | None = None, term_counts_from: int = ONE_STATEMENT_BELOW) -> None:
        graph = CheckedKey(graph.conn, graph.key)
        self._g = graph
        self._create_schema = create_schema  # the graph's indexes and counter (`FalkorDBBackend`)
        self.namespace = namespace
        self._cache = ReadCache()
        self._cosines = CosineCache()
        self.graph = FalkorGraphStore(graph, namespace, self._cache)
        self.graph.snapshot = self._snapshot
        self.vectors = FalkorVectorIndex(graph, dim, prefetch=self.graph.prefetch, cosines=self._cosines,
                                         ahead=lambda: list(self._cache.ahead))
        self.keywords = FalkorKeywordIndex(graph, prefetch=self.graph.prefetch,
                                           documents=lambda: self._cache.documents,
                                           counted=lambda: bool(self._cache.counted), counts_from=term_counts_from)
        self.entities = FalkorEntityIndex(graph)
        self.sessions = _Sessions(graph)
        self.inactive = _Inactive(graph, self._cache, self._snapshot)
        self._last_turn = 0  # the counter as this process last moved or read it
        self.call: int | None = None  # the atlas call this partition was last handed out in
        # the counts the last snapshot read (superseded, bounded, documents, per-term counts kept): a
        # recall's view (`speculate`)
        self._seen: tuple[int, int, int, bool] | None = None

    def speakers(self) -> set[str]:
        """`Partition.speakers` in one request (`shared_core.store.falkordb.speakers`)."""
        return speakers_of_rows(self._g.read(SPEAKERS))

    def begin(self, call: int | None = None, snapshot: Sequence[Sequence[Sequence[Any]]] | None = None, *,
              checked: bool = True) -> None:
        """A new atlas call (numbered ``call`` by the atlas's `CallLock`, None outside one):
        forget what the previous one read (see `ReadCache`); ``snapshot``, the rows of `SNAPSHOT`
        read just now, starts the new view. ``checked=False``: the server has not been asked
        whether the graph exists in this call; the call's first request asks (`read_checked`,
        or `check` before its first write), and creates the graph's schema if it is missing."""
        self.call = call
        self._cache.clear()
        self._g.view(None)
        if snapshot is not None:
            self._take_snapshot(snapshot)
        self._cosines.clear()
        self.vectors.forget()
        self._g.arm(None if checked or self._create_schema is None else self.check)

    def speculate(self, call: int | None) -> bool:
        """`begin` a recall's call on the counts the last snapshot read (superseded, bounded,
        BM25's documents, whether it keeps per-term counts; the turn is left unread), if there
        was one (else False, and nothing done): the call's first request confirms them
        (`CheckedKey.view`), and raises `StaleView` if the graph is gone or a count differs in
        what the call may have used before that request (the superseded and bounded counts; the
        documents only as over or under `ONE_STATEMENT_BELOW`; the per-term counts only as kept
        where they are not: the flag only turns on, and counting postings is always exact),
        after starting the call over on the fresh view."""
        seen = self._seen
        if seen is None:
            return False
        self.begin(call)
        cache = self._cache
        cache.superseded_count, cache.bounded, cache.documents, cache.counted = seen
        self._g.view((self.SNAPSHOT, self._confirm))
        return True

    def _confirm(self, exists: bool, snapshot: list[list[list[Any]]]) -> None:
        """The view's confirmation (see `speculate`)."""
        guessed = self._seen
        if not exists:
            self._seen = None
            self.call = None  # not this call's partition any more: the backend asks again
            raise StaleView(f"namespace {self.namespace!r} is gone")
        self._take_snapshot(snapshot)
        if _used(guessed) != _used(self._seen) or (guessed is not None and guessed[3] and not self._cache.counted):
            self.begin(self.call, snapshot)
            raise StaleView(f"namespace {self.namespace!r} changed its counts")

    @property
    def checked(self) -> bool:
        """Whether this call knows that the graph exists (see `begin`)."""
        return self._g.check is None

    def check(self) -> None:
        """Ask whether the graph exists (with the counters: `SNAPSHOT`), and create its schema
        if it does not: what a call handed out unchecked does before its first write."""
        exists, snapshot = self._g.conn.exists_and_read(self.key, self.SNAPSHOT)
        self._checked(exists, snapshot)

    def _checked(self, exists: bool, snapshot: Sequence[Sequence[Sequence[Any]]] | None) -> None:
        self._g.arm(None)
        if not exists and self._create_schema is not None:
            self._create_schema()
        if snapshot is not None:
            self._take_snapshot(snapshot)

    def read_checked(self, statements: Sequence[tuple[str, dict[str, Any]]]) -> list[list[list[Any]]]:
        """The rows of the read-only ``statements`` in one round trip, which, in a call that has not
        asked yet whether the graph exists (`begin`), also asks that (the schema is created if the
        graph is missing; the statements then read nothing). The counters are not read: a batch
        write takes its turns in its write statement and counts superseded hits in its search."""
        if self._g.check is None:
            return self._g.read_many(statements) if statements else []
        exists, results = self._g.conn.exists_and_read(self.key, statements)
        self._checked(exists, None)
        return results

    @property
    def key(self) -> str:
        return self._g.key

    @property
    def graph_key(self) -> GraphKey:
        return self._g

    # -- recall and batch writes in few round trips (`paths`) --------------------------------
    def candidates(self, query: CandidateQuery, allowed: Predicate) -> Candidates:
        return paths.gather(self, query, allowed)

    def default_candidates(self, query: CandidateQuery, allowed: Predicate) -> Candidates:
        """`PartitionBase.candidates` (a subset too large to send in one statement)."""
        return super().candidates(query, allowed)

    def expand(self, seeds: dict[str, float], walk: WalkSpec, walkable: Predicate | None) -> dict[str, float]:
        return paths.walk(self, seeds, walk, walkable)

    def neighbour_nodes(self, ids: Sequence[str], walk: WalkSpec) -> list[MemoryNode]:
        """One hop: the edges and the nodes they reach in one statement (`paths.neighbour_nodes`)."""
        if walk.hops != 1:
            return super().neighbour_nodes(ids, walk)
        return paths.neighbour_nodes(self, ids, walk)

    def write_batch(self, batch: WriteBatch) -> list[MemoryNode]:
        return writes.write_batch(self, batch)

    def written(self, nodes: Sequence[MemoryNode], touched: Iterable[str] | None) -> None:
        """Update this call's caches after a batch write: the new nodes as written, the edges of
        the ``touched`` ids (None: of every id) to be read again."""
        cache = self._cache  # new memories are not superseded; the bounded count grows by those that may expire
        if cache.bounded is not None:
            cache.bounded += sum(1 for n in nodes if n.expires_at is not None or n.valid_to is not None)
        self._cosines.clear()
        self.vectors.forget()
        for node in nodes:
            cache.nodes[node.id] = node
            cache.superseded[node.id] = False
        if touched is None:
            cache.edges.clear()
        for i in touched or ():
            cache.edges.pop(i, None)

    def remember_cosines(self, query: Vector, values: dict[str, float]) -> None:
        self._cosines.add(query, values)

    #: The statements of `_snapshot` (`FalkorDBBackend.partition` sends them with its ``EXISTS``).
    SNAPSHOT: tuple[tuple[str, dict[str, Any]], ...] = ((q.COUNTERS, {}),)

    def _snapshot(self) -> None:
        """The write counter, the superseded count, `bounded_nodes`, BM25's documents, whether the graph has
        held a backchannel and whether it keeps BM25's per-term counts, in one statement (a recall asks for
        all of them)."""
        self._take_snapshot(self._g.read_many(self.SNAPSHOT))

    def _take_snapshot(self, results: Sequence[Sequence[Sequence[Any]]]) -> None:
        rows = results[0]
        turn, superseded, bounded, documents, chatter, counted = rows[0] if rows else (None, 0, 0, 0, False, False)
        self._last_turn = self._cache.turn = 0 if turn is None else int(turn)
        self._cache.superseded_count = int(superseded or 0)
        self._cache.bounded = int(bounded or 0)
        self._cache.documents = int(documents or 0)
        self._cache.chatter = bool(chatter)
        self._cache.counted = bool(counted)
        self.keywords.kept = self.keywords.kept or self._cache.counted
        self._seen = (self._cache.superseded_count, self._cache.bounded, self._cache.documents, self._cache.counted)

    @property
    def turn(self) -> int:
        if self._cache.turn is None:
            self._snapshot()
        assert self._cache.turn is not None
        return self._cache.turn

    @turn.setter
    def turn(self, value: int) -> None:
        """Roll the counter back to ``value`` (a failed write), unless another process has taken
        turns since this one last moved it: then the failed write's turns stay unused."""
        self._cache.turn = None
        rows = self._g.write(q.ROLLBACK_TURN, {"expected": self._last_turn, "turn": int(value)})
        if rows:
            self._last_turn = int(value)

    def next_turn(self, count: int = 1) -> int:
        self._cache.turn = None
        rows = self._g.write(q.NEXT_TURN, {"count": int(count)})
        self._last_turn = self._cache.turn = int(rows[0][0])
        return self._last_turn - count + 1

    @property
    def known_turn(self) -> int | None:
        """The counter as this call last read or moved it (None: not read in this call)."""
        return self._cache.turn

    def took_turns(self, first: int, count: int) -> None:
        """A write reserved ``count`` turns from ``first`` (`cypher.RESERVE_TURNS`): the counter
        ends on the last."""
        self._last_turn = self._cache.turn = first + count - 1

    def give_back(self, first: int) -> None:
        """Roll the counter back to before ``first`` (a failed write's turns; see ``turn``)."""
        self.turn = first - 1

    def track(self, node_id: str, session_id: str | None, timestamp: float) -> None:
        self._g.write(q.TRACK, {"id": node_id})

    def untrack(self, node_id: str, session_id: str | None, timestamp: float) -> None:
        self._cache.superseded_count = None
        self._cache.superseded.pop(node_id, None)
        self._g.write(q.UNTRACK, {"id": node_id})

    def between(self, start: float, end: float) -> list[str]:
        return [str(r[0]) for r in self._g.read(q.BETWEEN, {"start": float(start), "end": float(end)})]

    def latest(self, session_id: str | None, n: int) -> list[str]:
        return [] if n <= 0 else self.sessions.ids(session_id, limit=n, newest_first=True)

    def _rescale(self, node_id: str, *, reinforce: bool, factor: float, now: float,
                 config: AtlasConfig) -> MemoryNode | None:
        params = {"id": node_id, "now": float(now), "factor": float(factor), "ln2": _LN2,
                  "half_life": float(config.half_life), "floor": float(config.weight_floor),
                  "cap": float(config.weight_cap), "recency_gain": 0.5}
        self._cache.nodes.pop(node_id, None)
        self._cache.turn = None
        rows = self._g.write(q.rescale(config.decay_unit, config.weight_model, reinforce=reinforce), params)
        if not rows:
            return None
        node = self._cache.nodes[node_id] = node_from_row(rows[0], self.namespace)
        return node

    def reinforce(self, node_id: str, *, now: float, config: AtlasConfig) -> MemoryNode | None:
        return self._rescale(node_id, reinforce=True, factor=config.reinforce_factor, now=now, config=config)

    def reinforce_many(self, node_ids: Sequence[str], *, now: float, config: AtlasConfig,
                       vectors: bool = True) -> list[MemoryNode | None]:
        """`reinforce` of each id in one statement (each memory still one atomic step), with the
        memories' raw vectors in its reply (kept for this call's `FalkorVectorIndex.get_many`)
        only when the caller reads ``vectors`` next."""
        if not node_ids:
            return []
        params = {"ids": list(node_ids), "now": float(now), "factor": float(config.reinforce_factor), "ln2": _LN2,
                  "half_life": float(config.half_life), "floor": float(config.weight_floor),
                  "cap": float(config.weight_cap), "recency_gain": 0.5}
        for node_id in node_ids:
            self._cache.nodes.pop(node_id, None)
        self._cache.turn = None
        rows = self._g.write(q.batch_rescale(config.decay_unit, config.weight_model, reinforce=True,
                                             vectors=vectors), params)
        for row in rows:
            node = node_from_row(row[:-1] if vectors else row, self.namespace)
            self._cache.nodes[node.id] = node
            if vectors:
                self.vectors.remember(node.id, row[-1])
        return [self._cache.nodes.get(i) for i in node_ids]

    def fade(self, node_id: str, factor: float, *, now: float, config: AtlasConfig) -> MemoryNode | None:
        return self._rescale(node_id, reinforce=False, factor=factor, now=now, config=config)

    def __repr__(self) -> str:
        return f"FalkorPartition({self.namespace!r}, key={self._g.key!r})"


def _used(counts: tuple[int, int, int, bool] | None) -> tuple[int, int, bool] | None:
    """What a recall uses of a snapshot's counts before its first request (see
    `FalkorPartition.speculate`), the per-term counts' flag aside.

    >>> _used((0, 0, 10_000, False)) == _used((0, 0, 10_001, False)), _used((1, 0, 5, False)) == _used((0, 0, 5, False))
    (True, False)
    """
    return None if counts is None else (counts[0], counts[1], counts[2] >= ONE_STATEMENT_BELOW)
