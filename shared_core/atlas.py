"""`ElasticMemoryAtlas`: the public face of the engine.

The atlas validates input, embeds outside its lock, then applies each write to the namespace's
partition under one re-entrant lock, so threads and asyncio tasks can share it. Formulas live in
`decay`, `scoring` and `budget`; recall in `recall`; rendering in `context`; eviction, expiry and
statistics in `lifecycle`. The writes are in `shared_core._atlas_writes`, the state they share in
`shared_core._atlas_core`, the derived conveniences (async forms, views, persistence) in
`shared_core._atlas_mixins`.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import Any

from ._atlas_mixins import AsyncForms, NotebookViews, Persistence
from ._atlas_writes import Writes
from .engine.context import STYLES, build_context_block, context_breadth, diversify, summaries_beside_sources
from .engine.events import AtlasEvent, EventLog
from .engine.lifecycle.compression import CompressionReport
from .engine.lifecycle.maintenance import MaintenanceReport, MaintenanceTimer, maintain
from .engine.lifecycle.manager import AtlasStats, Lifecycle
from .engine.neighbours import admission, with_neighbours
from .engine.recall import RecallRequest, recall
from .engine.state import EngineState
from .formulas.filters import compile_filters
from .store.contract import Backend, Partition
from .store.memory.backend import InProcessBackend
from .text.embedding import Embedder, as_embedder
from .text.tokens import TokenCounter, as_token_counter
from .values import _validate as check
from .values.clock import Clock, SystemClock
from .values.config import AtlasConfig
from .values.errors import InvalidInputError
from .values.model import Context, MemoryEdge, MemoryNode, Relation, ScoredMemory, scored_of, with_embedding

__all__ = ["ElasticMemoryAtlas"]

logger = logging.getLogger("shared_core")


class ElasticMemoryAtlas(Persistence, AsyncForms, NotebookViews, Writes):
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
        elif given is not None and given.keeps_partitions_in_process():
            self._life.adopt()  # memories another atlas left in this backend: accounted, speakers learnt
        every = None if given is None else given.maintenance_interval()
        self._maintenance = None if every is None else MaintenanceTimer(self.maintain, every=every)

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
        vector, embed = self._recall_vectors(text, ns, k + len(excluded))
        with self._lock:
            now = self.clock.now()
            request = RecallRequest(query=text, vector=vector, now=now, session_id=session, top_k=k + len(excluded),
                                    predicate=predicate, include_history=include_history, cross_session=cross,
                                    explain=explain, as_of=when, embed=embed, heard=self._heard(ns),
                                    speakers=self._state.known_speakers(ns))
            found = self._recalling(ns, lambda p: recall(p, request, self.config))
            if found is None:
                return []
            part, recalled = found
            hits = [h for h in recalled if h.node.id not in excluded][:k]
            nodes = self._reinforce(part, hits, now, vectors=True) if reinforce else [h.node for h in hits]
            self._life.recalled(part, hits, now, via="retrieve")
            vectors = part.vectors.get_many([n.id for n in nodes])  # one index call for all
            return [scored_of(with_embedding(n, v), h.score, h.components, h.paths, h.other_session)
                    for h, n, v in zip(hits, nodes, vectors, strict=True)]

    def _reinforce(self, part: Partition, hits: Sequence[ScoredMemory], now: float, *,
                   vectors: bool) -> list[MemoryNode]:
        """Each hit's memory reinforced (as it was when it is gone); ``vectors``: the caller reads
        the hits' vectors next (`Partition.reinforce_many`)."""
        out, done = [], []
        try:
            updates = part.reinforce_many([hit.node.id for hit in hits], now=now, config=self.config,
                                          vectors=vectors)
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
        top_k, diversity = context_breadth(text, budget, self.config)
        vector, embed = self._recall_vectors(text, ns, top_k + len(excluded))
        with self._lock:
            now = self.clock.now()
            request = RecallRequest(query=text, vector=vector, now=now, session_id=session,
                                    top_k=top_k + len(excluded), predicate=predicate, cross_session=cross,
                                    as_of=when, embed=embed, heard=self._heard(ns),
                                    speakers=self._state.known_speakers(ns))

            def gathered(part: Partition) -> tuple[list[ScoredMemory], list[ScoredMemory]]:
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
                return working, [h for h in recall(part, request, self.config) if h.node.id not in excluded]

            found = self._recalling(ns, gathered)
            if found is None:
                return Context("", 0, (), (), budget, style)
            part, (working, hits) = found
            recalled = diversify([h for h in hits if h.node.kind != "summary"], part.vectors, diversity)
            summaries = [h for h in hits if h.node.kind == "summary"]
            recalled, companions = with_neighbours(  # short adjacent turns come along (context_neighbours)
                part, recalled, max_tokens=self.config.context_neighbours, count=counter.count,
                admit=admission(part, now=now, as_of=when, predicate=predicate, excluded=excluded))
            ctx = build_context_block(working, recalled, summaries, style=style, budget=budget,
                                      count=counter.count, marker=self.config.truncation_marker, companions=companions)
            sources: dict[str, list[tuple[str, bool]]] = {}  # each shown summary's, read once
            while redundant := summaries_beside_sources(part.graph, ctx.memories, known=sources) \
                    & {h.node.id for h in summaries}:
                summaries = [h for h in summaries if h.node.id not in redundant]
                ctx = build_context_block(working, recalled, summaries, style=style, budget=budget,
                                          count=counter.count, marker=self.config.truncation_marker,
                                          companions=companions)
            # working memory is shown for being recent, a neighbour for sitting next to a hit: not recalled
            recalled_shown = [m for m in ctx.memories if m.paths not in (("working",), ("neighbour",))]
            self._life.recalled(part, recalled_shown, now, via="build_context")
            if reinforce and recalled_shown:  # working memory is shown for being recent, not recalled
                reinforced = {n.id: n for n in self._reinforce(part, recalled_shown, now, vectors=False)}
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
