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
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from itertools import islice, repeat
from typing import Any

from ..values.errors import InvalidInputError

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


_new = object.__new__
_set_kind, _set_namespace, _set_node_id, _set_at, _set_reason, _set_data = (
    vars(AtlasEvent)[f.name].__set__ for f in fields(AtlasEvent))


def _event_of(kind: str, namespace: str, node_id: str | None, at: float, reason: str,
              data: Mapping[str, Any]) -> AtlasEvent:
    """`AtlasEvent` from stored values, setting its slots directly: half the time of the frozen
    dataclass's ``__init__``, which matters when a log of 10,000 events is read back."""
    event = _new(AtlasEvent)
    _set_kind(event, kind)
    _set_namespace(event, namespace)
    _set_node_id(event, node_id)
    _set_at(event, at)
    _set_reason(event, reason)
    _set_data(event, data)
    return event


# Retained events are kept flat, five items a group in one deque: an event's schema (kind, reason,
# data keys: one shared tuple per distinct combination), namespace, node id, time and data: the
# value itself for one item (the usual case), else a tuple of the values (None for none). An event
# takes five pointers so, and every item is shared with the caller (an `AtlasEvent` with its
# ``data`` dict is built only when read). A batch of `emit_many` (the write path's ``add`` events,
# a recall's ``reinforce`` events) is one group, a run: the node ids as a tuple (which marks the
# run), the namespace (or a tuple of them when they differ) and the data of each event as a tuple.
# The log holds up to ``maxlen`` events (10,000 by default: one per memory in an atlas of 10k); the
# oldest are evicted first, a run's from its start (``_skip`` of the first group are gone, so a
# single emit never copies a run).
_SCHEMAS_MAX = 1024  # distinct schemas interned; reasons with numbers in them are not all kept
_WIDTH = 5  # deque items per event


