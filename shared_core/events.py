"""The event log: every change the atlas makes, with its reason, and subscribers to follow it.

Kinds (`EVENT_KINDS`): ``add``, ``hold`` (a turn the write filter kept in working memory only),
``update``, ``link``, ``recall``, ``reinforce``, ``decay`` (a weight lowered by compression),
``fade``, ``evict`` (capacity, byte cap or the cleanup rule), ``expire`` (TTL), ``forget``,
``merge``, ``summarize``, ``contradict``, ``compress`` and ``end_session``. Each carries a
``reason`` in words and its details in ``data``.

>>> log = EventLog(maxlen=10)
>>> seen = []
>>> unsubscribe = log.subscribe(seen.append)
>>> _ = log.emit("add", namespace="alice", node_id="n1", at=0.0, reason="add_memory")
>>> seen[0].kind, len(log)
('add', 1)
>>> EventLog.from_records(log.records(), totals=log.totals()).events() == log.events()
True
"""

from __future__ import annotations

import logging
import threading
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import InvalidInputError

__all__ = ["EVENT_KINDS", "AtlasEvent", "EventLog"]

logger = logging.getLogger("shared_core")

EVENT_KINDS = frozenset({
    "add", "hold", "recall", "reinforce", "decay", "evict", "expire", "forget", "link", "update",
    "merge", "summarize", "contradict", "compress", "fade", "end_session",
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

    def as_record(self) -> dict[str, Any]:
        """A JSON-ready dict (the form `EventLog.records` and save files use)."""
        return {"kind": self.kind, "namespace": self.namespace, "node_id": self.node_id, "at": self.at,
                "reason": self.reason, "data": dict(self.data)}


# A retained event, compact: (kind, namespace, node_id, at, reason, *data keys, *data values). An
# `AtlasEvent` with its ``data`` dict takes 264 bytes (the dict alone 184); this tuple takes 96 for
# an event with one data item, and every value in it is shared with the caller. The log holds up
# to ``maxlen`` events (10,000 by default: one per memory in an atlas of 10k), so this matters.
_Record = tuple[Any, ...]


def _record(event: AtlasEvent) -> _Record:
    data = event.data
    return (event.kind, event.namespace, event.node_id, event.at, event.reason, *data, *data.values())


def _event(record: _Record) -> AtlasEvent:
    half = (len(record) - 5) // 2
    return AtlasEvent(record[0], record[1], record[2], record[3], record[4],
                      dict(zip(record[5:5 + half], record[5 + half:], strict=True)))


class EventLog:
    """A bounded, thread-safe log of `AtlasEvent` with synchronous subscribers.

    A subscriber that raises is logged and skipped; it never breaks the write that emitted.
    Totals per kind are kept for the whole life of the log, beyond ``maxlen``. Retained events
    are kept as compact tuples and read back as equal `AtlasEvent` objects.
    """

    def __init__(self, *, maxlen: int = 10_000) -> None:
        if isinstance(maxlen, bool) or not isinstance(maxlen, int) or maxlen < 0:
            raise InvalidInputError(f"event log maxlen must be an int >= 0, got {maxlen!r}")
        self._events: deque[_Record] = deque(maxlen=maxlen)
        self._subscribers: list[Callable[[AtlasEvent], None]] = []
        self._totals: Counter[str] = Counter()
        self._lock = threading.Lock()

    @property
    def maxlen(self) -> int:
        return self._events.maxlen or 0

    def emit(self, kind: str, *, namespace: str, node_id: str | None, at: float,
             reason: str = "", **data: Any) -> AtlasEvent:
        event = AtlasEvent(kind, namespace, node_id, at, reason, data)
        record = (kind, namespace, node_id, at, reason, *data, *data.values())
        with self._lock:
            self._events.append(record)
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
            return [_event(r) for r in self._events
                    if (kind is None or r[0] == kind) and (namespace is None or r[1] == namespace)]

    def records(self) -> list[dict[str, Any]]:
        """Every retained event as a JSON-ready dict, oldest first."""
        return [e.as_record() for e in self.events()]

    @classmethod
    def from_records(cls, records: Iterable[Mapping[str, Any]], *, totals: Mapping[str, int],
                     maxlen: int = 10_000) -> EventLog:
        """Rebuild a log from `records` and lifetime `totals` (subscribers are not saved).

        Raises `InvalidInputError` (or ``KeyError``/``TypeError``) on a malformed record.
        """
        log = cls(maxlen=maxlen)
        for r in records:
            node_id = r["node_id"]
            if not isinstance(r["kind"], str) or not isinstance(r["namespace"], str) \
                    or not (node_id is None or isinstance(node_id, str)) or not isinstance(r["reason"], str) \
                    or isinstance(r["at"], bool) or not isinstance(r["at"], (int, float)) \
                    or not isinstance(r["data"], Mapping):
                raise InvalidInputError(f"malformed event record {dict(r)!r:.200}")
            log._events.append(_record(AtlasEvent(r["kind"], r["namespace"], node_id, float(r["at"]),
                                                  r["reason"], dict(r["data"]))))
        for kind, n in totals.items():
            if not isinstance(kind, str) or isinstance(n, bool) or not isinstance(n, int) or n < 0:
                raise InvalidInputError(f"malformed event total {kind!r}: {n!r}")
            log._totals[kind] = n
        return log

    def __len__(self) -> int:
        return len(self._events)

    def __iter__(self) -> Iterator[AtlasEvent]:
        return iter(self.events())
