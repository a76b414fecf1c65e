"""Recall's second round (pseudo-relevance feedback, `shared_core.engine.feedback`) on every
backend: evidence that shares no word with the query, only with its best answers, is found
through the second round and not without it; an unrelated query still finds nothing."""

from __future__ import annotations

from collections.abc import Callable

from shared_core import ElasticMemoryAtlas

Make = Callable[..., ElasticMemoryAtlas]

# no similarity or turn edges (the graph walk would reach the target otherwise); three candidates
# per path, so the first round cannot reach the target on its own
COMMON = {"similar_top": 0, "link_temporal": False, "candidate_min": 3, "candidate_ratio": 1.0, "feedback_docs": 2,
          "feedback_min_k": 0}
MEMORIES = ["Melanie: for fun I paint landscapes and go camping in the mountains",
            "Melanie: painting landscapes is what I do for fun, camping too",
            *(f"Melanie said hello on day {i}" for i in range(12)),
            "Camping in the mountains last week, painting landscapes by the tent"]
QUERY = "What does Melanie do for fun?"


def test_evidence_only_the_second_round_reaches(make_atlas: Make) -> None:
    found = {}
    for weight in (0.0, 1.0):
        atlas = make_atlas(feedback_weight=weight, **COMMON)
        target = atlas.add_memories(MEMORIES, namespace="a")[-1]
        hits = atlas.retrieve(QUERY, namespace="a", top_k=3, reinforce=False)
        found[weight] = [h for h in hits if h.node.id == target.id]
        assert all(h.paths[:2] == ("vector", "keyword") for h in hits[:2])  # the first round's best stay first
    assert found[0.0] == []
    assert len(found[1.0]) == 1 and found[1.0][0].paths == ("feedback",)


def test_only_a_wide_recall_runs_the_second_round(make_atlas: Make) -> None:
    atlas = make_atlas(feedback_weight=1.0, **{**COMMON, "feedback_min_k": 4})
    target = atlas.add_memories(MEMORIES, namespace="a")[-1]
    short = atlas.retrieve(QUERY, namespace="a", top_k=3, reinforce=False)
    assert all("feedback" not in h.paths for h in short) and target.id not in {h.node.id for h in short}
    wide = atlas.retrieve(QUERY, namespace="a", top_k=4, reinforce=False)
    assert any("feedback" in h.paths for h in wide) and target.id in {h.node.id for h in wide}


def test_the_second_round_keeps_the_relevance_floor(make_atlas: Make) -> None:
    atlas = make_atlas(feedback_weight=1.0, relevance_floor=0.3, **COMMON)
    atlas.add_memories(MEMORIES, namespace="a")
    assert atlas.retrieve("quantum chromodynamics lattice", namespace="a", top_k=3, reinforce=False) == []
    assert atlas.build_context("quantum chromodynamics lattice", namespace="a", token_budget=500).memories == ()
