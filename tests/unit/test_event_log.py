"""The event log's compact retention: what comes back is exactly the last ``maxlen`` events emitted,
whatever their data, and lifetime totals go on counting."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from shared_core.events import _SCHEMAS_MAX, AtlasEvent, EventLog

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
