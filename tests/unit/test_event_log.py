"""The event log's compact retention: what comes back is exactly the last ``maxlen`` events emitted,
whatever their data, and lifetime totals go on counting."""

from __future__ import annotations

import sys
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from shared_core.engine.events import _SCHEMAS_MAX, AtlasEvent, EventLog

DATA = st.dictionaries(st.sampled_from(["session_id", "weight", "ids", "by"]),
                       st.one_of(st.none(), st.floats(allow_nan=False), st.text(max_size=3),
                                 st.lists(st.integers(), max_size=2)), max_size=3)
EVENT = st.tuples(st.sampled_from(["add", "evict", "recall"]), st.sampled_from(["u", "v"]),
                  st.one_of(st.none(), st.sampled_from(["n1", "n2"])), st.sampled_from(["", "ttl", "x 0.25"]), DATA)


@settings(max_examples=200, deadline=None)
@given(events=st.lists(EVENT, max_size=40), maxlen=st.integers(0, 12))
def test_the_log_returns_the_last_maxlen_events(events: list[tuple[Any, ...]], maxlen: int) -> None:
    log = EventLog(maxlen=maxlen)
    emitted = [log.emit(kind, namespace=ns, node_id=node, at=float(i), reason=reason, **data)
               for i, (kind, ns, node, reason, data) in enumerate(events)]
    kept = emitted[len(emitted) - min(maxlen, len(emitted)):]
    assert log.events() == kept and len(log) == len(kept) and list(log) == kept
    assert log.events(kind="add", namespace="u") == [e for e in kept if e.kind == "add" and e.namespace == "u"]
    assert sum(log.totals().values()) == len(events)
    assert EventLog.from_records(log.records(), totals=log.totals(), maxlen=maxlen).events() == kept


def test_many_distinct_reasons_stay_exact_past_the_schema_cache() -> None:
    log = EventLog(maxlen=3 * _SCHEMAS_MAX)
    for i in range(2 * _SCHEMAS_MAX):
        log.emit("evict", namespace="u", node_id=f"n{i}", at=0.0, reason=f"value {i}", content=str(i))
    events = log.events()
    assert len(events) == 2 * _SCHEMAS_MAX and len(log._schemas) == _SCHEMAS_MAX
    assert events[-1] == AtlasEvent("evict", "u", f"n{2 * _SCHEMAS_MAX - 1}", 0.0, f"value {2 * _SCHEMAS_MAX - 1}",
                                    {"content": str(2 * _SCHEMAS_MAX - 1)})


@settings(max_examples=100, deadline=None)
@given(rows=st.lists(st.tuples(st.sampled_from(["u", "v"]), st.one_of(st.none(), st.sampled_from(["n1", "n2"])),
                               st.one_of(st.none(), st.text(max_size=3)), st.integers()), max_size=12),
       columns=st.integers(0, 2), maxlen=st.integers(0, 8), subscribed=st.booleans())
def test_emit_many_leaves_the_log_as_one_emit_per_event(rows: list[tuple[Any, ...]], columns: int, maxlen: int,
                                                          subscribed: bool) -> None:
    names = ["session_id", "weight"][:columns]
    data = {name: [row[2 + i] for row in rows] for i, name in enumerate(names)}
    one, many = EventLog(maxlen=maxlen), EventLog(maxlen=maxlen)
    one.emit("warm", namespace="u", node_id=None, at=0.0)
    many.emit("warm", namespace="u", node_id=None, at=0.0)
    seen: list[tuple[AtlasEvent, int]] = []
    if subscribed:  # a subscriber sees each event with the log as `emit` leaves it
        many.subscribe(lambda event: seen.append((event, len(many))))
    expected = [one.emit("add", namespace=ns, node_id=node, at=1.0, reason="add_memory",
                         **{name: values[j] for name, values in data.items()})
                for j, (ns, node, *_) in enumerate(rows)]
    many.emit_many("add", namespaces=[r[0] for r in rows], node_ids=[r[1] for r in rows], at=1.0,
                   reason="add_memory", **data)
    assert many.events() == one.events() and many.totals() == one.totals()
    if subscribed:
        assert [event for event, _ in seen] == expected
        assert [size for _, size in seen] == [min(maxlen, 2 + j) for j in range(len(rows))]


BATCH = st.lists(st.tuples(st.sampled_from(["u", "v"]), st.one_of(st.none(), st.sampled_from(["n1", "n2", "n3"])),
                           st.one_of(st.none(), st.text(max_size=2)), st.floats(0, 1)), max_size=9)


@settings(max_examples=200, deadline=None)
@given(steps=st.lists(st.one_of(st.tuples(st.just("one"), EVENT), st.tuples(st.just("many"), BATCH,
                                                                           st.integers(0, 2))), max_size=25),
       maxlen=st.integers(0, 15))
def test_runs_and_single_events_interleaved_keep_the_last_maxlen(steps: list[tuple[Any, ...]], maxlen: int) -> None:
    """Batches stored as runs and single events, evicted across run boundaries: the log reads back
    as the last ``maxlen`` of the events one `emit` each would have made, filters included."""
    log, expected, kept = EventLog(maxlen=maxlen), [], []
    for at, step in enumerate(steps):
        if step[0] == "one":
            kind, ns, node, reason, data = step[1]
            expected.append(log.emit(kind, namespace=ns, node_id=node, at=float(at), reason=reason, **data))
        else:
            rows, columns = step[1], step[2]
            data = {name: [row[2 + i] for row in rows] for i, name in enumerate(["session_id", "weight"][:columns])}
            log.emit_many("add", namespaces=[r[0] for r in rows], node_ids=[r[1] for r in rows], at=float(at),
                          reason="add_memory", **data)
            expected += [AtlasEvent("add", r[0], r[1], float(at), "add_memory",
                                    {name: values[j] for name, values in data.items()}) for j, r in enumerate(rows)]
        kept = expected[len(expected) - min(maxlen, len(expected)):]
        assert len(log) == len(kept)
    assert log.events() == kept and list(log) == kept
    for kind, ns in (("add", "u"), ("add", None), (None, "v"), ("evict", "v")):
        assert log.events(kind=kind, namespace=ns) == [e for e in kept if kind in (None, e.kind)
                                                       and ns in (None, e.namespace)]
    assert sum(log.totals().values()) == len(expected)
    assert EventLog.from_records(log.records(), totals=log.totals(), maxlen=maxlen).events() == kept


def test_a_run_holds_16_bytes_an_event() -> None:
    log = EventLog(maxlen=10_000)
    ids = [f"id{i}" for i in range(1000)]
    log.emit_many("add", namespaces=["u"] * 1000, node_ids=ids, at=1.0, reason="add_memory", session_id=["s"] * 1000)
    group = list(log._items)
    assert len(group) == 5 and sum(sys.getsizeof(x) for x in group[1:]) < 17 * 1000
    assert [e.node_id for e in log.events()] == ids and len(log) == 1000
    for _ in range(9500):
        log.emit("recall", namespace="u", node_id=None, at=2.0)
    assert len(log) == 10_000 and log.events()[0].node_id == "id500" and log._skip == 500
