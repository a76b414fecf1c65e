"""The memory's lifecycle: what enters the graph, what leaves it, and what gets compacted.

`Lifecycle` is the atlas's bookkeeping for it, called under the atlas's lock from the write
and read paths:

- **write filter** (`shared_core.engine.lifecycle.write_filter`): turns below ``write_threshold`` stay in a
  per-session working buffer that `build_context` shows, and never reach the graph;
- **contradictions** (`shared_core.engine.lifecycle.contradiction`): checked after each add, outside the lock;
- **compression** (`shared_core.engine.lifecycle.compression`): merges, summaries and chapters, every
  ``compress_every`` writes or on `ElasticMemoryAtlas.compress`;
- **caps and expiry**: a heap of expiry times (expiry never scans the graph); eviction of the
  lowest-value memories (`decay.eviction_value`, scaled down for small talk and the day's chatter
  by `capacity.fact_salience`; isolated ones first, pinned ones never) when the
  atlas passes ``max_nodes`` or ``max_bytes`` (`shared_core.engine.lifecycle.capacity`), in batches so its
  O(n log n) cost is paid once per batch; and the periodic cleanup rule ``weight < prune_below
  and unused for prune_idle``, which runs four times as often, with a quarter of the idle time,
  above ``cleanup_pressure`` of ``max_bytes`` (at 0.2 when only ``max_bytes`` is set);
- **namespaces** (`shared_core.engine.lifecycle.namespaces`): a namespace whose last memory
  leaves is dropped, so ``max_bytes`` bounds memory whatever the number of namespaces, and a
  write past ``max_namespaces`` namespaces is refused;
- **statistics** (`shared_core.engine.stats`).
"""

from __future__ import annotations

import heapq
import logging
import threading
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, Any

from ...formulas.decay import effective_weight, eviction_value
from ...formulas.subqueries import speaker_of
from ...values._records import node_record
from ...values.errors import InvalidInputError
from ...values.model import MemoryNode, ScoredMemory
from ..stats import KEY_FLAG, AtlasStats, collect_stats
from .capacity import EDGE_OVERHEAD, NODE_OVERHEAD, cleanup_level, fact_salience, node_bytes, prunable, stored_bytes
from .compression import CompressionReport, compress_atlas
from .contradiction import (
    ContradictionDetector,
    HeuristicContradictionDetector,
    LLMContradictionDetector,
    check_contradictions,
)
from .holding import held_back, hold_turns, merge_held
from .namespaces import NamespaceBook
from .summarize import ExtractiveSummarizer, LLMSummarizer, Summarizer
from .write_filter import HeuristicWriteFilter, WorkingBuffer, WriteFilter

if TYPE_CHECKING:
    from ...store.contract import Partition
    from ..state import EngineState
    from ..writes import MemorySpec

__all__ = ["AtlasStats", "Lifecycle"]

logger = logging.getLogger("shared_core")
Predicate = Callable[[MemoryNode], bool]


def _plugin(value: Any, method: str, name: str) -> Any:
    if value is not None and not callable(getattr(value, method, None)):
        raise InvalidInputError(f"{name} must have a {method}() method, got {value!r}")
    return value


