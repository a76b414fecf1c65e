"""`AtlasStats`: counts, weights, bytes, evictions and the hit rate of key memories.

Key memories are the ones a caller flags with ``metadata={"key": True}``: facts the agent must
not lose. Each recall emits a ``recall`` event naming the key memories it returned; the stats
report, per time window, how many of the key memories that existed were returned at least once.
A rate that sinks as the key memories age, while the agent keeps asking about them, says decay
is too fast for this workload (raise ``half_life``); a rate that stays flat says it is safe to
decay faster.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..formulas.decay import effective_weight
from .events import AtlasEvent

if TYPE_CHECKING:
    from .state import EngineState

__all__ = ["HISTOGRAM_EDGES", "KEY_FLAG", "AtlasStats", "KeyHitWindow", "collect_stats", "key_hit_windows"]

HISTOGRAM_EDGES = (0.0, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 2.5, 3.0)
KEY_FLAG = "key"
DAY = 86_400.0


@dataclass(frozen=True, slots=True)
class KeyHitWindow:
    """One time window ``(start, end]``: recalls made, key memories existing and returned."""

    start: float
    end: float
    recalls: int
    key_memories: int
    keys_hit: int

    @property
    def rate(self) -> float | None:
        """``keys_hit / key_memories`` (None when there was no key memory)."""
        return None if self.key_memories == 0 else self.keys_hit / self.key_memories


def key_hit_windows(recalls: Iterable[AtlasEvent], key_created: Sequence[float], *, now: float,
                    window: float = DAY, windows: int = 7) -> tuple[KeyHitWindow, ...]:
    """The key-memory hit rate over the last ``windows`` windows of ``window`` seconds, oldest first.

    Windows end at ``now`` and are half-open, ``(s, e]``. In each, ``key_memories`` counts the key
    memories created by ``e`` (among those that still exist), ``keys_hit`` the distinct ones that
    a recall event in the window returned (its ``data["keys"]``), ``recalls`` the recall events.

    >>> from shared_core.engine.events import AtlasEvent
    >>> ev = [AtlasEvent("recall", "u", None, 50.0, data={"keys": ["k1"]})]
    >>> w = key_hit_windows(ev, [0.0, 10.0], now=100.0, window=100.0, windows=1)[0]
    >>> (w.recalls, w.key_memories, w.keys_hit, w.rate)
    (1, 2, 1, 0.5)
    """
    created = sorted(key_created)
    out = []
    events = [e for e in recalls if e.kind == "recall"]
    for i in range(windows, 0, -1):
        end = now - (i - 1) * window
        start = end - window
        inside = [e for e in events if start < e.at <= end]
        hit = {k for e in inside for k in e.data.get("keys", ())}
        existing = int(np.searchsorted(np.asarray(created, dtype=float), end, side="right"))
        out.append(KeyHitWindow(start, end, len(inside), existing, min(len(hit), existing)))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class AtlasStats:
    """A snapshot of the atlas (or of one namespace).

    ``nodes_by_session`` counts the memories of each named session; memories stored without a
    ``session_id`` are in ``nodes`` but in no session.
    """

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
    bytes_used: int = 0
    max_bytes: int | None = None
    held: int = 0
    key_memories: int = 0
    key_hit_rate: tuple[KeyHitWindow, ...] = ()

    def _rows(self) -> list[tuple[str, object]]:
        cap = f" / {self.max_bytes:,}" if self.max_bytes else ""
        rows: list[tuple[str, object]] = [
            ("namespaces", self.namespaces), ("memories", self.nodes), ("edges", self.edges),
            ("pinned", self.pinned), ("superseded", self.superseded),
            ("evictions", self.evictions), ("expirations", self.expirations)]
        for kind, label in (("merge", "merges"), ("summarize", "summaries made"),
                            ("contradict", "contradictions"), ("hold", "turns held back")):
            if self.events.get(kind):
                rows.append((label, self.events[kind]))
        rows.append(("bytes used", f"{self.bytes_used:,}{cap}"))
        rows += [(f"  kind {k}", v) for k, v in sorted(self.nodes_by_kind.items())]
        rows += [(f"  edges {k}", v) for k, v in sorted(self.edges_by_relation.items())]
        return rows

    def _key_rates(self) -> list[str] | None:
        if not (self.key_memories and any(w.recalls for w in self.key_hit_rate)):
            return None
        return ["-" if w.rate is None else f"{w.rate:.0%}" for w in self.key_hit_rate]

    def as_table(self) -> str:
        """A plain-text table, as the demo prints it."""
        rows = self._rows()
        width = max(len(str(r[0])) for r in rows)
        lines = [f"{name:<{width}}  {value!s:>7}" for name, value in rows]
        peak = max((c for _, _, c in self.weight_histogram), default=0) or 1
        lines.append("weight histogram:")
        for lo, hi, c in self.weight_histogram:
            lines.append(f"  {lo:4.2f}-{hi:4.2f} {c:>6} {'#' * round(30 * c / peak)}")
        if (rates := self._key_rates()) is not None:
            lines.append(f"key memories: {self.key_memories}; hit rate per day (oldest first):")
            lines.append("  " + " ".join(rates))
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        """Notebook display: the counts, the weight histogram with bars, the key-memory hit rate."""
        from html import escape

        cell = "padding:1px 8px;text-align:{}"
        counts = "".join(
            f"<tr><td style='{cell.format('left')}{';padding-left:22px' if name.startswith('  ') else ''}'>"
            f"{escape(name.strip())}</td><td style='{cell.format('right')}'>{escape(str(value))}</td></tr>"
            for name, value in self._rows())
        peak = max((c for _, _, c in self.weight_histogram), default=0) or 1
        bars = "".join(
            f"<tr><td style='{cell.format('right')}'>{lo:.2f}–{hi:.2f}</td><td style='{cell.format('right')}'>{c}</td>"
            f"<td style='{cell.format('left')};width:160px'><div style='background:#4e79a7;height:10px;"
            f"width:{round(150 * c / peak)}px'></div></td></tr>"
            for lo, hi, c in self.weight_histogram)
        keys = ""
        if (rates := self._key_rates()) is not None:
            days = "".join(f"<td style='{cell.format('right')}'>{r}</td>" for r in rates)
            keys = (f"<div style='margin-top:6px'><b>key memories</b>: {self.key_memories}; hit rate per day, "
                    f"oldest first:<table><tr>{days}</tr></table></div>")
        return ("<div><div style='display:flex;gap:32px;align-items:flex-start'>"
                f"<div><b>atlas</b><table>{counts}</table></div>"
                f"<div><b>weight histogram</b><table>{bars}</table></div></div>{keys}</div>")

    def __str__(self) -> str:
        return self.as_table()


def collect_stats(state: EngineState, namespace: str | None, *, bytes_used: int, held: int,
                  max_bytes: int | None) -> AtlasStats:
    """Scan the atlas (or one namespace) and summarise it; the caller holds ``state.lock``."""
    now = state.clock.now()
    names = [namespace] if namespace is not None else list(state.backend.namespaces())
    kinds: Counter[str] = Counter()
    sessions: Counter[str] = Counter()
    ends: Counter[str] = Counter()  # edge ends by relation: twice the edges
    weights: list[float] = []
    key_created: list[float] = []
    nodes = edges = pinned = superseded = vector_bytes = 0
    used = 0
    for ns in names:
        part = state.backend.partition(ns)
        if part is None or part.graph.node_count() == 0:
            continue
        used += 1
        for node in part.graph.nodes():
            nodes += 1
            kinds[node.kind] += 1
            if node.session_id is not None:  # a memory stored without a session belongs to none
                sessions[node.session_id] += 1
            pinned += node.pinned
            superseded += node.id in part.inactive
            weights.append(effective_weight(node, now=now, turn=part.turn, config=state.config))
            if node.metadata.get(KEY_FLAG):
                key_created.append(node.created_at)
            for other, relation, _ in part.graph.links(node.id):  # each edge from both ends, a self-loop once
                ends[relation.value] += 2 if other == node.id else 1
        nbytes = part.vectors.nbytes()
        vector_bytes += 0 if nbytes is None else int(nbytes)
    counts, bins = np.histogram(np.asarray(weights, dtype=float), bins=np.asarray(HISTOGRAM_EDGES))
    histogram = tuple((float(bins[i]), float(bins[i + 1]), int(counts[i])) for i in range(len(counts)))
    totals: Mapping[str, int]
    if namespace is None:
        totals = state.events.totals()
        evictions, expirations = totals.get("evict", 0), totals.get("expire", 0)
    else:
        evictions = len(state.events.events(kind="evict", namespace=namespace))
        expirations = len(state.events.events(kind="expire", namespace=namespace))
        totals = dict(Counter(e.kind for e in state.events.events(namespace=namespace)))
    recalls = state.events.events(kind="recall", namespace=namespace)
    relations = {relation: n // 2 for relation, n in ends.items()}
    edges = sum(relations.values())
    return AtlasStats(used, nodes, edges, dict(kinds), dict(sessions), relations, histogram,
                      pinned, superseded, evictions, expirations, dict(totals), vector_bytes,
                      bytes_used, max_bytes, held, len(key_created),
                      key_hit_windows(recalls, key_created, now=now))
