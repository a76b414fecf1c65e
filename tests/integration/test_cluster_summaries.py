"""Cluster summaries form at the defaults on the real model (issue 25's garden sentences)."""

from __future__ import annotations

import pytest

from shared_core import AtlasConfig, ElasticMemoryAtlas, ManualClock, MiniLMEmbedder

pytestmark = pytest.mark.integration

GARDEN = ["I planted tomatoes in the raised bed by the fence.",
          "The basil in the garden needs watering every morning.",
          "Slugs ate half of my lettuce seedlings last week.",
          "We added compost to the vegetable patch in spring."]


def test_four_related_garden_sentences_faded_60_days_get_a_cluster_summary() -> None:
    clock = ManualClock(1_700_000_000.0)
    atlas = ElasticMemoryAtlas(embedder=MiniLMEmbedder(), clock=clock)
    ids = [atlas.add_memory(t, namespace="u").id for t in GARDEN]
    passport = atlas.add_memory("My passport expires in March 2027.", namespace="u").id
    vectors = [atlas.get(i).embedding for i in ids]
    best = max(float(a @ b) for k, a in enumerate(vectors) for b in vectors[k + 1:])  # type: ignore[operator]
    assert best < AtlasConfig().similar_threshold  # no similar_to link among them: the case
    clock.advance(days=60)
    clusters = [s for s in atlas.compress().summaries if s.kind == "cluster"]
    assert len(clusters) == 1 and len(set(clusters[0].members) & set(ids)) >= 3
    assert passport not in clusters[0].members
    summary = atlas.get(clusters[0].summary_id)
    sources = [atlas.get(i).content for i in clusters[0].members]
    assert atlas.count_tokens(summary.content) <= 0.5 * sum(atlas.count_tokens(t) for t in sources)
