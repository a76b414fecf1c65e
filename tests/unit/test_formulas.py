"""The elastic-weight formulas, alone and as the atlas applies them with an injected clock."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shared_core import AtlasConfig, ElasticMemoryAtlas, HashingEmbedder, ManualClock
from shared_core.formulas.decay import decayed_weight, eviction_value, recency_score, reinforced_weight, rich_weight

DAY = 86_400.0


def test_decay_halves_every_half_life() -> None:
    assert decayed_weight(2.0, 10.0, half_life=10.0) == pytest.approx(1.0)
    assert decayed_weight(2.0, 20.0, half_life=10.0) == pytest.approx(0.5)
    assert decayed_weight(2.0, 0.0, half_life=10.0) == 2.0
    assert decayed_weight(2.0, -5.0, half_life=10.0) == 2.0  # a clock set back does not grow weights


def test_decay_stops_at_the_floor() -> None:
    assert decayed_weight(1.0, 1e9, half_life=1.0, floor=0.05) == 0.05


@given(st.floats(0.01, 3.0), st.floats(0, 1e7), st.floats(0, 1e7), st.floats(1.0, 1e6))
def test_decay_is_monotone_in_elapsed_time(w: float, a: float, b: float, half_life: float) -> None:
    lo, hi = sorted((a, b))
    assert decayed_weight(w, hi, half_life=half_life) <= decayed_weight(w, lo, half_life=half_life)


def test_reinforcement_multiplies_and_caps() -> None:
    assert reinforced_weight(1.0, factor=1.2, cap=3.0) == pytest.approx(1.2)
    w = 1.0
    for _ in range(20):
        w = reinforced_weight(w, factor=1.2, cap=3.0)
    assert w == 3.0


def test_recency_and_rich_weight() -> None:
    assert recency_score(0, half_life=5) == 1.0
    assert recency_score(5, half_life=5) == pytest.approx(0.5)
    fresh = rich_weight(1.0, 0, 0.0, half_life=10.0)
    used = rich_weight(1.0, 1, 0.0, half_life=10.0)
    old = rich_weight(1.0, 0, 100.0, half_life=10.0)
    assert used == pytest.approx(fresh + math.log1p(1))
    assert old < fresh
    assert rich_weight(1.0, 1000, 0.0, half_life=10.0, cap=3.0) == 3.0
    assert rich_weight(1.0, 0, 1e9, half_life=1.0, recency_gain=0.0, floor=0.05) == 0.05


def test_eviction_value_prefers_linked_recent_strong_memories() -> None:
    base = eviction_value(1.0, 0.0, 0, recency_half_life=10.0)
    assert eviction_value(1.0, 0.0, 3, recency_half_life=10.0) > base
    assert eviction_value(1.0, 100.0, 0, recency_half_life=10.0) < base
    assert eviction_value(2.0, 0.0, 0, recency_half_life=10.0) > base


def test_atlas_decays_lazily_and_reinforces_on_recall(clock: ManualClock) -> None:
    atlas = ElasticMemoryAtlas(config=AtlasConfig(half_life=10 * DAY, similar_top=0),
                               embedder=HashingEmbedder(dim=64), clock=clock)
    node = atlas.add_memory("the user likes green tea", namespace="u")
    assert node.weight == 1.0
    clock.advance(days=10)
    hit = atlas.retrieve("green tea", namespace="u", top_k=1, reinforce=False)[0]
    assert hit.components["weight"] == pytest.approx(0.5)  # decayed lazily, nothing was swept
    assert atlas.get(node.id).weight == 1.0  # the stored weight is the weight at last access
    hit = atlas.retrieve("green tea", namespace="u", top_k=1)[0]
    assert hit.node.weight == pytest.approx(0.6)  # 0.5 * 1.2
    assert hit.node.access_count == 1
    assert hit.node.last_accessed_at == clock.now()


def test_decay_counted_in_turns(clock: ManualClock) -> None:
    atlas = ElasticMemoryAtlas(config=AtlasConfig.chat(half_life=4, similar_top=0),
                               embedder=HashingEmbedder(dim=64), clock=clock)
    atlas.add_memory("the launch code is blue", namespace="u")
    atlas.add_memories([f"filler turn number {i}" for i in range(4)], namespace="u")
    hit = atlas.retrieve("launch code", namespace="u", top_k=1, reinforce=False)[0]
    assert hit.components["weight"] == pytest.approx(0.5)


def test_pinned_memories_do_not_decay(clock: ManualClock) -> None:
    atlas = ElasticMemoryAtlas(config=AtlasConfig(half_life=DAY), embedder=HashingEmbedder(dim=64), clock=clock)
    atlas.add_memory("allergic to peanuts", namespace="u", pinned=True)
    clock.advance(days=30)
    hit = atlas.retrieve("peanuts", namespace="u", top_k=1, reinforce=False)[0]
    assert hit.components["weight"] == 1.0


def test_rich_weight_preset_uses_accesses(clock: ManualClock) -> None:
    atlas = ElasticMemoryAtlas(config=AtlasConfig.rich(), embedder=HashingEmbedder(dim=64), clock=clock)
    atlas.add_memory("favourite colour is teal", namespace="u")
    first = atlas.retrieve("favourite colour", namespace="u", top_k=1)[0].components["weight"]
    second = atlas.retrieve("favourite colour", namespace="u", top_k=1)[0].components["weight"]
    assert second > first
