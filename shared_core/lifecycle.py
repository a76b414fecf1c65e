"""Eviction under a capacity cap, TTL expiry, removal and statistics.

`Lifecycle` holds the atlas's bookkeeping for what leaves the memory: a heap of expiry times (so
expiry never scans the graph) and the eviction pass, which runs when the atlas passes
``max_nodes`` and evicts a batch of the lowest-value memories (`decay.eviction_value`; isolated
ones first, pinned ones never), so its O(n log n) cost is paid once per batch, not per write.
"""

from __future__ import annotations

import heapq
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from .decay import eviction_value
from .model import MemoryNode
from .recall import effective_weight

if TYPE_CHECKING:
    from .atlas import ElasticMemoryAtlas
    from .backend import Partition

__all__ = ["AtlasStats", "Lifecycle"]

HISTOGRAM_EDGES = (0.0, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 2.5, 3.0)


@dataclass(frozen=True, slots=True)
class AtlasStats:
    """A snapshot of the atlas (or of one namespace)."""

    namespaces: int
    nodes: int
    edges: int
    nodes_by_kind: dict[str, int]
    nodes_by_session: dict[str, int]
    edges_by_relation: dict[str, int]
    weight_histogram: tuple[tuple[float, float, int], ...]
    pinned: int
    superseded: int
    evictions: int
    expirations: int
    events: dict[str, int] = field(default_factory=dict)
    vector_bytes: int = 0

    def as_table(self) -> str:
        """A plain-text table, as the demo prints it."""
        rows = [("namespaces", self.namespaces), ("memories", self.nodes), ("edges", self.edges),
                ("pinned", self.pinned), ("superseded", self.superseded),
                ("evictions", self.evictions), ("expirations", self.expirations)]
        rows += [(f"  kind {k}", v) for k, v in sorted(self.nodes_by_kind.items())]
        rows += [(f"  edges {k}", v) for k, v in sorted(self.edges_by_relation.items())]
        width = max(len(str(r[0])) for r in rows)
        lines = [f"{name:<{width}}  {value:>7}" for name, value in rows]
        peak = max((c for _, _, c in self.weight_histogram), default=0) or 1
        lines.append("weight histogram:")
        for lo, hi, c in self.weight_histogram:
            lines.append(f"  {lo:4.2f}-{hi:4.2f} {c:>6} {'#' * round(30 * c / peak)}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        body = "".join(f"<tr><td>{line[:20].strip()}</td><td><pre>{line[20:]}</pre></td></tr>"
                       for line in self.as_table().splitlines())
        return f"<table>{body}</table>"

    def __str__(self) -> str:
        return self.as_table()


