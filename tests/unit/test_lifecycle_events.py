"""The event log (every lifecycle change with its reason, to subscribers) and the statistics."""

from __future__ import annotations

import numpy as np
import pytest

from shared_core import AtlasConfig, AtlasEvent, ElasticMemoryAtlas, EventLog, HashingEmbedder, ManualClock
from shared_core.values.errors import InvalidInputError

DIM = 32


def test_every_lifecycle_change_is_an_event_with_a_reason(clock: ManualClock) -> None:
    atlas = ElasticMemoryAtlas(config=AtlasConfig.managed(max_nodes=12, compress_every=None, similar_threshold=0.5),
                               embedder=HashingEmbedder(dim=DIM), clock=clock)
    seen: list[AtlasEvent] = []
    stop = atlas.subscribe(seen.append)
    atlas.add_memory("ok thanks", namespace="u", session_id="s")  # hold
    old = atlas.add_memory("User lives in Paris", namespace="u", session_id="s")
    atlas.add_memory("User lives in Berlin", namespace="u", session_id="s")  # contradict
    atlas.add_memory("the parking code is 7781 for today", namespace="u", ttl=60)
    atlas.retrieve("where does the user live", namespace="u")  # recall + reinforce
    gym = atlas.add_memory("The gym opens at 6", namespace="u", session_id="s")
    atlas.update_memory(gym.id, "The gym opens at 7")
    assert atlas.get(old.id).valid_to is not None
    trip = np.eye(DIM)[5]
    for i, text in enumerate(["We booked the Porto hotel for May 3", "Train to Porto leaves May 2 at 7:05",
                              "Ana meets us at Porto station", "Porto dinner is booked for May 4 at 20:00"]):
        vec = trip + 0.4 * np.random.default_rng(i).normal(size=DIM) / np.sqrt(DIM)
        atlas.add_memory(text, namespace="u", session_id="trip", embedding=vec)
    atlas.add_memory("Dinner is booked for May 4 at 20:00 in Porto", namespace="u", session_id="trip",
                     embedding=trip + 0.4 * np.random.default_rng(3).normal(size=DIM) / np.sqrt(DIM))
    clock.advance(days=40)
    atlas.add_memory("the weekly report is due on Friday", namespace="u", session_id="s")  # expire
    atlas.compress()  # merge, summarize, decay, compress
    for i in range(8):
        atlas.add_memory(f"filler fact {i}: the server {i} runs on port {9000 + i}", namespace="v")  # evict
    stop()
    atlas.add_memory("not seen by the unsubscribed callback", namespace="v")
    kinds = {e.kind for e in seen}
    assert {"add", "hold", "recall", "reinforce", "decay", "evict", "merge", "summarize", "contradict", "expire",
            "update", "compress"} <= kinds
    assert all(e.reason for e in seen), [e for e in seen if not e.reason]
    assert seen == atlas.events.events()[: len(seen)] and len(atlas.events) == len(seen) + 1
    reasons = {e.kind: e.reason for e in seen}
    assert reasons["expire"] == "ttl" and reasons["recall"] == "retrieve"
    assert reasons["evict"].startswith("capacity 12") and "summarized by" in reasons["decay"]


def test_stats_report_counts_weights_bytes_and_evictions(clock: ManualClock) -> None:
    atlas = ElasticMemoryAtlas(config=AtlasConfig(max_nodes=20, max_bytes=10**7),
                               embedder=HashingEmbedder(dim=DIM), clock=clock)
    atlas.add_memories([f"note {i} on the garden" for i in range(25)], namespace="u", session_id="s")
    atlas.add_memory("pinned", namespace="u", pinned=True)
    stats = atlas.stats()
    # a batch is never evicted by its own write; the next one brings 26 down to 20 * (1 - 0.02)
    assert stats.nodes == len(atlas) == 19 and stats.nodes_by_kind == {"memory": 19}
    assert sum(c for _, _, c in stats.weight_histogram) == stats.nodes
    assert stats.evictions == 7 and stats.events["evict"] == 7 and stats.pinned == 1
    assert 19 * 1000 < stats.bytes_used < 19 * 5000 and stats.max_bytes == 10**7
    table = stats.as_table()
    assert "bytes used" in table and f"{stats.bytes_used:,} / 10,000,000" in table


def test_the_key_memory_hit_rate_over_time(clock: ManualClock) -> None:
    atlas = ElasticMemoryAtlas(embedder=HashingEmbedder(dim=64), clock=clock)
    atlas.add_memory("The user's allergy: peanuts", namespace="u", metadata={"key": True})
    atlas.add_memory("The user's daughter is called Mia", namespace="u", metadata={"key": True})
    atlas.add_memory("The user once mentioned the weather", namespace="u")
    clock.advance(days=1)
    atlas.retrieve("peanuts allergy", namespace="u", top_k=1)  # day 1: one of two key memories
    clock.advance(days=1)
    atlas.retrieve("peanuts allergy", namespace="u", top_k=1)
    atlas.build_context("what is the daughter called", namespace="u", token_budget=60)  # day 2: both
    clock.advance(days=1)
    atlas.retrieve("weather", namespace="u", top_k=1)  # day 3: none
    stats = atlas.stats()
    assert stats.key_memories == 2
    rates = [(w.recalls, w.keys_hit, w.rate) for w in stats.key_hit_rate]
    assert rates[-4:] == [(0, 0, 0.0), (1, 1, 0.5), (2, 2, 1.0), (1, 0, 0.0)]
    assert all(e.reason in ("retrieve", "build_context") for e in atlas.events.events(kind="recall"))
    assert "hit rate per day" in stats.as_table()


def test_an_event_log_round_trips_and_refuses_malformed_records() -> None:
    log = EventLog(maxlen=3)
    for i in range(5):
        log.emit("add", namespace="u", node_id=f"n{i}", at=float(i), reason="add_memory", n=i)
    copy = EventLog.from_records(log.records(), totals=log.totals(), maxlen=3)
    assert copy.events() == log.events() and copy.totals() == {"add": 5} and copy.maxlen == 3
    with pytest.raises(InvalidInputError, match="malformed event record"):
        EventLog.from_records([{"kind": "add", "namespace": "u", "node_id": 3, "at": 0.0, "reason": "", "data": {}}],
                              totals={})
    with pytest.raises(InvalidInputError, match="malformed event total"):
        EventLog.from_records([], totals={"add": -1})
