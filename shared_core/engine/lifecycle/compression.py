"""Compression: merge near-duplicates, summarise faded clusters, write chapter summaries.

`ElasticMemoryAtlas.compress` (also run every ``compress_every`` writes) does, per namespace:

1. **merge**: current memories with cosine >= ``merge_threshold`` become one node. The newest
   survives (the newest pinned one, if any is pinned: a pinned memory is never absorbed); it
   takes the union of the group's edges, the sum of their accesses, the highest weight and
   importance, and every absorbed memory's provenance under ``metadata["merged_from"]`` (id,
   text, session, times, accesses, metadata). Two statements that `different_values` tells
   apart ("the meeting is at 3pm" / "at 5pm") are never merged, nor are memories with a TTL.
2. **summarise**: Louvain communities (`networkx`) of the namespace's similarity graph
   (``similar_to`` edges plus each faded memory's nearest neighbours at cosine >=
   ``cluster_threshold``); each community with at
   least ``summary_min_size`` *faded* details (weight below ``summary_below``, unpinned, not yet
   summarised) gets a ``kind="summary"`` node linked to them by ``summarizes``, and their weights
   are multiplied by ``summary_fade`` (0.7).
3. **chapters**: each run of ``chapter_size`` memories of a session not yet in a chapter gets
   a chapter-summary node (``metadata["summary"] == "chapter"``).

Every summary reads its sources as labelled lines (`shared_core.formulas.subqueries.labelled`:
a chat's summary says who said what) and holds at most half of their words (`summary_text`);
one that cannot be made that short is not written.

Merges run under the atlas's lock; summary texts (an LLM call, perhaps) and their embeddings
are computed outside it and applied afterwards to the members that still exist.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import networkx as nx
import numpy as np
import numpy.typing as npt

from ...formulas.decay import effective_weight
from ...formulas.subqueries import MERGED_FROM, labelled
from ...formulas.subqueries import keyword_text as indexed_text
from ...values.model import MemoryEdge, MemoryNode, Relation, iso, new_ids
from .contradiction import different_values
from .summarize import Summarizer, capped_summary, extractive_summary

if TYPE_CHECKING:
    from ...store.contract import Partition
    from ...values.config import AtlasConfig
    from ..state import EngineState
    from .ledger import Ledger

__all__ = ["CompressionReport", "MergeRecord", "SummaryPlan", "SummaryRecord", "group_pairs",
           "keyword_text", "near_duplicate_pairs", "summary_text", "write_summary"]

logger = logging.getLogger("shared_core")


@dataclass(frozen=True, slots=True)
class MergeRecord:
    """``absorbed`` memories were merged into ``survivor``."""

    namespace: str
    survivor: str
    absorbed: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SummaryRecord:
    """A summary node written over ``members``; ``kind`` is ``"cluster"`` or ``"chapter"``."""

    namespace: str
    summary_id: str
    kind: str
    members: tuple[str, ...]
    session_id: str | None


@dataclass(frozen=True, slots=True)
class CompressionReport:
    """What one `compress` run merged and summarised."""

    merged: tuple[MergeRecord, ...] = ()
    summaries: tuple[SummaryRecord, ...] = ()
    faded: int = 0
    namespaces: tuple[str, ...] = ()
    seconds: float = 0.0

    @property
    def absorbed(self) -> int:
        """How many memories were merged away."""
        return sum(len(m.absorbed) for m in self.merged)

    def __str__(self) -> str:
        kinds = {k: sum(s.kind == k for s in self.summaries) for k in ("cluster", "chapter")}
        return (f"compressed {len(self.namespaces)} namespace(s) in {self.seconds:.2f} s: merged "
                f"{self.absorbed} near-duplicate(s) into {len(self.merged)} memories; wrote "
                f"{kinds['cluster']} cluster and {kinds['chapter']} chapter summaries; faded {self.faded} details")


def near_duplicate_pairs(query: npt.NDArray[np.float32], base: npt.NDArray[np.float32], *, threshold: float,
                         block: int = 512) -> list[tuple[int, int, float]]:
    """``(i, j, cosine)`` for every query row ``i`` and base row ``j`` with cosine >= ``threshold``.

    Rows are unit vectors, so cosine is ``query @ base.T``, computed ``block`` query rows at a
    time so memory stays at ``block * len(base)`` floats.

    >>> v = np.array([[1, 0], [0.96, 0.28], [0, 1]], dtype=np.float32)
    >>> [(i, j) for i, j, _ in near_duplicate_pairs(v, v, threshold=0.92) if i < j]
    [(0, 1)]
    """
    out: list[tuple[int, int, float]] = []
    for start in range(0, len(query), block):
        sims = query[start:start + block] @ base.T
        rows, cols = np.nonzero(sims >= threshold)
        out.extend((int(r) + start, int(c), float(sims[r, c])) for r, c in zip(rows, cols, strict=True))
    return out


def group_pairs(pairs: Iterable[tuple[str, str]]) -> list[list[str]]:
    """Connected groups of the pairs (union-find), each in first-seen order.

    >>> group_pairs([("a", "b"), ("c", "d"), ("b", "e")])
    [['a', 'b', 'e'], ['c', 'd']]
    """
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in pairs:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[rb] = ra
    groups: dict[str, list[str]] = {}
    for x in parent:
        groups.setdefault(find(x), []).append(x)
    return [g for g in groups.values() if len(g) > 1]


def _current(part: Partition, now: float) -> list[MemoryNode]:
    return [n for n in part.graph.nodes()
            if n.kind == "memory" and n.id not in part.inactive and n.is_current(now)]


def _covered(part: Partition, node_id: str, summary: str) -> bool:
    for e in part.graph.edges(node_id):
        if e.relation is Relation.SUMMARIZES and e.target == node_id:
            source = part.graph.get_node(e.source)
            if source is not None and source.metadata.get("summary") == summary:
                return True
    return False


def _newest(nodes: Iterable[MemoryNode]) -> MemoryNode:
    return max(nodes, key=lambda n: (n.timestamp, n.created_at, n.turn, n.id))


def _provenance(node: MemoryNode) -> dict[str, Any]:
    return {"id": node.id, "content": node.content, "session_id": node.session_id, "timestamp": node.timestamp,
            "created_at": node.created_at, "access_count": node.access_count,
            "metadata": {k: v for k, v in node.metadata.items() if k != MERGED_FROM}}


def merge_group(part: Partition, survivor: MemoryNode, absorbed: Sequence[MemoryNode], *, config: AtlasConfig,
                remove: Callable[[MemoryNode], None]) -> MemoryNode:
    """Merge ``absorbed`` into ``survivor`` (see the module docstring) and return the new survivor."""
    group = [survivor, *absorbed]
    last = max(n.last_accessed_at for n in group)
    turn = max(n.accessed_turn for n in group)
    weight = max(effective_weight(n, now=last, turn=turn, config=config) for n in group)
    provenance = list(survivor.metadata.get(MERGED_FROM, []))
    metadata: dict[str, Any] = {}
    for n in sorted(absorbed, key=lambda n: (n.created_at, n.turn)):
        provenance.extend(n.metadata.get(MERGED_FROM, []))
        provenance.append(_provenance(n))
        metadata.update(n.metadata)
    metadata.update(survivor.metadata)
    metadata[MERGED_FROM] = provenance
    merged = replace(survivor, weight=weight, importance=max(n.importance for n in group),
                     access_count=sum(n.access_count for n in group), last_accessed_at=last, accessed_turn=turn,
                     valid_from=min(n.valid_from for n in group), pinned=any(n.pinned for n in group),
                     metadata=metadata)
    part.graph.put_node(merged)
    members = {n.id for n in group}
    for x in absorbed:
        own = {(e.source, e.target, e.relation): e for e in part.graph.edges(survivor.id)}
        edges = part.graph.edges(x.id)
        before = [e.source for e in edges if e.relation is Relation.BEFORE and e.target == x.id]
        after = [e.target for e in edges if e.relation is Relation.BEFORE and e.source == x.id]
        for prev in before:  # keep the session's chain whole across the hole
            for nxt in after:
                if prev != nxt:
                    part.graph.put_edge(MemoryEdge(source=prev, target=nxt, relation=Relation.BEFORE,
                                                   strength=1.0, created_at=merged.last_accessed_at))
        for e in edges:
            if e.relation is Relation.BEFORE:
                continue
            source = survivor.id if e.source == x.id else e.source
            target = survivor.id if e.target == x.id else e.target
            if source == target or (source in members and target in members):
                continue
            key = (source, target, e.relation)
            if key in own and own[key].strength >= e.strength:
                continue
            part.graph.put_edge(replace(e, source=source, target=target))
        remove(x)
    part.keywords.add(survivor.id, keyword_text(merged), session_id=survivor.session_id)
    return merged


def keyword_text(node: MemoryNode) -> str:
    """The keyword index's text of a memory (`shared_core.formulas.subqueries.keyword_text`).

    >>> keyword_text(MemoryNode(id="a", content="x", namespace="n", metadata={"merged_from": [{"content": "y"}]}))
    'x\\ny'
    """
    return indexed_text(node.content, node.metadata)


def find_merges(part: Partition, *, config: AtlasConfig, now: float, dirty: set[str] | None,
                tick: Callable[[int], None]) -> list[tuple[str, list[str]]]:
    """The near-duplicate groups of one partition as (survivor, absorbed ids), without changing
    anything; ``dirty`` limits the query side to the memories written since the last run (None:
    all of them)."""
    nodes = [n for n in _current(part, now) if n.expires_at is None]
    if len(nodes) < 2:
        tick(len(nodes))
        return []
    ids = [n.id for n in nodes]
    vectors = [part.vectors.get(i) for i in ids]
    keep = [k for k, v in enumerate(vectors) if v is not None]
    nodes = [nodes[k] for k in keep]
    base = np.stack([vectors[k] for k in keep]).astype(np.float32)  # type: ignore[misc]
    rows = list(range(len(nodes))) if dirty is None else [k for k, n in enumerate(nodes) if n.id in dirty]
    pairs: list[tuple[str, str]] = []
    for start in range(0, len(rows), 512):
        chunk = rows[start:start + 512]
        for i, j, _ in near_duplicate_pairs(base[chunk], base, threshold=config.merge_threshold):
            a, b = nodes[chunk[i]], nodes[j]
            if a.id != b.id and not different_values(a.content, b.content):
                pairs.append((a.id, b.id) if a.id < b.id else (b.id, a.id))
        tick(len(chunk))
    by_id = {n.id: n for n in nodes}
    groups: list[tuple[str, list[str]]] = []
    for group in group_pairs(sorted(set(pairs))):
        members = [by_id[i] for i in group]
        survivor = _newest([n for n in members if n.pinned] or members)
        absorbed = [n.id for n in members if n.id != survivor.id and not n.pinned]
        if absorbed:
            groups.append((survivor.id, absorbed))
    return groups


def _live(part: Partition, node_id: str, now: float) -> MemoryNode | None:
    node = part.graph.get_node(node_id)
    ok = node is not None and node.kind == "memory" and node_id not in part.inactive and node.is_current(now) \
        and node.expires_at is None
    return node if ok else None


@dataclass(slots=True)
class SummaryPlan:
    """A summary to write: its members (oldest first) and their texts (labelled lines: `labelled`),
    planned under the lock."""

    namespace: str
    kind: str
    members: list[str]
    texts: list[str]
    session_id: str | None
    text: str = ""
    vector: npt.NDArray[np.float32] | None = None


def plan_clusters(part: Partition, *, config: AtlasConfig, now: float, exclude: Collection[str] = ()
                  ) -> list[SummaryPlan]:
    """Louvain communities of the similarity graph holding enough faded, unsummarised details
    (``exclude``: memories about to be merged away)."""
    current = [n for n in _current(part, now) if n.id not in exclude]
    faded = {n.id for n in current
             if not n.pinned and effective_weight(n, now=now, turn=part.turn, config=config) < config.summary_below
             and not _covered(part, n.id, "cluster")}
    if len(faded) < config.summary_min_size:
        return []
    ids = {n.id for n in current}
    graph = nx.Graph()
    graph.add_nodes_from(faded)
    for fid in faded:
        for e in part.graph.edges(fid):
            other = e.target if e.source == fid else e.source
            if e.relation is Relation.SIMILAR_TO and other in ids:
                graph.add_edge(fid, other, weight=max(e.strength, graph.get_edge_data(fid, other, {}).get("weight", 0)))
        vec = part.vectors.get(fid)
        if vec is not None:
            for other, sim in part.vectors.search(vec, 6):
                if other != fid and other in ids and sim >= config.cluster_threshold:
                    graph.add_edge(fid, other, weight=max(sim, graph.get_edge_data(fid, other, {}).get("weight", 0)))
    plans = []
    by_id = {n.id: n for n in current}
    for community in nx.community.louvain_communities(graph, weight="weight", seed=0):
        members = sorted((by_id[i] for i in community if i in faded), key=lambda n: (n.timestamp, n.turn))
        if len(members) >= config.summary_min_size:
            sessions = {n.session_id for n in members}
            plans.append(SummaryPlan(part.namespace, "cluster", [n.id for n in members],
                                     [labelled(n.content, n.metadata) for n in members],
                                     sessions.pop() if len(sessions) == 1 else None))
    return plans


def plan_chapters(part: Partition, *, config: AtlasConfig, exclude: Collection[str] = ()) -> list[SummaryPlan]:
    """One plan per run of ``chapter_size`` memories of a session that no chapter covers yet
    (``exclude``: memories about to be merged away)."""
    plans = []
    for session, ids in part.sessions.items():
        if session is None or len(ids) < config.chapter_size:
            continue
        open_ids = [i for i in ids if (n := part.graph.get_node(i)) is not None and n.kind == "memory"
                    and i not in exclude and not _covered(part, i, "chapter")]
        for start in range(0, len(open_ids) - config.chapter_size + 1, config.chapter_size):
            chunk = open_ids[start:start + config.chapter_size]
            texts = [labelled(n.content, n.metadata) for i in chunk if (n := part.graph.get_node(i)) is not None]
            plans.append(SummaryPlan(part.namespace, "chapter", chunk, texts, session))
    return plans


def write_summary(state: EngineState, life: Ledger, part: Partition, plan: SummaryPlan, now: float
                  ) -> tuple[MemoryNode, list[MemoryNode]] | None:
    """Insert a planned summary over its members that still exist; None if too few remain."""
    members = [n for i in plan.members if (n := part.graph.get_node(i)) is not None
               and i not in part.inactive and n.is_current(now)]
    least = state.config.summary_min_size if plan.kind == "cluster" else 1
    if len(members) < least or plan.vector is None or not plan.text.strip():
        return None
    start, end = min(n.timestamp for n in members), max(n.timestamp for n in members)
    node = MemoryNode(id=new_ids(1)[0], content=plan.text, namespace=part.namespace, session_id=plan.session_id,
                      weight=1.0, importance=1.0, timestamp=end, created_at=now, last_accessed_at=now,
                      turn=part.turn, accessed_turn=part.turn, valid_from=now, kind="summary",
                      metadata={"summary": plan.kind, "members": len(members), "span": [iso(start), iso(end)]})
    part.graph.put_node(node)
    try:
        part.vectors.add([node.id], plan.vector[None, :])
        part.keywords.add(node.id, keyword_text(node), session_id=node.session_id)
        part.track(node.id, node.session_id, node.timestamp)
        _place_before(part, node.id, node.session_id, {n.id for n in members})
        state.where[node.id] = part.namespace
        for m in members:
            part.graph.put_edge(MemoryEdge(source=node.id, target=m.id, relation=Relation.SUMMARIZES,
                                           strength=1.0, created_at=now))
    except BaseException:
        life.remove(part, node, kind=None, reason="rollback")
        raise
    return node, members


def _place_before(part: Partition, node_id: str, session: str | None, members: set[str]) -> None:
    """Move a summary in its session's order before its first member (or to the front), so it
    never becomes the session's latest memory (working memory, temporal links)."""
    ids = part.sessions.get(session)
    if ids is None:
        return
    order = [i for i in ids if i != node_id]
    at = next((k for k, i in enumerate(order) if i in members), 0)
    order.insert(at, node_id)
    part.sessions[session] = dict.fromkeys(order)


