"""`FalkorDBBackend`: one memory shared by many processes, on a FalkorDB server.

Each namespace is one graph key (``atlas:<namespace>``, ``%`` and ``:`` escaped: see
`shared_core.store.falkordb.client.graph_key`) with a range index on ``id``,
``session_id`` and ``timestamp``, a cosine vector index on ``embedding`` and an index on each
memory's BM25 terms; isolation stays structural, as in process: every statement runs on one graph.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from collections.abc import Iterator, MutableMapping
from typing import Any

from ...values import _validate as check
from ...values.config import AtlasConfig
from ...values.errors import BackendError, InvalidInputError
from ..base import BackendBase
from ..contract import AtlasLock
from . import cypher as q
from .bm25 import BACKFILL_COUNTS, TERM_INDEX
from .calls import CallLock
from .client import Connection, GraphKey, Settings, graph_key, namespace_of, paced, parse_url
from .heads import SESSION_INDEX
from .indexes import ONE_STATEMENT_BELOW
from .partition import FalkorPartition
from .replication import ConfirmingLock

__all__ = ["FalkorDBBackend"]


class FalkorDBBackend(BackendBase):
    """The atlas's storage on a FalkorDB server (see ``docs/falkordb.md``).

    >>> from shared_core import ElasticMemoryAtlas
    >>> atlas = ElasticMemoryAtlas(backend="falkordb://127.0.0.1:6379")  # doctest: +SKIP

    ``dim`` is the embedder's dimension (the vector index's). Connecting pings the server, so a
    wrong address or a server without the FalkorDB module fails here, with `BackendError`,
    within a few seconds. ``replicas`` and ``replica_timeout``, when given, replace the
    settings' (the URL's ``?replicas=N&replica_timeout=S``): each atlas call then returns only
    once N replicas confirmed its writes, else raises `ReplicationError`
    (`shared_core.store.falkordb.replication`). ``term_counts_from`` (>= 1) is the number of
    documents from which a namespace keeps BM25's per-term document counts
    (`shared_core.store.falkordb.bm25`; by default `indexes.ONE_STATEMENT_BELOW`, where a search
    starts to count a query's stems in a statement of its own); a smaller one lets a test cross it.
    """

    def __init__(self, settings: Settings | None = None, *, dim: int, replicas: int | None = None,
                 replica_timeout: float | None = None, term_counts_from: int = ONE_STATEMENT_BELOW) -> None:
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
            raise InvalidInputError(f"dim must be a positive int, got {dim!r}")
        if isinstance(term_counts_from, bool) or not isinstance(term_counts_from, int) or term_counts_from < 1:
            raise InvalidInputError(f"term_counts_from must be an int >= 1, got {term_counts_from!r}")
        self.term_counts_from = term_counts_from
        settings = settings or Settings()
        if replicas is not None:
            settings = dataclasses.replace(settings, replicas=replicas)
        if replica_timeout is not None:
            settings = dataclasses.replace(settings, replica_timeout=replica_timeout)
        self.settings = settings
        self.dim = dim
        self.conn = Connection(self.settings)
        self._parts: dict[str, FalkorPartition] = {}
        self._lock = threading.Lock()
        self._calls: CallLock | None = None  # the atlas's lock, once attached
        self.conn.ping()

    @classmethod
    def from_url(cls, url: str, *, dim: int, replicas: int | None = None, replica_timeout: float | None = None,
                 term_counts_from: int = ONE_STATEMENT_BELOW) -> FalkorDBBackend:
        """``falkordb://[user:password@]host:port[?ttl=S&prefix=P&timeout=S&retry_for=S&replicas=N&replica_timeout=S]``."""
        return cls(parse_url(url), dim=dim, replicas=replicas, replica_timeout=replica_timeout,
                   term_counts_from=term_counts_from)

    def attach(self, *, dim: int, config: AtlasConfig | None) -> AtlasLock | None:
        """The atlas's lock, a `CallLock` (one per backend): within one atlas call a partition
        is handed out again without asking the server (see `partition`). With ``replicas``, a
        `ConfirmingLock`: it raises `ReplicationError` when an atlas call whose writes too few
        replicas confirmed ends."""
        with self._lock:
            if self._calls is None:
                confirmations = self.conn.confirmations
                self._calls = CallLock() if confirmations is None else ConfirmingLock(confirmations)
            return self._calls

    def confirm(self) -> None:
        """Raise `ReplicationError` for this thread's first write since the last check that too
        few replicas confirmed (the atlas's lock does this after each call; use it after writing
        through partitions directly). Nothing to do without ``replicas``."""
        if self.conn.confirmations is not None:
            self.conn.confirmations.check()

    @property
    def url(self) -> str:
        return self.settings.url

    def key(self, namespace: str) -> str:
        """The namespace's graph key; a namespace the atlas would refuse raises `InvalidInputError`
        here too, so no caller of the backend reaches a key with a control character in it."""
        return graph_key(self.settings.prefix, check.namespace(namespace))

    def partition(self, namespace: str, *, create: bool = False) -> FalkorPartition | None:
        """The namespace's partition with a fresh view of the server (`FalkorPartition.begin`),
        or None if it has no graph (unless ``create``). Within one atlas call (the attached lock
        held: `CallLock`), a partition already handed out in that call comes back as it is,
        without asking the server again: the call keeps the view it started with. A partition
        this process has handed out before, asked for with ``create`` (a write) in a new call,
        comes back without a request: its first request asks whether the graph exists (and
        creates it if another process dropped it), so that a write's ``EXISTS`` rides with its
        reads (`FalkorPartition.read_checked`)."""
        call = None if self._calls is None else self._calls.current()
        if call is not None:
            with self._lock:
                known = self._parts.get(namespace)
            if known is not None and known.call == call and (create or known.checked):
                return known
            if known is not None and create and known.call != call:
                known.begin(call, checked=False)
                return known
        key = self.key(namespace)
        exists, snapshot = self.conn.exists_and_read(key, FalkorPartition.SNAPSHOT)  # one round trip
        if not exists and not create:
            return None
        with self._lock:
            part = self._parts.get(namespace)
            upgraded = part is None and exists
            if part is None:
                part = FalkorPartition(GraphKey(self.conn, key), namespace, self.dim,
                                       create_schema=lambda: self._create_schema(key),
                                       term_counts_from=self.term_counts_from)
                if exists:  # made by another process, or an earlier version: its indexes built first
                    self._check_dimension(part)
                    if self._upgrade(part):
                        self.until_built(part.key)
                self._parts[namespace] = part
        if not exists:
            try:
                self._create_schema(key)
            except BaseException:
                with self._lock:  # not handed out: the next request opens the graph as another process's
                    if self._parts.get(namespace) is part:
                        del self._parts[namespace]
                raise
        # every atlas call asks for its partition first: a fresh view of the server (the counters
        # read with EXISTS, unless the graph was just upgraded or created)
        part.begin(call, snapshot if exists and not upgraded else None)
        return part

    def recall_partition(self, namespace: str) -> FalkorPartition | None:
        """`Backend.recall_partition`: a partition this process has handed out before (its graph
        existed) comes back, in a new call, on the counts it last read (`FalkorPartition.speculate`),
        without a request: its ``EXISTS`` and counters ride in the recall's first request (the
        candidates' pipeline), which raises `StaleView` if they changed. Else `partition`."""
        call = None if self._calls is None else self._calls.current()
        if call is not None:
            with self._lock:
                known = self._parts.get(namespace)
            if known is not None and known.call != call and known.checked and known.speculate(call):
                return known
        return self.partition(namespace)

    def _create_schema(self, key: str) -> None:
        """Indexes and the counter node of graph ``key``, returning once the server has built
        the indexes (`until_built`); another process creating them at once is fine."""
        graph = GraphKey(self.conn, key)
        for statement in (q.RANGE_INDEX, q.EMBEDDING_INDEX, q.FLAGS_INDEX, q.vector_index(self.dim), q.TERMS_INDEX,
                          SESSION_INDEX, TERM_INDEX):
            _created(graph, statement)
        graph.write(q.COUNTER)
        self.until_built(key)

    def until_built(self, key: str) -> list[list[Any]]:
        """The rows of `cypher.INDEX_STATES` (label, options, status) of graph ``key``, once the
        server has built every index of it (each "OPERATIONAL"); asked again (10 ms doubling to
        200 ms) for at most the settings' ``timeout`` seconds, then `BackendError`.

        FalkorDB builds an index on one thread per server, after the statement that created it
        has returned, one index after another. A node written to a label whose index is being
        built is indexed twice (by the write, then by the build), and the vector index keeps the
        first copy as a stale entry that still counts towards k: a k-nearest search then answers
        fewer than k hits (none for k = 1), for good. Under load that thread falls behind the
        writes, so no namespace is written before its indexes are built: a new graph's schema
        waits here, and so does a process opening a graph another process has just made
        (`tests/falkordb/test_index_build.py`). A built index answers at once: one read.
        """
        graph = GraphKey(self.conn, key)
        building: list[str] = []
        for _ in paced(self.settings.timeout):
            rows = graph.read(q.INDEX_STATES)
            building = sorted({str(label) for label, _, status in rows if status != "OPERATIONAL"})
            if not building:
                return rows
        raise BackendError(f"FalkorDB at {self.url} has not built the indexes of {', '.join(building)} "
                           f"in {key!r} after {self.settings.timeout:g} s")

    def _upgrade(self, part: FalkorPartition) -> bool:
        """A graph written by an earlier version: create what it lacks (once; afterwards each
        index exists and this is one refused statement per index). Whether it made an index.

        - Before the flags' index: flag the memories that may stop being current.
        - Before BM25's terms: the memories' text was under a full-text index (RediSearch's TF-IDF,
          which ranked unlike the in-process BM25): index each text's terms in the order the
          memories were written, then drop the text and the full-text index.
        - Before the sessions' nodes (`heads.SESSION_INDEX`): their index; a session without a
          node has its memories scanned once, by its next write, which makes the node.
        - Before the backchannel flag (`GraphStore.mark_chatter`): each memory without it gets it,
          computed from its content (`formulas.chatter.contentless`); a memory put without a batch
          write (a summary) gets it at the next open.
        - Before each document's length and repeated terms (``n.tlen``, ``n.reps``, which BM25's
          one-statement search reads instead of the terms): both, from the terms
          (`cypher.BACKFILL_REPEATS`, last, after the terms of any migration below; one
          statement, nothing once the graph is flagged).
        - Before BM25's per-term counts (`cypher.TERM_INDEX`): their index, built before any
          count is written. Then, in any graph of ``term_counts_from`` documents or more that keeps
          none (written by an earlier version, or a process stopped between a write that crossed
          the size and its count), every stem counted once (`cypher.BACKFILL_COUNTS`, after the
          terms of any migration below; one statement, nothing for a smaller or a counted graph).
        """
        part.graph.backfill_chatter()
        graph = GraphKey(self.conn, part.key)
        counts = _created(graph, TERM_INDEX)
        if counts:
            self.until_built(part.key)
        sessions = _created(graph, SESSION_INDEX)
        flags = _created(graph, q.FLAGS_INDEX)
        if flags:
            graph.write(q.BACKFILL_BOUNDED)
        terms = _created(graph, q.TERMS_INDEX)
        if terms:
            graph.write(q.COUNTER)
            texts = [(str(i), str(t), None) for i, t in graph.read(q.OLD_TEXTS)]
            part.keywords.add_many(texts)
            graph.write(q.DROP_OLD_TEXTS)
            with contextlib.suppress(BackendError):  # none there
                graph.write(q.DROP_FULLTEXT_INDEX)
        graph.write(q.BACKFILL_REPEATS)
        graph.write(BACKFILL_COUNTS, {"from": self.term_counts_from})
        return sessions or flags or terms or counts

    def _check_dimension(self, part: FalkorPartition) -> None:
        """Refuse a graph whose vectors have another dimension than this atlas's (read once its
        indexes are built: `until_built`)."""
        for label, options, _ in self.until_built(part.key):
            found = (options or {}).get("embedding", {}) if label == "Embedding" else {}
            dim = found.get("dimension") if isinstance(found, dict) else None
            if dim is not None and int(dim) != self.dim:
                raise InvalidInputError(f"namespace {part.namespace!r} on {self.url} holds {dim}-dimensional "
                                        f"vectors; this atlas embeds in {self.dim} dimensions")

    def namespaces(self) -> Iterator[str]:
        """This prefix's namespaces only: a nested prefix's keys (``pp:team2:alice`` seen from
        ``pp:``) decode to no namespace and are skipped."""
        prefix = self.settings.prefix
        return iter(sorted(ns for k in self.conn.graphs() if (ns := namespace_of(prefix, k)) is not None))

    def drop(self, namespace: str) -> None:
        """Delete a namespace's graph on the server (every process loses it)."""
        with self._lock:
            self._parts.pop(namespace, None)
        self.conn.delete(self.key(namespace))

    def find(self, node_id: str) -> str | None:
        """The namespace holding a memory id (one indexed lookup per namespace)."""
        for ns in self.namespaces():
            part = self.partition(ns)
            if part is not None and part.graph.has(node_id):
                return ns
        return None

    def directory(self) -> MutableMapping[str, str]:
        """The atlas's id -> namespace map, answering for memories other processes wrote."""
        return _Directory(self)

    def close(self) -> None:
        self.conn.close()

    def __repr__(self) -> str:
        return f"FalkorDBBackend({self.url!r}, prefix={self.settings.prefix!r}, dim={self.dim})"


def _created(graph: GraphKey, index: str) -> bool:
    """Create an index; False if it was there already."""
    try:
        graph.write(index)
    except BackendError as exc:
        if "already indexed" not in str(exc):
            raise
        return False
    return True


class _Directory(MutableMapping[str, str]):
    """id -> namespace. A memory never changes namespace and its id is random, so what this
    process wrote or found is kept; anything else is looked up on the server. Its length and
    iteration are the server's: every memory of every namespace."""

    def __init__(self, backend: FalkorDBBackend) -> None:
        self._backend = backend
        self._known: dict[str, str] = {}

    def __getitem__(self, node_id: str) -> str:
        ns = self._known.get(node_id)
        if ns is None:
            ns = self._backend.find(node_id) if isinstance(node_id, str) else None
            if ns is None:
                raise KeyError(node_id)
            self._known[node_id] = ns
        return ns

    def __setitem__(self, node_id: str, namespace: str) -> None:
        self._known[node_id] = namespace

    def __delitem__(self, node_id: str) -> None:
        self._known.pop(node_id, None)

    def pop(self, node_id: str, default: Any = None) -> Any:
        return self._known.pop(node_id, default)

    def __iter__(self) -> Iterator[str]:
        ids: list[str] = []
        for ns in self._backend.namespaces():
            part = self._backend.partition(ns)
            if part is not None:
                ids.extend(part.graph.node_ids())
        return iter(ids)

    def __len__(self) -> int:
        total = 0
        for ns in self._backend.namespaces():
            part = self._backend.partition(ns)
            total += part.graph.node_count() if part is not None else 0
        return total