class Lifecycle:
    """Filter, contradictions, compression, removal, expiry, caps and stats for one atlas."""

    def __init__(self, state: EngineState, *, llm: Any = None, contradiction_detector: Any = None,
                 write_filter: Any = None, summarizer: Any = None) -> None:
        if llm is not None and not (callable(llm) or hasattr(llm, "invoke") or hasattr(llm, "complete")):
            raise InvalidInputError(f"llm must be a LangChain model, a LlamaIndex LLM or a callable, got {llm!r}")
        self.engine = state
        self.llm = llm
        self._detector: ContradictionDetector | None = _plugin(contradiction_detector, "detect",
                                                               "contradiction_detector")
        self._filter: WriteFilter | None = _plugin(write_filter, "score", "write_filter")
        self.summarizer: Summarizer = _plugin(summarizer, "summarize", "summarizer") or (
            LLMSummarizer(llm) if llm is not None else ExtractiveSummarizer())
        self.held = WorkingBuffer()  # every held turn: it is the held part of the session's transcript
        self._expiry: list[tuple[float, str]] = []
        # the sum of `size` over the accounted memories; a memory's own figure is recomputed from
        # its node when needed rather than kept per id (no int per id)
        self._node_bytes = 0
        self._dirty: dict[str, set[str] | None] = {}
        self._since_compress: Counter[str] = Counter()
        self._since_prune = 0
        self._compressing = threading.Lock()
        self._warned_full = False
        self.namespaces = NamespaceBook(lambda: state.backend)

    # -- plug-ins ---------------------------------------------------------------------------
    @property
    def write_filter(self) -> WriteFilter | None:
        """The filter in use: the one passed to the atlas, else the heuristic if the config asks."""
        if self._filter is not None:
            return self._filter
        return HeuristicWriteFilter() if self.engine.config.write_filter else None

    @property
    def detector(self) -> ContradictionDetector | None:
        """The detector in use: the one passed, else the LLM one (with ``llm``) or the heuristic."""
        if self._detector is not None:
            return self._detector
        if not self.engine.config.contradiction_check:
            return None
        return LLMContradictionDetector(self.llm) if self.llm is not None else HeuristicContradictionDetector()

    # -- write filter (`shared_core.engine.lifecycle.holding`) -------------------------------
    def hold_back(self, specs: Sequence[MemorySpec]) -> dict[int, tuple[MemorySpec, float]]:
        """The specs the write filter keeps out of the graph, by position, with their score
        (outside the lock; `holding.held_back`)."""
        return held_back(self.write_filter, specs, threshold=self.engine.config.write_threshold)

    def hold(self, held: dict[int, tuple[MemorySpec, float]], kept: list[MemoryNode], now: float
             ) -> list[MemoryNode]:
        """Put held turns in working memory and return every result in input order
        (under the lock; `holding.hold_turns`)."""
        return hold_turns(self.engine, self.held, held, kept, now)

    def with_held(self, working: list[ScoredMemory], part: Partition, session: str | None, wm: int,
                  predicate: Predicate | None, *, exclude: Collection[str] = ()) -> list[ScoredMemory]:
        """The working-memory tier of `build_context` with the held turns (`holding.merge_held`)."""
        return merge_held(self.held, working, part, session, wm, predicate, exclude=exclude)

    # -- after a write ----------------------------------------------------------------------
    def settle(self, nodes: Sequence[MemoryNode]) -> None:
        """After a write, outside the lock: the contradiction check, then compression if due."""
        detector = self.detector
        if detector is not None:
            for node in nodes:
                if node.kind == "memory":
                    check_contradictions(self.engine, detector, node, namespaces=self.namespaces)
        every = self.engine.config.compress_every
        if every is not None:
            with self.engine.lock:
                due = [ns for ns, n in self._since_compress.items() if n >= every]
            if due:
                self.compress(due, progress=False)


    # -- compression ------------------------------------------------------------------------
    def compress(self, namespaces: Sequence[str], *, progress: bool) -> CompressionReport:
        """Run `shared_core.engine.lifecycle.compression` over ``namespaces``; one run at a time (a run asked for
        while another is going returns an empty report)."""
        if not self._compressing.acquire(blocking=False):
            return CompressionReport()
        try:
            report = compress_atlas(self.engine, self, namespaces, progress=progress)
            with self.engine.lock:
                for ns in namespaces:
                    self._since_compress.pop(ns, None)
                self.namespaces.touch(namespaces)
                self.drop_empty()
            return report
        finally:
            self._compressing.release()

    def dirty_ids(self, namespace: str) -> set[str] | None:
        """The memories written to a namespace since its last compression (None: look at all)."""
        dirty = self._dirty.get(namespace)
        return None if dirty is None else set(dirty)

    def clear_dirty(self, namespace: str, seen: set[str] | None) -> None:
        """Forget the memories a compression run has looked at; later writes stay dirty."""
        if seen is None:
            self._dirty[namespace] = set()
        elif (dirty := self._dirty.get(namespace)) is not None:
            dirty -= seen

    def _mark(self, namespace: str, node_id: str) -> None:
        dirty = self._dirty.get(namespace)
        if dirty is not None:
            dirty.add(node_id)
            if len(dirty) > 4096 and len(dirty) * 2 > len(self.engine.where):
                self._dirty[namespace] = None  # cheaper to look at everything next time

    def _mark_many(self, namespace: str, node_ids: list[str]) -> None:
        """`_mark` of each id: its test only grows with the dirty set, so one test at the end
        decides as the test after each id would."""
        dirty = self._dirty.get(namespace)
        if dirty is not None:
            dirty.update(node_ids)
            if len(dirty) > 4096 and len(dirty) * 2 > len(self.engine.where):
                self._dirty[namespace] = None

    # -- removal, expiry, caps --------------------------------------------------------------
    def size(self, part: Partition, node: MemoryNode) -> int:
        """The bytes an accounted memory counts for (`shared_core.engine.lifecycle.capacity.node_bytes`)."""
        return node_bytes(node, part.vectors.dim)

    def account(self, part: Partition, node: MemoryNode, *, previous: MemoryNode | None = None) -> None:
        """Count the bytes of a new memory, or of a changed one whose ``previous`` version was
        counted (a merged memory)."""
        if previous is not None:
            self._node_bytes -= self.size(part, previous)
        self._node_bytes += self.size(part, node)

    def bytes_used(self) -> int:
        """Accounted bytes: memories, edges, the vector indexes' spare rows, the partitions' own
        objects and the turns held in working memory (see `shared_core.engine.lifecycle.capacity`);
        the per-namespace part is recounted for the namespaces touched since the last call
        (`shared_core.engine.lifecycle.namespaces.NamespaceBook`)."""
        return self._node_bytes + self.namespaces.extra_bytes() + self._held_bytes()

    def _held_bytes(self) -> int:
        return stored_bytes(text_bytes=self.held.text_bytes, metadata_bytes=0, dim=0, overhead=0) \
            + self.held.count * NODE_OVERHEAD

    def drop_empty(self, also: Collection[str] = ()) -> None:
        """Drop the namespaces that removals left empty, and ``also`` these if they are empty
        (under the lock, where no caller holds their partition), and forget their bookkeeping."""
        for ns in self.namespaces.drop_empty(also):
            self._dirty.pop(ns, None)
            self._since_compress.pop(ns, None)
            self.engine.speakers.drop(ns)

    def schedule_expiry(self, node: MemoryNode) -> None:
        assert node.expires_at is not None
        heapq.heappush(self._expiry, (node.expires_at, node.id))
        if len(self._expiry) > 2 * len(self.engine.where) + 1024:  # drop entries of removed memories
            live = []
            for at, nid in self._expiry:
                ns = self.engine.where.get(nid)
                part = self.engine.backend.partition(ns) if ns is not None else None
                found = part.graph.get_node(nid) if part is not None else None
                if found is not None and found.expires_at == at:
                    live.append((at, nid))
            heapq.heapify(live)
            self._expiry = live

    def remove(self, part: Partition, node: MemoryNode, *, kind: str | None, reason: str) -> None:
        """Remove a memory from every store; ``kind`` names the event (None: no event). A
        ``"rollback"`` removes a memory of a failed write, which was never accounted."""
        if reason != "rollback":
            self._node_bytes -= self.size(part, part.graph.get_node(node.id) or node)
        part.entities.remove(node.id)  # before the node: its mentions and the entities left with none
        part.graph.remove_node(node.id)
        part.vectors.remove([node.id])
        part.keywords.remove(node.id)
        part.untrack(node.id, node.session_id, node.timestamp)
        self.namespaces.removed(part)
        self.engine.where.pop(node.id, None)
        dirty = self._dirty.get(part.namespace)
        if dirty:
            dirty.discard(node.id)
        if kind is not None:
            self.engine.events.emit(kind, namespace=part.namespace, node_id=node.id,
                                   at=self.engine.clock.now(), reason=reason,
                                   content=node.content[:120])

    def after_write(self, now: float, *, protect: set[str]) -> None:
        """Account the new memories ``protect`` and enforce expiry, cleanup and caps.

        `account` and `_mark` of each memory still in the atlas, with each namespace's partition
        and vector width looked up once and its dirty set marked in one step (the write path's
        per-memory cost)."""
        where, partition = self.engine.where, self.engine.backend.partition
        found: dict[str, tuple[Partition | None, int, list[str]]] = {}
        added = 0
        for nid in protect:
            ns = where.get(nid)
            if ns is None:
                continue
            entry = found.get(ns)
            if entry is None:
                part = partition(ns)
                entry = found[ns] = (part, 0 if part is None else part.vectors.dim, [])
            part, dim, marked = entry
            node = part.graph.get_node(nid) if part is not None else None
            if node is not None:
                added += node_bytes(node, dim)
                marked.append(nid)
        self._node_bytes += added
        self.namespaces.touch(found)
        self.namespaces.wrote(len(protect))
        for part, _, marked in found.values():
            if part is not None and marked:
                self._mark_many(part.namespace, marked)
                self._since_compress[part.namespace] += len(marked)
        self._since_prune += len(protect)
        self.enforce(now, protect=protect)
        self.drop_empty()

    def enforce(self, now: float, *, protect: set[str]) -> None:
        self.expire(now)
        self.prune(now, protect=protect)
        self.enforce_capacity(now, protect=protect)

    def expire(self, now: float) -> int:
        """Remove every memory whose TTL has passed; returns how many."""
        removed = 0
        while self._expiry and self._expiry[0][0] <= now:
            _, node_id = heapq.heappop(self._expiry)
            ns = self.engine.where.get(node_id)
            part = self.engine.backend.partition(ns) if ns is not None else None
            node = part.graph.get_node(node_id) if part is not None else None
            if part is None or node is None or node.expires_at is None or node.expires_at > now:
                continue
            self.remove(part, node, kind="expire", reason="ttl")
            removed += 1
        return removed

    def prune(self, now: float, *, protect: set[str], force: bool = False) -> int:
        """The cleanup rule (see the module docstring); returns how many memories it removed."""
        cfg = self.engine.config
        level = "normal" if cfg.max_bytes is None else \
            cleanup_level(self.bytes_used() / cfg.max_bytes, pressure=cfg.cleanup_pressure)
        if cfg.prune_below is None and level == "normal":
            return 0
        every = cfg.prune_every if level == "normal" else max(1, cfg.prune_every // 4)
        if self._since_prune < every and not force:
            return 0
        self._since_prune = 0
        below = 0.2 if cfg.prune_below is None else cfg.prune_below
        idle = cfg.prune_idle if level == "normal" else cfg.prune_idle / 4
        victims = []
        for ns in self.engine.backend.namespaces():
            part = self.engine.backend.partition(ns)
            for node in part.graph.nodes() if part is not None else ():
                if node.id in protect:
                    continue
                weight = effective_weight(node, now=now, turn=part.turn, config=cfg)  # type: ignore[union-attr]
                if prunable(weight, now - node.last_accessed_at, below=below, min_idle=idle, pinned=node.pinned):
                    victims.append((part, node, weight))
        for part, node, weight in victims:
            days = (now - node.last_accessed_at) / 86_400
            self.remove(part, node, kind="evict",  # type: ignore[arg-type]
                        reason=f"cleanup rule: weight {weight:.2f} < {below} and unused for {days:.0f} days"
                               + (" (memory pressure)" if level != "normal" else ""))
        return len(victims)

    def enforce_capacity(self, now: float, *, protect: set[str]) -> int:
        """Evict the lowest-value memories once the atlas is over ``max_nodes`` or ``max_bytes``:
        down to ``1 - eviction_batch`` of the cap, so one O(n log n) pass serves a batch of writes.

        Pinned memories are never evicted, nor are the memories of the write being settled
        (``protect``): a single write larger than the cap overshoots it until the next write."""
        cfg = self.engine.config
        over_nodes = cfg.max_nodes is not None and len(self.engine.where) > cfg.max_nodes
        used = self.bytes_used() if cfg.max_bytes is not None else 0
        over_bytes = cfg.max_bytes is not None and used > cfg.max_bytes
        if not over_nodes and not over_bytes:
            self._warned_full = False
            return 0
        node_target = len(self.engine.where) if cfg.max_nodes is None else \
            min(cfg.max_nodes, max(0, int(cfg.max_nodes * (1.0 - cfg.eviction_batch))))
        byte_target = used if cfg.max_bytes is None else int(cfg.max_bytes * (1.0 - cfg.eviction_batch))
        # held turns go first, oldest first: the write filter judged them least worth keeping,
        # and the transcript they belong to is bounded by max_bytes like everything else
        while over_bytes and used > byte_target and len(self.held):
            before = self._held_bytes()
            self.held.pop_oldest()
            used -= before - self._held_bytes()
        candidates: list[tuple[bool, float, float, str, str]] = []
        episodic = cfg.episodic_value
        for ns in self.engine.backend.namespaces():
            part = self.engine.backend.partition(ns)
            if part is None:
                continue
            for node in part.graph.nodes():
                if node.pinned or node.id in protect:
                    continue
                degree = part.graph.degree(node.id)
                weight = effective_weight(node, now=now, turn=part.turn, config=cfg)
                fact = fact_salience(node.content)
                value = eviction_value(weight, now - node.last_accessed_at, degree,
                                       recency_half_life=cfg.recency_half_life,
                                       salience=episodic + (1.0 - episodic) * fact)
                # isolated small talk and chatter go first; a fact whose neighbours left is not isolated chatter
                candidates.append((degree > 0 or fact > 0.0, value, node.created_at, node.id, ns))
        evicted = 0
        reason = f"capacity {cfg.max_nodes}" if over_nodes else f"max_bytes {cfg.max_bytes}"
        for _, value, _, node_id, ns in sorted(candidates):
            if len(self.engine.where) <= node_target and used <= byte_target:
                break
            owner = self.engine.backend.partition(ns)
            victim = owner.graph.get_node(node_id) if owner else None
            if owner is None or victim is None:
                continue
            # its vector row stays allocated (as spare capacity) until the index shrinks: the
            # index's bytes do not change, and its rows' count falls by 4 bytes a dimension
            # (`_vector_slack`)
            row = owner.vectors.dim * 4 if owner.vectors.nbytes() is not None else 0
            used -= self.size(owner, victim) - row + owner.graph.degree(node_id) * EDGE_OVERHEAD
            self.remove(owner, victim, kind="evict", reason=f"{reason}; value {value:.3f}")
            if owner.graph.node_count() == 0:  # dropped once the write is settled (`drop_empty`)
                used -= self.namespaces.extra_of(owner)
            evicted += 1
        if cfg.max_bytes is not None and used > cfg.max_bytes and not self._warned_full:
            self._warned_full = True
            logger.warning("the atlas holds %d bytes, over max_bytes=%d, and only pinned or just-written "
                           "memories are left to evict", used, cfg.max_bytes)
        return evicted

    # -- reads and stats --------------------------------------------------------------------
    def recalled(self, part: Partition, hits: Sequence[ScoredMemory], now: float, *, via: str) -> None:
        """Log a recall, naming the caller-flagged key memories it returned."""
        keys = [h.node.id for h in hits if h.node.metadata.get(KEY_FLAG)]
        self.engine.events.emit("recall", namespace=part.namespace, node_id=None, at=now, reason=via,
                               hits=len(hits), ids=[h.node.id for h in hits[:20]], keys=keys)

    def stats(self, namespace: str | None) -> AtlasStats:
        if namespace is None:
            used, held = self.bytes_used(), len(self.held)
        else:
            part = self.engine.backend.partition(namespace)
            used = 0 if part is None else (sum(self.size(part, n) for n in part.graph.nodes())
                                           + self.namespaces.extra_of(part))
            held = sum(n.namespace == namespace for n in self.held)
        return collect_stats(self.engine, namespace, bytes_used=used, held=held, max_bytes=self.engine.config.max_bytes)

    # -- persistence ------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        """What `shared_core.engine.persistence` saves besides the partitions (JSON-ready)."""
        return {"held": [node_record(n) for n in self.held],
                "dirty": {ns: None if d is None else sorted(d) for ns, d in self._dirty.items()},
                "since_compress": dict(self._since_compress), "since_prune": self._since_prune}

    def restore(self, state: dict[str, Any], nodes: Callable[[dict[str, Any]], MemoryNode]) -> None:
        """Rebuild from a saved `state` and the backend's partitions (`Backend.watch`: each one
        loaded now, and each one a lazy backend loads later). The ``indexed`` map of a file of
        format version 1 (each merged memory's keyword text) is checked on load and not used:
        `shared_core.engine.lifecycle.capacity.node_bytes` derives those texts."""
        for record in state["held"]:
            self.held.add(nodes(record))
        self._dirty = {str(ns): None if d is None else {str(i) for i in d} for ns, d in state["dirty"].items()}
        self._since_compress = Counter({str(k): int(v) for k, v in state["since_compress"].items()})
        self._since_prune = int(state["since_prune"])
        self._node_bytes = 0
        self._expiry = []
        self.adopt()

    def adopt(self) -> None:
        """Take over the memories the backend holds: each partition's memories accounted towards
        the caps, their expiries scheduled and their speakers learnt (`restore`'s last step; alone,
        for an atlas made over an in-process backend another atlas wrote). A lazy backend calls
        back again for each namespace it loads later (`Backend.watch`)."""
        self.namespaces.touch_all()
        self.engine.backend.watch(self._adopt)

    def _adopt(self, part: Partition) -> None:
        """Account a partition's memories, schedule their expiries and learn their speakers
        (`SpeakerBook.fill`) (after `restore`, for each partition loaded)."""
        self.namespaces.touch((part.namespace,))
        if part.graph.node_count() == 0:
            self.namespaces.removed(part)  # a saved empty namespace: dropped at the next write
        speakers: set[str | None] = set()
        for node in part.graph.nodes():
            self.account(part, node)
            speakers.add(speaker_of(node.content, node.metadata))
            if node.expires_at is not None:
                heapq.heappush(self._expiry, (node.expires_at, node.id))
        self.engine.speakers.fill(part.namespace, speakers)