def compress_atlas(state: EngineState, life: Ledger, namespaces: Sequence[str], *, progress: bool
                   ) -> CompressionReport:
    """Run the three steps over ``namespaces`` (see the module docstring).

    Everything is planned under the lock without changing anything; summary texts and their
    embeddings are computed outside it; then merges and summaries are applied under the lock to
    the memories that still qualify. So a failing embedder or summarizer leaves the atlas as it was.
    """
    started = time.perf_counter()
    cfg = state.config
    bar = _progress(progress)
    groups: list[tuple[str, str, list[str]]] = []
    plans: list[SummaryPlan] = []
    seen: dict[str, set[str] | None] = {}
    with state.lock:
        now = state.clock.now()
        parts = [p for ns in namespaces if (p := state.backend.partition(ns)) is not None]
        if bar is not None:
            bar.total = sum(p.graph.node_count() for p in parts)
        for part in parts:
            seen[part.namespace] = dirty = life.dirty_ids(part.namespace)
            found = find_merges(part, config=cfg, now=now, dirty=dirty, tick=bar.update if bar else _noop)
            groups += [(part.namespace, survivor, absorbed) for survivor, absorbed in found]
            gone = {i for _, absorbed in found for i in absorbed}
            plans += plan_clusters(part, config=cfg, now=now, exclude=gone) + \
                plan_chapters(part, config=cfg, exclude=gone)
    try:
        if plans:
            if bar is not None:
                bar.total = (bar.total or 0) + len(plans)
                bar.refresh()
            for plan in plans:
                plan.text = summary_text(life.summarizer, plan.texts)
            for plan, vector in zip(plans, state.embed([p.text for p in plans]), strict=True):
                plan.vector = vector
        with state.lock:
            now = state.clock.now()
            merged = [record for ns, survivor, absorbed in groups
                      if (record := _apply_merge(state, life, ns, survivor, absorbed, now)) is not None]
            summaries, faded = _apply_summaries(state, life, plans, now, bar)
            for ns, dirty in seen.items():
                life.clear_dirty(ns, dirty)
            report = CompressionReport(tuple(merged), tuple(summaries), faded, tuple(namespaces),
                                       time.perf_counter() - started)
            for ns in namespaces:
                state.events.emit("compress", namespace=ns, node_id=None, at=now, reason="compress",
                                  merged=sum(len(m.absorbed) for m in merged if m.namespace == ns),
                                  summaries=sum(s.namespace == ns for s in summaries))
            life.enforce(now, protect={s.summary_id for s in summaries})
    finally:
        if bar is not None:
            bar.close()
    return report


