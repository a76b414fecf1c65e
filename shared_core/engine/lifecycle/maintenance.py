"""Maintenance on demand and on a timer; session summaries.

`maintain` is what `ElasticMemoryAtlas.maintain` runs: TTL expiry, the clean-up rule (forced,
whatever ``prune_every`` writes have passed, so an idle memory is cleaned too), the byte and
count caps, then compression (merges, cluster and chapter summaries). It returns a
`MaintenanceReport`. `MaintenanceTimer` runs it every few seconds from a daemon thread: the MCP
server starts one (``--maintain-every``), and a durable backend can own one the same way (the
hook is a ``Callable[[], object]``, usually ``atlas.maintain``).

`summarize_session` writes one ``kind="summary"`` node over a session's current memories
(``metadata["summary"] == "session"``), whatever the session's length: the lifecycle's summarizer
(extractive by default, the ``llm`` when the atlas has one) held to half of the sources' words.

>>> from shared_core import ElasticMemoryAtlas, HashingEmbedder
>>> atlas = ElasticMemoryAtlas(embedder=HashingEmbedder())
>>> _ = atlas.add_memory("The flight leaves at 7:05", namespace="u", ttl=60)
>>> atlas.maintain().expired
0
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ...formulas.subqueries import labelled
from ...values.errors import InvalidInputError
from ...values.model import MemoryNode
from .compression import CompressionReport, SummaryPlan, summary_text, write_summary

if TYPE_CHECKING:
    from .manager import Lifecycle

__all__ = ["MaintenanceReport", "MaintenanceTimer", "maintain", "summarize_session"]

logger = logging.getLogger("shared_core")


@dataclass(frozen=True, slots=True)
class MaintenanceReport:
    """What one `maintain` run did: memories expired, cleaned up and evicted by a cap, and the
    compression run's report."""

    expired: int = 0
    pruned: int = 0
    evicted: int = 0
    compression: CompressionReport = field(default_factory=CompressionReport)
    seconds: float = 0.0

    def __str__(self) -> str:
        return (f"expired {self.expired}, cleaned up {self.pruned}, evicted {self.evicted}; "
                f"{self.compression}")


def maintain(life: Lifecycle, namespaces: Sequence[str], *, compress: bool = True) -> MaintenanceReport:
    """Expiry, the forced clean-up rule and the caps under the lock, then compression of
    ``namespaces`` (outside it: compression takes the lock itself, around its model calls)."""
    started = time.perf_counter()
    state = life.engine
    with state.lock:
        now = state.clock.now()
        expired = life.expire(now)
        pruned = life.prune(now, protect=set(), force=True)
        evicted = life.enforce_capacity(now, protect=set())
    report = life.compress(namespaces, progress=False) if compress and namespaces else CompressionReport()
    return MaintenanceReport(expired, pruned, evicted, report, time.perf_counter() - started)


def summarize_session(life: Lifecycle, namespace: str, session_id: str) -> MemoryNode | None:
    """Write a session summary over the session's current memories (at least two); the summary
    node, or None when there is nothing to summarise or no summary shorter than half of its
    sources. The text and its embedding are computed outside the lock (a model call may be
    slow); a failing model raises and changes nothing."""
    state = life.engine
    with state.lock:
        part = state.backend.partition(namespace)
        if part is None:
            return None
        now = state.clock.now()
        members = sorted((n for i in part.sessions.get(session_id, ()) if (n := part.graph.get_node(i)) is not None
                          and n.kind == "memory" and i not in part.inactive and n.is_current(now)),
                         key=lambda n: (n.timestamp, n.turn))
        if len(members) < 2:
            return None
        plan = SummaryPlan(namespace, "session", [n.id for n in members],
                           [labelled(n.content, n.metadata) for n in members], session_id)
    plan.text = summary_text(life.summarizer, plan.texts)
    if not plan.text:
        return None
    plan.vector = state.embed([plan.text])[0]
    with state.lock:
        part = state.backend.partition(namespace)
        now = state.clock.now()
        written = write_summary(state, life, part, plan, now) if part is not None else None
        if part is None or written is None:
            return None
        node, kept = written
        life.account(part, node)
        state.events.emit("summarize", namespace=namespace, node_id=node.id, at=now,
                          reason=f"session of {len(kept)} memories", members=[m.id for m in kept])
        return node


class MaintenanceTimer:
    """Call ``run`` (usually ``atlas.maintain``) every ``every`` seconds from a daemon thread
    named ``name``, until `close` (0: never; `run_now` runs it at once). A failing run is logged
    and the next one tries again. The MCP server's `AutoSaver` saves on one too.

    >>> calls = []
    >>> timer = MaintenanceTimer(lambda: calls.append(1), every=0)
    >>> timer.run_now(); timer.close(); calls
    [1]
    """

    def __init__(self, run: Callable[[], object], *, every: float, name: str = "atlas-maintain") -> None:
        if isinstance(every, bool) or not isinstance(every, (int, float)) or not every >= 0:
            raise InvalidInputError(f"every must be a number of seconds >= 0, got {every!r}")
        self.every = float(every)
        self.runs = 0
        self._run = run
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if self.every > 0:
            self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
            self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self.every):
            try:
                self.run_now()
            except Exception:
                logger.exception("maintenance run failed; the next one tries again")

    def run_now(self) -> None:
        self._run()
        self.runs += 1

    def close(self) -> None:
        """Stop the thread (waiting for a run in progress)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
