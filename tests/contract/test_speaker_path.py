"""Recall's speaker path (query decomposition by speaker, `shared_core.engine.decompose`) on every
backend: a named speaker's own turn that the question's name buries under turns *addressing*
that speaker is found through the speaker path and not without it; a query that names no
speaker, a short recall and an unrelated query are left as they were."""

from __future__ import annotations

from collections.abc import Callable

from shared_core import ElasticMemoryAtlas, ScoredMemory

Make = Callable[..., ElasticMemoryAtlas]

# no similarity or turn edges and no feedback round (either could reach the target otherwise);
# three candidates per path, so the first round cannot reach the target on its own
COMMON = {"similar_top": 0, "link_temporal": False, "candidate_min": 3, "candidate_ratio": 1.0,
          "feedback_weight": 0.0, "speaker_min_k": 0}
MEMORIES = [
    "Caroline: Melanie, Melanie! What does Melanie do for fun, Melanie?",
    "Caroline: hey Melanie, what does Melanie do for fun these days, Melanie?",
    "Caroline: Melanie, tell me what Melanie does for fun, Melanie",
    "Melanie: I am Melanie, and what does Melanie do for fun? Melanie asks herself",
    *(f"Caroline said hello on day {i}" for i in range(8)),
    "Melanie: swimming with the kids is my fun",
]
QUERY = "What does Melanie do for fun?"


def _ids(hits: list[ScoredMemory]) -> list[str]:
    return [h.node.id for h in hits]


def test_the_speakers_own_turn_only_the_speaker_path_reaches(make_atlas: Make) -> None:
    found = {}
    for weight in (0.0, 2.0):
        atlas = make_atlas(speaker_weight=weight, **COMMON)
        target = atlas.add_memories(MEMORIES, namespace="a")[-1]
        hits = atlas.retrieve(QUERY, namespace="a", top_k=3, reinforce=False)
        found[weight] = [h for h in hits if h.node.id == target.id]
    assert found[0.0] == []
    assert len(found[2.0]) == 1 and "speaker" in found[2.0][0].paths


def test_a_query_that_names_no_speaker_is_not_decomposed(make_atlas: Make) -> None:
    query = "What does Paris do for fun?"  # a name, but nobody's label
    hits = {w: make_atlas(speaker_weight=w, **COMMON) for w in (0.0, 2.0)}
    answers = []
    for atlas in hits.values():
        atlas.add_memories(MEMORIES, namespace="a")
        answers.append([(h.node.content, h.paths) for h in atlas.retrieve(query, namespace="a", top_k=3,
                                                                          reinforce=False)])
    assert answers[0] == answers[1] and all("speaker" not in p for _, p in answers[1])


def test_only_a_wide_recall_runs_the_speaker_path(make_atlas: Make) -> None:
    atlas = make_atlas(speaker_weight=2.0, **{**COMMON, "speaker_min_k": 4})
    target = atlas.add_memories(MEMORIES, namespace="a")[-1]
    short = atlas.retrieve(QUERY, namespace="a", top_k=3, reinforce=False)
    assert all("speaker" not in h.paths for h in short) and target.id not in _ids(short)
    wide = atlas.retrieve(QUERY, namespace="a", top_k=4, reinforce=False)
    assert target.id in _ids(wide)


def test_the_speaker_path_keeps_the_relevance_floor(make_atlas: Make) -> None:
    atlas = make_atlas(speaker_weight=2.0, relevance_floor=0.3, **COMMON)
    atlas.add_memories(MEMORIES, namespace="a")
    assert atlas.retrieve("quantum chromodynamics lattice", namespace="a", top_k=3, reinforce=False) == []
    assert atlas.build_context("quantum chromodynamics lattice", namespace="a", token_budget=500).memories == ()


def test_build_context_gets_the_speakers_turn(make_atlas: Make) -> None:
    shown = {}
    for weight in (0.0, 2.0):
        atlas = make_atlas(speaker_weight=weight, **COMMON)
        atlas.add_memories(MEMORIES, namespace="a")
        ctx = atlas.build_context(QUERY, namespace="a", token_budget=60, reinforce=False)
        shown[weight] = "swimming with the kids" in ctx.text and ctx.tokens <= 60
    assert shown == {0.0: False, 2.0: True}
