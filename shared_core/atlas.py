"""`ElasticMemoryAtlas`: the public face of the engine.

The atlas validates input, embeds outside its lock, then applies each write to the namespace's
partition under one re-entrant lock, so threads and asyncio tasks can share it. Formulas live in
`decay`, `scoring` and `budget`; recall in `recall`; rendering in `context`; eviction, expiry and
statistics in `lifecycle`.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Collection, Iterable, Mapping, MutableMapping, Sequence
from dataclasses import replace
from functools import partial
from typing import Any

import numpy as np
import numpy.typing as npt

from ._atlas_mixins import AsyncForms, NotebookViews, Persistence, Relations
from .engine import writes
from .engine.context import STYLES, build_context_block, context_breadth, diversify, summaries_beside_sources
from .engine.events import AtlasEvent, EventLog
from .engine.lifecycle.compression import CompressionReport
from .engine.lifecycle.maintenance import MaintenanceReport, MaintenanceTimer, maintain, summarize_session
from .engine.lifecycle.manager import AtlasStats, Lifecycle
from .engine.recall import RecallRequest, recall
from .engine.state import EngineState
from .engine.writes import MemorySpec, build_spec, insert_batches, insert_memory, specs_from_items
from .formulas.filters import compile_filters
from .store.contract import AtlasLock, Backend, Partition
from .store.memory.backend import InProcessBackend
from .text.embedding import Embedder, as_embedder, normalize_rows
from .text.tokens import TokenCounter, as_token_counter
from .values import _validate as check
from .values.clock import Clock, SystemClock
from .values.config import AtlasConfig
from .values.errors import (
    HeldInWorkingMemoryError,
    InvalidInputError,
    InvalidMemoryError,
    MemoryNotFoundError,
    NamespaceViolationError,
)
from .values.model import Context, MemoryEdge, MemoryNode, Relation, ScoredMemory, scored_of, with_embedding

__all__ = ["ElasticMemoryAtlas"]

logger = logging.getLogger("shared_core")
LinkSpec = str | tuple[str, str] | tuple[str, str, float]


class ElasticMemoryAtlas(Persistence, AsyncForms, NotebookViews, Relations):
    """An in-process memory graph for agents: elastic weights, hybrid recall, token budgets.

    >>> from shared_core import ElasticMemoryAtlas, HashingEmbedder
    >>> atlas = ElasticMemoryAtlas(embedder=HashingEmbedder())
    >>> node = atlas.add_memory("User prefers oat milk", namespace="alice", session_id="s1")
    >>> atlas.retrieve("which milk?", namespace="alice", top_k=1)[0].node.content
    'User prefers oat milk'
    >>> atlas.retrieve("which milk?", namespace="bob")
    []
    """

    def __init__(self, *, config: AtlasConfig | None = None, embedder: object | None = None,
                 token_counter: TokenCounter | Callable[[str], int] | None = None,
                 clock: Clock | None = None, backend: Backend | str | None = None,
                 event_log_size: int = 10_000, llm: Any = None, contradiction_detector: Any = None,
                 write_filter: Any = None, summarizer: Any = None) -> None:
        if config is not None and not isinstance(config, AtlasConfig):
            raise InvalidInputError(f"config must be an AtlasConfig, got {type(config).__name__}")
        if clock is not None and not isinstance(clock, Clock):
            raise InvalidInputError(f"clock must have a now() -> float method, got {clock!r}")
        cfg = config or AtlasConfig()
        model: Embedder = as_embedder(embedder)
        self._token_counter_arg = token_counter
        self._counter: TokenCounter | None = None if token_counter is None else as_token_counter(token_counter)
        self._backend_arg = backend
        given = _backend_from_url(backend, model.dim) if isinstance(backend, str) else backend
        self._state = EngineState(config=cfg, embedder=model, clock=clock or SystemClock(),
                                  events=EventLog(maxlen=event_log_size), backend=given,
                                  make_backend=lambda: InProcessBackend(dim=model.dim, config=cfg))
        self._life = Lifecycle(self._state, llm=llm, contradiction_detector=contradiction_detector,
                               write_filter=write_filter, summarizer=summarizer)
        reopened = None if given is None else given.lifecycle_state()
        if given is not None and reopened is not None:  # a durable backend reopened: bookkeeping, expiries, bytes
            from .engine.persistence import bookkeeping, restore_bookkeeping

            restore_bookkeeping(self._state, reopened, self._life.restore, where=repr(given))
            given.keep(partial(bookkeeping, self._state, self._life.state))
        every = None if given is None else given.maintenance_interval()
        self._maintenance = None if every is None else MaintenanceTimer(self.maintain, every=every)

    # -- plumbing: the engine's state (`shared_core.engine.state.EngineState`) ------------------
    @property
    def config(self) -> AtlasConfig:
        return self._state.config

    @property
    def embedder(self) -> Embedder:
        return self._state.embedder

    @property
    def clock(self) -> Clock:
        return self._state.clock

    @property
    def events(self) -> EventLog:
        return self._state.events

    @property
    def backend(self) -> Backend:
        return self._state.backend

    @property
    def _lock(self) -> AtlasLock:
        return self._state.lock

    @property
    def _where(self) -> MutableMapping[str, str]:
        return self._state.where

    @property
    def token_counter(self) -> TokenCounter:
        if self._counter is None:  # tiktoken's table is built only when needed
            self._counter = as_token_counter(None)
        return self._counter

    def count_tokens(self, text: str) -> int:
        """Exact tokens of ``text`` with the atlas's counter (cl100k_base by default)."""
        return self.token_counter.count(text)

    def _embed(self, texts: Sequence[str], *, progress: bool = False) -> npt.NDArray[np.float32]:
        return self._state.embed(texts, progress=progress)

    def _embed_query(self, text: str) -> npt.NDArray[np.float32]:
        query = getattr(self.embedder, "embed_query", None)
        rows = normalize_rows(query(text), dim=self.embedder.dim) if callable(query) else self._embed([text])
        vector: npt.NDArray[np.float32] = rows[0]
        return vector

    def _part(self, namespace: str) -> Partition | None:
        return self.backend.partition(namespace)

    def _locate(self, node_id: object, namespace: str | None, name: str = "node_id"
                ) -> tuple[Partition, MemoryNode]:
        node_id = check.node_id(node_id, name)
        namespace = None if namespace is None else check.namespace(namespace)
        ns = self._where.get(node_id)
        if ns is None and self._held(node_id, namespace) is not None:
            raise HeldInWorkingMemoryError(
                f"{node_id!r} is held in working memory (the write filter kept it out of the graph), not a stored "
                "memory: get, update_memory and forget accept it; to link it, write it with keep=True")
        if ns is None or (namespace is not None and ns != namespace):
            raise MemoryNotFoundError(f"no memory with id {node_id!r}"
                                      + (f" in namespace {namespace!r}" if namespace else ""))
        part = self._part(ns)
        node = part.graph.get_node(node_id) if part else None
        if part is None or node is None:
            raise MemoryNotFoundError(f"no memory with id {node_id!r}")
        return part, node

    def _held(self, node_id: object, namespace: str | None) -> MemoryNode | None:
        """The turn held in working memory under this ``wm-`` id (in ``namespace``, when given)."""
        node = self._life.held.find(node_id) if isinstance(node_id, str) else None
        return None if node is None or (namespace is not None and node.namespace != namespace) else node

    def _public(self, part: Partition, node: MemoryNode) -> MemoryNode:
        return self._state.public(part, node)

    # -- writes -------------------------------------------------------------------------------
    def add_memory(self, content: str, *, namespace: str, session_id: str | None = None,
                   timestamp: Any = None, metadata: Mapping[str, Any] | None = None,
                   importance: float | None = None, pinned: bool = False, ttl: float | None = None,
                   links_to: Sequence[LinkSpec] = (), embedding: Any = None, keep: bool = False,
                   valid_from: Any = None) -> MemoryNode:
        """Store one memory and link it: ``before`` from the session's previous memory,
        ``similar_to`` to the closest memories of the namespace, and any ``links_to`` given.

        ``timestamp`` is when the remembered thing happened (default: now); ``ttl`` seconds
        until it expires; ``embedding`` skips the model; ``importance`` is the starting weight
        (default 1.0); ``valid_from`` (a datetime, ISO string or POSIX seconds; default: now)
        is when the fact became true, which ``as_of`` recall reads. Returns the stored node.

        With the write filter on (`AtlasConfig.managed`), a turn it scores as unimportant is held
        in working memory instead and comes back with ``kind="working"`` and a ``wm-`` id, which
        `get`, `update_memory` and `forget` accept (other calls raise `HeldInWorkingMemoryError`).
        A write that states intent always passes the filter: ``keep=True``, an explicit
        ``importance``, ``pinned=True`` or ``links_to``.
        """
        spec = build_spec(self.config, self.embedder.dim, content, namespace=namespace,
                          session_id=session_id, timestamp=timestamp, metadata=metadata,
                          importance=importance, pinned=pinned, ttl=ttl, links_to=links_to,
                          embedding=embedding, keep=keep, valid_from=valid_from)
        return self._write([spec], progress=False)[0]

    def add_memories(self, items: Sequence[str | Mapping[str, Any]], *, namespace: str,
                     session_id: str | None = None, progress: bool | None = None) -> list[MemoryNode]:
        """Store many memories with one embedding call; all or nothing.

        Items are strings or dicts with the keyword arguments of `add_memory` (``content``
        required; ``namespace`` and ``session_id`` default to this call's). A progress bar shows
        by default for 256+ items in a terminal or notebook.
        """
        with writes.collector_paused():  # for the validation too (see _write)
            specs = specs_from_items(self.config, self.embedder.dim, items, namespace=namespace, session_id=session_id)
        show = len(specs) >= 256 and (sys.stderr.isatty() or "ipykernel" in sys.modules)
        return self._write(specs, progress=show if progress is None else bool(progress))

    def _write(self, specs: Sequence[MemorySpec], *, progress: bool) -> list[MemoryNode]:
        held = self._life.hold_back(specs)  # the write filter: unimportant turns stay in working memory only
        specs = [s for i, s in enumerate(specs) if i not in held]
        missing = [i for i, s in enumerate(specs) if s.embedding is None]
        vectors: dict[int, npt.NDArray[np.float32]] = {}
        if missing:  # the model runs with the collector on: it is process-wide, and a model call can be long
            embedded = self._embed([specs[i].content for i in missing], progress=progress)
            vectors = dict(zip(missing, embedded, strict=True))
        mentions = writes.entity_keys([s.content for s in specs], self.config, llm=self._life.llm)  # outside the lock
        with writes.collector_paused(), self._lock:  # no cycles to find (see collector_paused)
            self._check_links(specs)
            self._life.namespaces.check_limit((s.namespace for s in specs), self.config.max_namespaces)
            now = self.clock.now()
            written: list[tuple[Partition, MemoryNode]] = []
            turns = {ns: p.turn for ns in {s.namespace for s in specs} if (p := self._part(ns)) is not None}
            try:
                batch = [spec.embedding if spec.embedding is not None else vectors[i]
                         for i, spec in enumerate(specs)]
                where = self._state.where
                for part, nodes in insert_batches(self.backend, specs, batch, now, self.config,
                                                  on_rollback=self._life.remove, mentions=mentions):
                    for node in nodes:  # each group is all-or-nothing; earlier groups are undone below
                        where[node.id] = part.namespace
                        if node.expires_at is not None:
                            self._life.schedule_expiry(node)
                        written.append((part, node))
            except BaseException:
                for part, node in reversed(written):
                    self._life.remove(part, node, kind=None, reason="rollback")
                for part, _ in written:
                    part.turn = turns.get(part.namespace, 0)
                self._life.drop_empty(also={s.namespace for s in specs})  # a namespace the failed write made
                raise
            self.events.emit_many("add", namespaces=[part.namespace for part, _ in written],
                                  node_ids=[node.id for _, node in written], at=now, reason="add_memory",
                                  session_id=[node.session_id for _, node in written])
            self._life.after_write(now, protect={node.id for _, node in written})
            kept = writes.returned_nodes(written, batch, self._where)  # the batch's rows: no read back
            out = self._life.hold(held, kept, now)
        self._life.settle(kept)  # the contradiction check and due compression, outside the lock
        return out

    def _insert(self, spec: MemorySpec, vec: npt.NDArray[np.float32], now: float, *,
                mentions: Sequence[Sequence[str]] | None = None) -> tuple[Partition, MemoryNode]:
        part = self.backend.partition(spec.namespace, create=True)
        assert part is not None
        node = insert_memory(part, spec, vec, now, self.config, on_rollback=self._life.remove, mentions=mentions)
        self._where[node.id] = spec.namespace
        if node.expires_at is not None:
            self._life.schedule_expiry(node)
        return part, node

    def _check_links(self, specs: Sequence[MemorySpec]) -> None:
        for spec in specs:
            for target, _, _ in spec.links:
                ns = self._where.get(target)
                if ns is None:
                    raise MemoryNotFoundError(f"links_to: no memory with id {target!r}")
                if ns != spec.namespace:
                    raise NamespaceViolationError(
                        f"links_to: memory {target!r} is not in namespace {spec.namespace!r}")

    def link(self, source: str, target: str, *, relation: str | Relation = "related_to",
             strength: float = 1.0, metadata: Mapping[str, Any] | None = None,
             namespace: str | None = None) -> MemoryEdge:
        """Add (or replace) a typed edge between two memories of the same namespace."""
        rel = self._relation(relation)
        strength = check.number(strength, "strength", minimum=0.0)
        meta = check.metadata(metadata)
        with self._lock:
            part, _ = self._locate(source, namespace, "source")
            ns_target = self._where.get(check.node_id(target, "target"))
            if ns_target is None and self._held(target, None) is not None:
                self._locate(target, None, "target")  # raises HeldInWorkingMemoryError
            if ns_target is None:
                raise MemoryNotFoundError(f"no memory with id {target!r}")
            if ns_target != part.namespace:
                raise NamespaceViolationError(
                    f"cannot link {source!r} to {target!r}: they are in different namespaces")
            if source == target:
                raise InvalidInputError(f"cannot link memory {source!r} to itself")
            now = self.clock.now()
            edge = MemoryEdge(source=source, target=target, relation=rel, strength=strength,
                              created_at=now, metadata=meta)
            part.graph.put_edge(edge)
            self._life.namespaces.touch((part.namespace,))
            self.events.emit("link", namespace=part.namespace, node_id=source, at=now,
                             reason=rel.value, target=target)
            return edge

    def update_memory(self, node_id: str, content: str, *, metadata: Mapping[str, Any] | None = None,
                      importance: float | None = None, embedding: Any = None,
                      namespace: str | None = None, session_id: str | None = None,
                      reason: str = "update", valid_from: Any = None) -> MemoryNode:
        """Store a corrected version: a new node that ``supersedes`` the old one.

        The old node is kept, with ``valid_to`` set, and leaves recall unless
        ``include_history=True``; `history` returns the chain. Metadata merges into the old;
        the new version stays in the old one's session unless ``session_id`` names the session
        in which the correction was made. ``valid_from`` (default: now) is when the correction
        became true: the old version is valid until then (it must not be before the old one's
        own ``valid_from``).
        in which the correction was made.

        A held turn's ``wm-`` id is accepted: the correction is stored as a new memory (the
        caller asked for it: the write filter passes it) and the held turn leaves working memory.
        """
        with self._lock:
            held = self._held(node_id, None if namespace is None else check.namespace(namespace))
        if held is not None:
            node = self.add_memory(content, namespace=held.namespace, session_id=held.session_id if session_id is None
                                   else session_id, metadata={**held.metadata, **check.metadata(metadata)},
                                   importance=held.importance if importance is None else importance,
                                   embedding=embedding, keep=True)
            with self._lock:
                self._life.held.remove(held.id)
            return node
        with self._lock:
            part, old = self._locate(node_id, namespace)
            if old.valid_to is not None:
                raise InvalidInputError(f"memory {node_id!r} was already superseded; update its newest version")
            merged = {**old.metadata, **check.metadata(metadata)}
            spec = build_spec(self.config, self.embedder.dim, content, namespace=old.namespace,
                              session_id=old.session_id if session_id is None else session_id,
                              metadata=merged,
                              importance=old.importance if importance is None else importance,
                              pinned=old.pinned, embedding=embedding, valid_from=valid_from)
            if spec.valid_from is not None and spec.valid_from < old.valid_from:
                raise InvalidMemoryError(f"valid_from {spec.valid_from!r} is before the old version's "
                                         f"valid_from {old.valid_from!r}")
        vec = spec.embedding if spec.embedding is not None else self._embed([spec.content])[0]
        mentions = writes.entity_keys([spec.content], self.config, llm=self._life.llm)  # outside the lock
        with self._lock:
            part, old = self._locate(node_id, namespace)
            if old.valid_to is not None:
                raise InvalidInputError(f"memory {node_id!r} was already superseded; update its newest version")
            now = self.clock.now()
            turn = part.turn
            new_part, new = self._insert(spec, vec, now, mentions=mentions)
            ends = new.valid_from if spec.valid_from is not None else now
            marked = False
            try:  # all or nothing: a failure below removes the new version and restores the old
                part.graph.put_edge(MemoryEdge(source=new.id, target=old.id, relation=Relation.SUPERSEDES,
                                               strength=1.0, created_at=now))
                part.graph.put_node(replace(old, valid_to=ends))
                marked = True
                part.inactive.add(old.id)
            except BaseException:
                self._life.remove(new_part, new, kind=None, reason="rollback")  # its edges go with it
                part.turn = turn
                if marked:
                    part.graph.put_node(old)
                    part.inactive.discard(old.id)
                raise
            self.events.emit("update", namespace=part.namespace, node_id=new.id, at=now,
                             reason=reason, supersedes=old.id)
            self._life.after_write(now, protect={new.id})
            return self._public(new_part, new)

    def forget(self, node_id: str, *, namespace: str | None = None) -> None:
        """Delete a memory and its edges for good (unlike `update_memory`, which keeps history).
        A held turn's ``wm-`` id is accepted: the turn leaves working memory."""
        with self._lock:
            held = self._held(node_id, None if namespace is None else check.namespace(namespace))
            if held is not None:
                self._life.held.remove(held.id)
                self.events.emit("forget", namespace=held.namespace, node_id=held.id, at=self.clock.now(),
                                 reason="forget", session_id=held.session_id)
                return
            part, node = self._locate(node_id, namespace)
            self._life.remove(part, node, kind="forget", reason="forget")
            self._life.drop_empty()

    def end_session(self, session_id: str, *, namespace: str, mode: str = "fade",
                    fade_factor: float = 0.5, summarize: bool = False) -> int:
        """End a session: ``"delete"`` its memories (pinned ones stay) or ``"fade"`` their weights.

        With ``summarize=True`` a session summary is written first, whatever the session's length
        (``kind="summary"``, ``metadata["summary"] == "session"``, ``summarizes`` edges to the
        session's current memories; see `shared_core.engine.lifecycle.maintenance`); it is kept
        by either mode. Returns the number of memories deleted or faded.
        """
        session = check.session(session_id)
        ns = check.namespace(namespace)
        if mode not in ("delete", "fade"):
            raise InvalidInputError(f"mode must be 'delete' or 'fade', got {mode!r}")
        factor = check.number(fade_factor, "fade_factor", minimum=0.0, maximum=1.0)
        summary = summarize_session(self._life, ns, session) \
            if check.flag(summarize, "summarize") and session is not None else None
        with self._lock:
            part = self._part(ns)
            self._life.held.drop(ns, session)
            if part is None or session not in part.sessions:
                return 0
            now = self.clock.now()
            touched = 0
            for nid in list(part.sessions[session]):
                node = part.graph.get_node(nid)
                if node is None or node.pinned or (summary is not None and nid == summary.id):
                    continue
                if mode == "delete":
                    self._life.remove(part, node, kind="forget", reason="end_session")
                else:
                    part.fade(nid, factor, now=now, config=self.config)  # one atomic step
                    self.events.emit("fade", namespace=ns, node_id=nid, at=now, reason="end_session")
                touched += 1
            self.events.emit("end_session", namespace=ns, node_id=None, at=now, reason=mode,
                             session_id=session, count=touched)
            self._life.drop_empty()
            return touched

    # -- reads --------------------------------------------------------------------------------
    def get(self, node_id: str, *, namespace: str | None = None) -> MemoryNode:
        """The memory with this id (in ``namespace``, when given), embedding included; for a
        held turn's ``wm-`` id, the turn as held in working memory (``kind="working"``)."""
        with self._lock:
            held = self._held(node_id, None if namespace is None else check.namespace(namespace))
            if held is not None:
                return held
            part, node = self._locate(node_id, namespace)
            return self._public(part, node)

    def edges(self, node_id: str, *, namespace: str | None = None) -> list[MemoryEdge]:
        with self._lock:
            part, _ = self._locate(node_id, namespace)
            return part.graph.edges(node_id)

    def history(self, node_id: str, *, namespace: str | None = None) -> list[MemoryNode]:
        """Every version of a memory, oldest first, following ``supersedes`` edges both ways."""
        with self._lock:
            part, node = self._locate(node_id, namespace)
            newest = node
            while True:
                newer = [e.source for e in part.graph.edges(newest.id)
                         if e.relation is Relation.SUPERSEDES and e.target == newest.id]
                if not newer or (n := part.graph.get_node(newer[0])) is None:
                    break
                newest = n
            chain = [newest]
            while True:
                older = [e.target for e in part.graph.edges(chain[-1].id)
                         if e.relation is Relation.SUPERSEDES and e.source == chain[-1].id]
                if not older or (n := part.graph.get_node(older[0])) is None:
                    break
                chain.append(n)
            return [self._public(part, n) for n in reversed(chain)]

    def memories(self, *, namespace: str, session_id: str | None = None, include_history: bool = False,
                 include_held: bool = False) -> list[MemoryNode]:
        """The memories of a namespace (or one of its sessions) in the order they were written.

        ``include_held=True`` merges in the turns the write filter held in working memory
        (``kind="working"``), in the order they were given: the session's whole transcript.
        """
        ns = check.namespace(namespace)
        if check.flag(include_held, "include_held"):
            with self._lock:
                session = None if session_id is None else check.session(session_id)
                held = (self._life.held.session(ns, session) if session_id is not None
                        else [n for n in self._life.held if n.namespace == ns])
                stored = self.memories(namespace=ns, session_id=session, include_history=include_history)
                return sorted(held + stored, key=lambda n: (n.turn, n.kind != "working"))
        with self._lock:
            part = self._part(ns)
            if part is None:
                return []
            now = self.clock.now()
            ids: Iterable[str]
            if session_id is None:
                ids = sorted((n.id for n in part.graph.nodes()),
                             key=lambda i: (part.graph.get_node(i).turn))  # type: ignore[union-attr]
            else:
                ids = list(part.sessions.get(check.session(session_id), ()))
            out = []
            for nid in ids:
                node = part.graph.get_node(nid)
                if node is not None and (include_history or (nid not in part.inactive and node.is_current(now))):
                    out.append(self._public(part, node))
            return out

    def sessions(self, *, namespace: str) -> list[str | None]:
        with self._lock:
            part = self._part(check.namespace(namespace))
            return [] if part is None else list(part.sessions)

    def namespaces(self) -> list[str]:
        """Every namespace that holds memories (an administrative, cross-tenant listing)."""
        with self._lock:
            return [ns for ns in self.backend.namespaces() if self.backend.memory_count(ns) > 0]

    def count(self, *, namespace: str) -> int:
        with self._lock:
            return self.backend.memory_count(check.namespace(namespace))

    def __len__(self) -> int:
        return len(self._where)

    def retrieve(self, query: str, *, namespace: str, session_id: str | None = None, top_k: int = 5,
                 filters: Mapping[str, Any] | None = None, reinforce: bool = True,
                 include_history: bool = False, explain: bool = False,
                 cross_session: bool | None = None, exclude_ids: Collection[str] = (),
                 as_of: Any = None) -> list[ScoredMemory]:
        """Hybrid recall within ``namespace``; see `shared_core.engine.recall` for the paths.

        With ``session_id``, only that session is searched unless ``cross_session`` (default
        from the config) lets the namespace's other sessions in, with a penalty and labelled
        ``other_session``. Recalled memories are reinforced unless ``reinforce=False``.
        ``exclude_ids`` are never returned (e.g. turns the caller already shows the model).
        A query longer than ``config.max_query_chars`` characters is refused with
        `InvalidInputError` (not cut), before anything is embedded or reinforced.
        ``as_of`` (a datetime, ISO string or POSIX seconds) answers from the versions valid then:
        a memory superseded later is still the one recalled, a memory valid only from a later
        time is not.
        """
        text = check.query(query, max_chars=self.config.max_query_chars)
        when = check.timestamp(as_of, "as_of")
        ns = check.namespace(namespace)
        session = check.session(session_id)
        k = check.count(top_k, "top_k")
        predicate = compile_filters(filters)
        for name, value in (("reinforce", reinforce), ("include_history", include_history),
                            ("explain", explain)):
            check.flag(value, name)
        cross = self.config.cross_session if cross_session is None else check.flag(cross_session, "cross_session")
        excluded = check.id_set(exclude_ids, "exclude_ids")
        if k == 0:
            return []
        vector = self._embed_query(text)
        with self._lock:
            part = self._part(ns)
            if part is None:
                return []
            now = self.clock.now()
            request = RecallRequest(query=text, vector=vector, now=now, session_id=session, top_k=k + len(excluded),
                                    predicate=predicate, include_history=include_history,
                                    cross_session=cross, explain=explain, as_of=when)
            hits = [h for h in recall(part, request, self.config) if h.node.id not in excluded][:k]
            nodes = self._reinforce(part, hits, now) if reinforce else [h.node for h in hits]
            self._life.recalled(part, hits, now, via="retrieve")
            vectors = part.vectors.get_many([n.id for n in nodes])  # one index call for all
            return [scored_of(with_embedding(n, v), h.score, h.components, h.paths, h.other_session)
                    for h, n, v in zip(hits, nodes, vectors, strict=True)]

    def _reinforce(self, part: Partition, hits: Sequence[ScoredMemory], now: float) -> list[MemoryNode]:
        """Each hit's memory reinforced (as it was when it is gone)."""
        out, done = [], []
        try:
            updates = part.reinforce_many([hit.node.id for hit in hits], now=now, config=self.config)
            for hit, updated in zip(hits, updates, strict=True):  # each one atomic step
                if updated is not None:
                    done.append(updated)
                out.append(updated or hit.node)
        finally:  # one event per reinforced memory, stored in one step
            self.events.emit_many("reinforce", namespaces=[part.namespace] * len(done), node_ids=[n.id for n in done],
                                  at=now, reason="recalled", weight=[n.weight for n in done])
        return out

    def build_context(self, query: str, *, namespace: str, session_id: str | None = None,
                      token_budget: int, style: str = "timeline", working_memory: int | None = None,
                      reinforce: bool = True, filters: Mapping[str, Any] | None = None,
                      cross_session: bool | None = None, llm: Any = None,
                      exclude_ids: Collection[str] = (), as_of: Any = None) -> Context:
        """The context an LLM should see for ``query``, within ``token_budget`` exact tokens.

        Tiers in priority order: the session's last ``working_memory`` memories, recalled
        memories by score, then summaries. ``style`` is ``"timeline"``, ``"bullet"`` or
        ``"narrative"``; for the narrative, an optional ``llm`` (LangChain chat model, LlamaIndex
        LLM or ``str -> str`` callable) rewrites the extractive paragraph, kept only if it fits.
        ``exclude_ids`` are left out of every tier (e.g. turns the caller already shows the model).
        A query longer than ``config.max_query_chars`` characters is refused with
        `InvalidInputError` (not cut), before anything is embedded or reinforced.
        ``as_of`` answers from the versions valid then, as in `retrieve` (working memory too).
        """
        text = check.query(query, max_chars=self.config.max_query_chars)
        when = check.timestamp(as_of, "as_of")
        ns = check.namespace(namespace)
        session = check.session(session_id)
        budget = check.count(token_budget, "token_budget")
        if style not in STYLES:
            raise InvalidInputError(f"style must be one of {', '.join(STYLES)}; got {style!r}")
        wm = self.config.working_memory if working_memory is None else check.count(working_memory, "working_memory")
        check.flag(reinforce, "reinforce")
        predicate = compile_filters(filters)
        cross = self.config.cross_session if cross_session is None else check.flag(cross_session, "cross_session")
        excluded = check.id_set(exclude_ids, "exclude_ids")
        counter = self.token_counter
        if budget == 0:
            return Context("", 0, (), (), 0, style)
        vector = self._embed_query(text)
        with self._lock:
            part = self._part(ns)
            if part is None:
                return Context("", 0, (), (), budget, style)
            now = self.clock.now()
            working: list[ScoredMemory] = []
            if session is not None and wm > 0:
                for nid in part.latest(session, wm + min(len(part.inactive), 16) + len(excluded)):
                    node = part.graph.get_node(nid)
                    valid = node is not None and (node.is_valid_at(when) if when is not None
                                                  else nid not in part.inactive and node.is_current(now))
                    if node is not None and valid and nid not in excluded \
                            and (predicate is None or predicate(node)) and len(working) < wm:
                        working.append(ScoredMemory(node, 1.0, {"working": 1.0}, ("working",)))
            if when is None:  # turns held back by the write filter are today's
                working = self._life.with_held(working, part, session, wm, predicate, exclude=excluded)
            top_k, diversity = context_breadth(text, budget, self.config)
            request = RecallRequest(query=text, vector=vector, now=now, session_id=session,
                                    top_k=top_k + len(excluded), predicate=predicate, cross_session=cross,
                                    as_of=when)
            hits = [h for h in recall(part, request, self.config) if h.node.id not in excluded]
            recalled = diversify([h for h in hits if h.node.kind != "summary"], part.vectors, diversity)
            summaries = [h for h in hits if h.node.kind == "summary"]
            ctx = build_context_block(working, recalled, summaries, style=style, budget=budget,
                                      count=counter.count, marker=self.config.truncation_marker)
            while redundant := summaries_beside_sources(part.graph, ctx.memories) & {h.node.id for h in summaries}:
                summaries = [h for h in summaries if h.node.id not in redundant]
                ctx = build_context_block(working, recalled, summaries, style=style, budget=budget,
                                          count=counter.count, marker=self.config.truncation_marker)
            recalled_shown = [m for m in ctx.memories if m.paths != ("working",)]
            self._life.recalled(part, recalled_shown, now, via="build_context")
            if reinforce and recalled_shown:  # working memory is shown for being recent, not recalled
                reinforced = {n.id: n for n in self._reinforce(part, recalled_shown, now)}
                ctx = replace(ctx, memories=tuple(m if (n := reinforced.get(m.node.id)) is None else
                                                  ScoredMemory(n, m.score, m.components, m.paths, m.other_session)
                                                  for m in ctx.memories))
        if llm is not None and style == "narrative" and ctx.text:
            from .text.llm import rewrite_narrative

            ctx = rewrite_narrative(ctx, llm, count=counter.count)
        return ctx

    def stats(self, *, namespace: str | None = None) -> AtlasStats:
        """Counts by kind and relation, the weight histogram, evictions and bytes used."""
        with self._lock:
            return self._life.stats(None if namespace is None else check.namespace(namespace))

    # -- lifecycle: compression, working memory, persistence ------------------------------------
    def compress(self, *, namespace: str | None = None, progress: bool | None = None) -> CompressionReport:
        """Merge near-duplicates and summarise faded clusters and long sessions (every namespace,
        or one); see `shared_core.engine.lifecycle.compression`. Returns what was merged and summarised."""
        names = list(self.backend.namespaces()) if namespace is None else [check.namespace(namespace)]
        if progress is None:
            progress = len(self) >= 2000 and (sys.stderr.isatty() or "ipykernel" in sys.modules)
        return self._life.compress(names, progress=check.flag(progress, "progress"))

    def maintain(self, *, namespace: str | None = None, compress: bool = True) -> MaintenanceReport:
        """Run the lifecycle now (every namespace, or one): TTL expiry, the clean-up rule (whatever
        ``prune_every`` says), the caps, and compression unless ``compress=False``; returns what
        it did. An idle memory is cleaned only by this; the MCP server calls it on a timer.
        """
        names = list(self.backend.namespaces()) if namespace is None else [check.namespace(namespace)]
        return maintain(self._life, names, compress=check.flag(compress, "compress"))

    def working_memory(self, *, namespace: str, session_id: str | None) -> list[MemoryNode]:
        """The turns the write filter kept out of the graph for a session, oldest first."""
        ns, session = check.namespace(namespace), check.session(session_id)
        with self._lock:
            return self._life.held.session(ns, session)

    def subscribe(self, callback: Callable[[AtlasEvent], None]) -> Callable[[], None]:
        """Follow the event log; returns a function that unsubscribes."""
        return self.events.subscribe(callback)

    def flush(self) -> None:
        """Wait until every write so far is durable (a durable backend, e.g. ``chroma:PATH``;
        a no-op in process)."""
        backend = self._state.made_backend
        if backend is not None:
            backend.flush()

    def close(self) -> None:
        """Stop the maintenance timer (if the backend asked for one), flush and release the
        backend (a durable backend's directory); a no-op in process."""
        if self._maintenance is not None:
            self._maintenance.close()
        backend = self._state.made_backend
        if backend is not None:
            backend.close()

    def __enter__(self) -> ElasticMemoryAtlas:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"ElasticMemoryAtlas({len(self._where)} memories, embedder={self.embedder!r}, "
                f"clock={self.clock!r})")


def _backend_from_url(url: str, dim: int) -> Backend:
    """A backend from its URL: ``falkordb://host:port`` (see `shared_core.store.falkordb`) or
    ``chroma:PATH`` (see `shared_core.store.chroma`)."""
    scheme = url.partition(":")[0].lower()
    if scheme in ("falkordb", "falkor", "redis"):
        from .store.falkordb import FalkorDBBackend  # loads the falkordb client only now

        return FalkorDBBackend.from_url(url, dim=dim)
    if scheme == "chroma":
        from .store.chroma import ChromaBackend  # chromadb itself loads only when a collection is read

        return ChromaBackend.from_url(url)
    raise InvalidInputError(f"unsupported backend URL {url!r}: expected falkordb://host:port or chroma:PATH")