def summary_text(summarizer: Summarizer, texts: Sequence[str]) -> str:
    """The summarizer's text for ``texts``, held to `MAX_SUMMARY_RATIO` of their words
    (`capped_summary`); "" when no summary that short can be written (then none is)."""
    fallback = extractive_summary(texts) or " ".join(texts)[:600]
    try:
        text = summarizer.summarize(texts)
    except Exception:
        logger.exception("summarizer %r failed; using the extractive summary", summarizer)
        text = fallback
    if not isinstance(text, str) or not text.strip():
        logger.warning("summarizer %r returned %r; using the extractive summary", summarizer, text)
        text = fallback
    return capped_summary(text, texts) or ""


def _apply_merge(state: EngineState, life: Ledger, namespace: str, survivor_id: str, absorbed_ids: Sequence[str],
                 now: float) -> MergeRecord | None:
    part = state.backend.partition(namespace)
    survivor = _live(part, survivor_id, now) if part is not None else None
    if part is None or survivor is None:
        return None
    absorbed = [n for i in absorbed_ids if (n := _live(part, i, now)) is not None and not n.pinned]
    if not absorbed:
        return None

    def drop(node: MemoryNode) -> None:
        life.remove(part, node, kind=None, reason="merge")

    merged = merge_group(part, survivor, absorbed, config=state.config, remove=drop)
    life.account(part, merged, previous=survivor)
    state.events.emit("merge", namespace=namespace, node_id=merged.id, at=now,
                      reason=f"near-duplicates (cosine >= {state.config.merge_threshold})",
                      absorbed=[n.id for n in absorbed])
    return MergeRecord(namespace, merged.id, tuple(n.id for n in absorbed))


