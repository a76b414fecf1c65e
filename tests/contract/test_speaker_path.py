"""Recall's speaker path (query decomposition by speaker, `shared_core.engine.decompose`) on every
backend: a named speaker's own turn that the question's name buries under turns *addressing*
that speaker is found through the speaker path and not without it; a query that names no
speaker, a short recall and an unrelated query are left as they were."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

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


# A conversation of two speakers, and questions that name one, both, a non-speaker or nobody.
CONVERSATION = [
    "Caroline: I went to the LGBTQ support group yesterday and it was powerful",
    "Melanie: that sounds amazing, I painted a lake sunrise last week",
    "Caroline: I am researching adoption agencies, I want to give kids a loving home",
    "Melanie: we went camping with the kids at the beach, they loved the marshmallows",
    "Caroline: my friends from school threw me a surprise party",
    "Melanie: I signed up for a pottery class, clay is so calming",
    "Caroline: I gave a talk at a school about my transition",
    "Melanie: swimming with the kids is our weekend fun",
    "Caroline: I am going to a pride parade in Boston next month",
    "Melanie: my husband and I celebrated our anniversary in Paris",
    "Caroline: counseling is the career I want, mental health matters to me",
    "Melanie: I read a book about self care, running helps me think",
    "Caroline: hey Melanie, how are the kids? Melanie, you are a great mom",
    "Melanie: thanks Caroline! Caroline, your courage inspires me",
]
QUESTIONS = [
    "What does Melanie do for fun?", "Where has Caroline been going?", "What did Melanie paint?",
    "What career does Caroline want?", "What do Caroline and Melanie both like?",
    "When did Melanie go to Paris?", "What happened in Boston?", "Who likes pottery?",
]


def _recorded(atlas: ElasticMemoryAtlas, monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The texts of each model call the atlas makes from now on."""
    calls: list[list[str]] = []
    embed = atlas.embedder.embed

    def recording(texts: Sequence[str]) -> Any:
        calls.append(list(texts))
        return embed(texts)

    monkeypatch.setattr(atlas.embedder, "embed", recording)
    return calls


def _forget(atlas: ElasticMemoryAtlas) -> None:
    """The atlas knows no speaker of namespace "a", and does not ask the store for them (its
    `SpeakerBook` counts as filled: `EngineState.known_speakers`)."""
    atlas._state.speakers.drop("a")
    atlas._state.speakers.fill("a")


def _answers(atlas: ElasticMemoryAtlas, query: str, *, forget_speakers: bool = False) -> tuple[Any, ...]:
    """retrieve's and build_context's answers; with ``forget_speakers`` the atlas knows no speaker
    of the namespace before each (the sub-query embedded under the lock, as before the guess)."""
    if forget_speakers:
        _forget(atlas)
    hits = atlas.retrieve(query, namespace="a", top_k=5, reinforce=False, explain=True)
    if forget_speakers:
        _forget(atlas)
    ctx = atlas.build_context(query, namespace="a", token_budget=120, reinforce=False)
    return ([(h.node.id, h.score, h.components, h.paths) for h in hits], ctx.text,
            [m.node.id for m in ctx.memories])


def test_the_sub_query_is_embedded_in_the_querys_model_call(make_atlas: Make, monkeypatch: pytest.MonkeyPatch) -> None:
    atlas = make_atlas(speaker_weight=2.0, **COMMON)
    target = atlas.add_memories(MEMORIES, namespace="a")[-1]
    calls = _recorded(atlas, monkeypatch)
    hits = atlas.retrieve(QUERY, namespace="a", top_k=3, reinforce=False)
    assert target.id in _ids(hits)
    assert calls == [[QUERY, "What does do for fun?"]]  # one call, before the lock