class EventLog:
    """A bounded, thread-safe log of `AtlasEvent` with synchronous subscribers.

    A subscriber that raises is logged and skipped; it never breaks the write that emitted.
    Totals per kind are kept for the whole life of the log, beyond ``maxlen``. Retained events
    are stored compactly and read back as equal `AtlasEvent` objects.
    """

    def __init__(self, *, maxlen: int = 10_000) -> None:
        if isinstance(maxlen, bool) or not isinstance(maxlen, int) or maxlen < 0:
            raise InvalidInputError(f"event log maxlen must be an int >= 0, got {maxlen!r}")
        self._maxlen = maxlen
        self._items: deque[Any] = deque()
        self._count = 0  # events retained
        self._skip = 0  # events of the first group (a run) already evicted
        self._schemas: dict[tuple[str, ...], tuple[str, ...]] = {}
        self._subscribers: list[Callable[[AtlasEvent], None]] = []
        self._totals: Counter[str] = Counter()
        self._lock = threading.Lock()

    @property
    def maxlen(self) -> int:
        return self._maxlen

    def emit(self, kind: str, *, namespace: str, node_id: str | None, at: float,
             reason: str = "", **data: Any) -> AtlasEvent:
        event = AtlasEvent(kind, namespace, node_id, at, reason, data)
        key = (kind, reason, *data)
        payload = next(iter(data.values())) if len(data) == 1 else tuple(data.values()) if data else None
        with self._lock:
            schema = self._schemas.get(key)
            if schema is None:
                schema = self._schema(key)
            self._items.extend((schema, namespace, node_id, at, payload))
            self._count += 1
            if self._count > self._maxlen:
                self._evict()
            self._totals[kind] += 1
            subscribers = list(self._subscribers)
        for callback in subscribers:
            try:
                callback(event)
            except Exception:  # a subscriber's bug must not undo or break a write
                logger.exception("event subscriber %r failed on %s", callback, kind)
        return event

    def emit_many(self, kind: str, *, namespaces: Sequence[str], node_ids: Sequence[str | None], at: float,
                  reason: str = "", **data: Sequence[Any]) -> None:
        """`emit` for a batch of events of one kind, time and reason: ``namespaces``,
        ``node_ids`` and each ``data`` column give each event's values (the write path's ``add``
        events). Stored as one run (no per-event objects); with
        subscribers, one `emit` each, so a subscriber sees the log exactly as `emit` leaves it."""
        if self._subscribers:
            keys = list(data)
            for i, (ns, node_id) in enumerate(zip(namespaces, node_ids, strict=True)):
                self.emit(kind, namespace=ns, node_id=node_id, at=at, reason=reason, **{k: data[k][i] for k in keys})
            return
        if not node_ids:
            return
        columns = list(data.values())
        count = len(node_ids)
        if len(namespaces) != count or any(len(column) != count for column in columns):
            raise InvalidInputError("emit_many needs one namespace and one value of each column per node id")
        payloads = tuple(columns[0]) if len(columns) == 1 else tuple(zip(*columns, strict=True)) if columns else None
        first = namespaces[0]
        spaces: str | tuple[str, ...] = first if namespaces.count(first) == count else tuple(namespaces)
        key = (kind, reason, *data)
        with self._lock:
            schema = self._schemas.get(key) or self._schema(key)
            self._items.extend((schema, spaces, tuple(node_ids), at, payloads))
            self._count += count
            self._evict()
            self._totals[kind] += count

    def _append(self, kind: str, namespace: str, node_id: str | None, at: float, reason: str,
                data: Mapping[str, Any]) -> None:
        """Retain one event (what `emit` does inline, without the totals and subscribers)."""
        key = (kind, reason, *data)
        payload = next(iter(data.values())) if len(data) == 1 else tuple(data.values()) if data else None
        with self._lock:
            self._items.extend((self._schemas.get(key) or self._schema(key), namespace, node_id, at, payload))
            self._count += 1
            self._evict()

    def _evict(self) -> None:
        """Drop the oldest events past ``maxlen`` (under the lock): whole groups, then the start of
        a run, by ``_skip``."""
        items, excess = self._items, self._count - self._maxlen
        while excess > 0:
            ids = items[2]
            left = len(ids) - self._skip if type(ids) is tuple else 1
            if left > excess:
                self._skip += excess
                self._count -= excess
                return
            for _ in range(_WIDTH):
                items.popleft()
            self._skip = 0
            self._count -= left
            excess -= left

    def _schema(self, key: tuple[str, ...]) -> tuple[str, ...]:
        if len(self._schemas) < _SCHEMAS_MAX:
            self._schemas[key] = key
        return key

    def _read(self, kind: str | None = None, namespace: str | None = None) -> list[AtlasEvent]:
        """The retained events of ``kind`` in ``namespace`` (None: any), oldest first (under the lock)."""
        out = []
        it, skip = iter(self._items), self._skip
        for schema, ns, node_id, at, payload in zip(it, it, it, it, it, strict=True):
            if kind is not None and schema[0] != kind:
                skip = 0
                continue
            keys = schema[2:]
            if type(node_id) is tuple:  # a run
                payloads = repeat(None) if payload is None else payload
                spaces = repeat(ns) if type(ns) is str else ns
                rows = zip(spaces, node_id, payloads, strict=False)  # repeat() stands in for a column
                for space, one, data in islice(rows, skip, None):
                    if namespace is None or space == namespace:
                        values = (data,) if len(keys) == 1 else data or ()
                        by_key = dict(zip(keys, values, strict=True))
                        out.append(_event_of(schema[0], space, one, at, schema[1], by_key))
            elif namespace is None or ns == namespace:
                values = (payload,) if len(keys) == 1 else payload or ()
                out.append(_event_of(schema[0], ns, node_id, at, schema[1], dict(zip(keys, values, strict=True))))
            skip = 0
        return out

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
            return self._read(kind, namespace)

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
            log._append(r["kind"], r["namespace"], node_id, float(r["at"]), r["reason"], dict(r["data"]))
        for kind, n in totals.items():
            if not isinstance(kind, str) or isinstance(n, bool) or not isinstance(n, int) or n < 0:
                raise InvalidInputError(f"malformed event total {kind!r}: {n!r}")
            log._totals[kind] = n
        return log

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[AtlasEvent]:
        return iter(self.events())
