"""The event log: every change the atlas makes, with its reason, and subscribers to follow it.

>>> log = EventLog(maxlen=10)
>>> seen = []
>>> unsubscribe = log.subscribe(seen.append)
>>> _ = log.emit("add", namespace="alice", node_id="n1", at=0.0, reason="add_memory")
>>> seen[0].kind, len(log)
('add', 1)
"""

from __future__ import annotations

import logging
import threading
from collections import Counter, deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import InvalidInputError

__all__ = ["EVENT_KINDS", "AtlasEvent", "EventLog"]

logger = logging.getLogger("shared_core")

EVENT_KINDS = frozenset({
    "add", "recall", "reinforce", "decay", "evict", "expire", "forget", "link", "update",
    "merge", "summarize", "contradict", "fade", "end_session",
})


@dataclass(frozen=True, slots=True)
class AtlasEvent:
    """One change: what (``kind``), to which memory, when, and why."""

    kind: str
    namespace: str
    node_id: str | None
    at: float
    reason: str = ""
    data: Mapping[str, Any] = field(default_factory=dict)


class EventLog:
    """A bounded, thread-safe log of `AtlasEvent` with synchronous subscribers.

    A subscriber that raises is logged and skipped; it never breaks the write that emitted.
    Totals per kind are kept for the whole life of the log, beyond ``maxlen``.
    """

    def __init__(self, *, maxlen: int = 10_000) -> None:
        self._events: deque[AtlasEvent] = deque(maxlen=maxlen)
        self._subscribers: list[Callable[[AtlasEvent], None]] = []
        self._totals: Counter[str] = Counter()
        self._lock = threading.Lock()

    def emit(self, kind: str, *, namespace: str, node_id: str | None, at: float,
             reason: str = "", **data: Any) -> AtlasEvent:
        event = AtlasEvent(kind, namespace, node_id, at, reason, data)
        with self._lock:
            self._events.append(event)
            self._totals[kind] += 1
            subscribers = list(self._subscribers)
        for callback in subscribers:
            try:
                callback(event)
            except Exception:  # a subscriber's bug must not undo or break a write
                logger.exception("event subscriber %r failed on %s", callback, kind)
        return event

    def subscribe(self, callback: Callable[[AtlasEvent], None]) -> Callable[[], None]:
        """Call ``callback(event)`` on every event; returns a function that unsubscribes."""
        if not callable(callback):
            raise InvalidInputError(f"subscriber must be callable, got {callback!r}")
        with self._lock:
            self._subscribers.append(callback)

        def unsubscribe() -> None:
            with self._lock:
                if callback in self._subscribers:
                    self._subscribers.remove(callback)

        return unsubscribe

    def totals(self) -> dict[str, int]:
        with self._lock:
            return dict(self._totals)

    def events(self, *, kind: str | None = None, namespace: str | None = None) -> list[AtlasEvent]:
        with self._lock:
            return [e for e in self._events
                    if (kind is None or e.kind == kind) and (namespace is None or e.namespace == namespace)]

    def __len__(self) -> int:
        return len(self._events)

    def __iter__(self) -> Iterator[AtlasEvent]:
        return iter(self.events())