class Lifecycle:
    """Removal, expiry and eviction for one atlas (called under the atlas's lock)."""

    def __init__(self, atlas: ElasticMemoryAtlas) -> None:
        self.atlas = atlas
        self._expiry: list[tuple[float, str]] = []

    def schedule_expiry(self, node: MemoryNode) -> None:
        assert node.expires_at is not None
        heapq.heappush(self._expiry, (node.expires_at, node.id))

    def remove(self, part: Partition, node: MemoryNode, *, kind: str | None, reason: str) -> None:
        """Remove a memory from every store; ``kind`` names the event (None: no event)."""
        part.graph.remove_node(node.id)
        part.vectors.remove([node.id])
        part.keywords.remove(node.id)
        part.untrack(node.id, node.session_id, node.timestamp)
        self.atlas._where.pop(node.id, None)
        if kind is not None:
            self.atlas.events.emit(kind, namespace=part.namespace, node_id=node.id,
                                   at=self.atlas.clock.now(), reason=reason,
                                   content=node.content[:120])

    def after_write(self, now: float, *, protect: set[str]) -> None:
        self.expire(now)
        self.enforce_capacity(now, protect=protect)

    def expire(self, now: float) -> int:
        """Remove every memory whose TTL has passed; returns how many."""
        removed = 0
        while self._expiry and self._expiry[0][0] <= now:
            _, node_id = heapq.heappop(self._expiry)
            ns = self.atlas._where.get(node_id)
            part = self.atlas.backend.partition(ns) if ns is not None else None
            node = part.graph.get_node(node_id) if part is not None else None
            if part is None or node is None or node.expires_at is None or node.expires_at > now:
                continue
            self.remove(part, node, kind="expire", reason="ttl")
            removed += 1
        return removed

    def enforce_capacity(self, now: float, *, protect: set[str]) -> int:
        """Evict down to ``(1 - eviction_batch) * max_nodes`` once the atlas is over ``max_nodes``."""
        cfg = self.atlas.config
        total = len(self.atlas._where)
        if cfg.max_nodes is None or total <= cfg.max_nodes:
            return 0
        target = min(cfg.max_nodes, max(0, int(cfg.max_nodes * (1.0 - cfg.eviction_batch))))
        candidates: list[tuple[bool, float, float, str, str]] = []
        for ns in self.atlas.backend.namespaces():
            part = self.atlas.backend.partition(ns)
            if part is None:
                continue
            for node in part.graph.nodes():
                if node.pinned or node.id in protect:
                    continue
                degree = part.graph.degree(node.id)
                weight = effective_weight(node, now=now, turn=part.turn, config=cfg)
                value = eviction_value(weight, now - node.last_accessed_at, degree,
                                       recency_half_life=cfg.recency_half_life)
                candidates.append((degree > 0, value, node.created_at, node.id, ns))
        need = total - target
        evicted = 0
        for _, value, _, node_id, ns in heapq.nsmallest(need, candidates):
            owner = self.atlas.backend.partition(ns)
            victim = owner.graph.get_node(node_id) if owner else None
            if owner is None or victim is None:
                continue
            self.remove(owner, victim, kind="evict", reason=f"capacity {cfg.max_nodes}; value {value:.3f}")
            evicted += 1
        return evicted

    def stats(self, namespace: str | None) -> AtlasStats:
        atlas = self.atlas
        now = atlas.clock.now()
        names = [namespace] if namespace is not None else list(atlas.backend.namespaces())
        kinds: Counter[str] = Counter()
        sessions: Counter[str] = Counter()
        relations: Counter[str] = Counter()
        weights: list[float] = []
        nodes = edges = pinned = superseded = vector_bytes = 0
        used = 0
        for ns in names:
            part = atlas.backend.partition(ns)
            if part is None or part.graph.node_count() == 0:
                continue
            used += 1
            for node in part.graph.nodes():
                nodes += 1
                kinds[node.kind] += 1
                sessions[str(node.session_id)] += 1
                pinned += node.pinned
                superseded += node.id in part.inactive
                weights.append(effective_weight(node, now=now, turn=part.turn, config=atlas.config))
                for edge in part.graph.edges(node.id):
                    if edge.source == node.id:
                        relations[edge.relation.value] += 1
                        edges += 1
            nbytes = getattr(part.vectors, "nbytes", None)
            vector_bytes += int(nbytes()) if callable(nbytes) else 0
        counts, bins = np.histogram(np.asarray(weights, dtype=float), bins=np.asarray(HISTOGRAM_EDGES))
        histogram = tuple((float(bins[i]), float(bins[i + 1]), int(counts[i])) for i in range(len(counts)))
        if namespace is None:
            totals = atlas.events.totals()
            evictions, expirations = totals.get("evict", 0), totals.get("expire", 0)
        else:
            evictions = len(atlas.events.events(kind="evict", namespace=namespace))
            expirations = len(atlas.events.events(kind="expire", namespace=namespace))
            totals = dict(Counter(e.kind for e in atlas.events.events(namespace=namespace)))
        return AtlasStats(used, nodes, edges, dict(kinds), dict(sessions), dict(relations), histogram,
                          pinned, superseded, evictions, expirations, totals, vector_bytes)