def test_results_are_those_of_the_sub_query_embedded_under_the_lock(make_atlas: Make,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    atlas = make_atlas(speaker_weight=1.0, speaker_min_k=0)
    atlas.add_memories(CONVERSATION, namespace="a")
    calls = _recorded(atlas, monkeypatch)
    spoken = 0
    for query in QUESTIONS:
        del calls[:]
        unknown = _answers(atlas, query, forget_speakers=True)
        before = list(calls)
        _forget(atlas)
        atlas.add_memories(["Caroline: hi", "Melanie: hi"], namespace="b")  # another namespace teaches nothing
        assert not atlas._state.speakers.known("a")
        atlas.retrieve(query, namespace="a", top_k=1, reinforce=False)  # a recall learns the speakers it finds
        del calls[:]
        assert _answers(atlas, query) == unknown, query
        if "speaker" in str(unknown[0]):  # two model calls each before, one now
            spoken += 1
            assert len(before) == 4 and calls == [[query, before[1][0]]] * 2, (query, before, calls)
        else:
            assert calls == [[query]] * 2 or calls == before, (query, before, calls)
    assert spoken >= 4  # the speaker path ran for most questions: the comparison is not vacuous


def test_a_speaker_written_while_the_query_is_embedded_falls_back(make_atlas: Make,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    late = ["Gina: dancing at the studio is my fun", "Gina: I opened a dance studio downtown"]
    query = "What do Melanie and Gina do for fun?"
    reference = make_atlas(speaker_weight=1.0, speaker_min_k=0)
    vectors = reference.embedder.embed(late)
    reference.add_memories(CONVERSATION, namespace="a")
    reference.add_memories([{"content": c, "embedding": v} for c, v in zip(late, vectors, strict=True)],
                           namespace="a")
    _forget(reference)  # the sub-query embedded under the lock
    expected = reference.retrieve(query, namespace="a", top_k=5, reinforce=False)

    atlas = make_atlas(speaker_weight=1.0, speaker_min_k=0)
    atlas.add_memories(CONVERSATION, namespace="a")
    embed = atlas.embedder.embed
    calls: list[list[str]] = []

    def writing(texts: Sequence[str]) -> Any:  # a write lands between the guess and the lock
        calls.append(list(texts))
        if len(calls) == 1:
            atlas.add_memories([{"content": c, "embedding": v} for c, v in zip(late, vectors, strict=True)],
                               namespace="a")
        return embed(texts)

    monkeypatch.setattr(atlas.embedder, "embed", writing)
    got = atlas.retrieve(query, namespace="a", top_k=5, reinforce=False)
    assert calls == [[query, "What do and Gina do for fun?"], ["What do do for fun?"]]  # guessed, then fell back
    assert [(h.node.content, h.score, h.paths) for h in got] == [(h.node.content, h.score, h.paths) for h in expected]
    assert "speaker" in str([h.paths for h in got])


def test_a_forgotten_speaker_costs_a_call_not_a_result(make_atlas: Make, monkeypatch: pytest.MonkeyPatch) -> None:
    atlas = make_atlas(speaker_weight=1.0, speaker_min_k=0)
    atlas.add_memories(CONVERSATION, namespace="a")
    gone = atlas.add_memory("Paris: bonjour", namespace="a")
    atlas.forget(gone.id, namespace="a")
    assert "Paris" in atlas._state.speakers.known("a")  # a cache: it still guesses Paris is a speaker
    query = "When did Melanie go to Paris?"
    calls = _recorded(atlas, monkeypatch)
    guessed = _answers(atlas, query)
    assert calls[:2] == [[query, "When did go to?"], ["When did go to Paris?"]]  # the wrong guess, then the right
    atlas._state.speakers.drop("a")
    assert _answers(atlas, query) == guessed


def test_an_emptied_namespace_forgets_its_speakers(make_atlas: Make) -> None:
    atlas = make_atlas()
    only = atlas.add_memory("Gina: I opened a dance studio", namespace="a")
    assert atlas._state.speakers.known("a") == {"Gina"}
    atlas.forget(only.id, namespace="a")
    kept = atlas.backend.keeps_partitions_in_process()  # a server keeps an empty namespace, and its speakers
    assert atlas._state.speakers.known("a") == (frozenset() if kept else {"Gina"})