def _apply_summaries(state: EngineState, life: Ledger, plans: Sequence[SummaryPlan], now: float, bar: Any
                     ) -> tuple[list[SummaryRecord], int]:
    cfg = state.config
    summaries: list[SummaryRecord] = []
    faded = 0
    for plan in plans:
        owner = state.backend.partition(plan.namespace)
        written = write_summary(state, life, owner, plan, now) if owner is not None else None
        if bar is not None:
            bar.update(1)
        if owner is None or written is None:
            continue
        node, members = written
        life.account(owner, node)
        summaries.append(SummaryRecord(plan.namespace, node.id, plan.kind, tuple(m.id for m in members),
                                       plan.session_id))
        state.events.emit("summarize", namespace=plan.namespace, node_id=node.id, at=now,
                          reason=f"{plan.kind} of {len(members)} memories", members=[m.id for m in members])
        if plan.kind == "cluster":
            for m in members:
                weight = max(cfg.weight_floor, m.weight * cfg.summary_fade)
                owner.graph.put_node(replace(m, weight=weight))
                state.events.emit("decay", namespace=plan.namespace, node_id=m.id, at=now,
                                  reason=f"summarized by {node.id} (x{cfg.summary_fade})", weight=weight)
                faded += 1
    return summaries, faded


def _noop(_: int) -> None:
    return None


def _progress(show: bool) -> Any:
    if not show:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=0, desc="compressing memories", unit="mem")
