"""Versions and contradictions: nothing is overwritten, a contradicted memory is kept and marked,
and a model's malformed answer changes nothing."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared_core import (
    AtlasConfig,
    Contradiction,
    ElasticMemoryAtlas,
    HashingEmbedder,
    LLMContradictionDetector,
    ManualClock,
    MemoryNode,
    Relation,
)
from shared_core.engine.lifecycle.contradiction import parse_contradiction_answer, value_conflict


def _checked(clock: ManualClock, **kwargs: Any) -> ElasticMemoryAtlas:
    return ElasticMemoryAtlas(config=AtlasConfig(contradiction_check=True), embedder=HashingEmbedder(dim=256),
                              clock=clock, **kwargs)


def test_three_versions_chain_with_validity_intervals(atlas: ElasticMemoryAtlas, clock: ManualClock) -> None:
    v1 = atlas.add_memory("Alice works at Acme", namespace="u", session_id="s1")
    t1 = clock.advance(days=10)
    v2 = atlas.update_memory(v1.id, "Alice works at Globex")
    t2 = clock.advance(days=10)
    v3 = atlas.update_memory(v2.id, "Alice works at Initech", session_id="s2")
    chain = atlas.history(v2.id)
    assert [n.id for n in chain] == [v1.id, v2.id, v3.id]
    assert [(n.valid_from, n.valid_to) for n in chain] == [(v1.valid_from, t1), (t1, t2), (t2, None)]
    assert [h.node.id for h in atlas.retrieve("where does Alice work", namespace="u", reinforce=False)] == [v3.id]
    old = atlas.retrieve("where does Alice work", namespace="u", include_history=True, reinforce=False)
    assert {h.node.id for h in old} == {v1.id, v2.id, v3.id}
    assert atlas.count(namespace="u") == 3  # every version is kept


def test_a_contradicted_memory_is_marked_lowered_and_kept(clock: ManualClock) -> None:
    atlas = _checked(clock)
    old = atlas.add_memory("User lives in Paris", namespace="u", session_id="s1", importance=2.0)
    unrelated = atlas.add_memory("User likes chess", namespace="u", session_id="s1")
    clock.advance(days=1)
    new = atlas.add_memory("User lives in Berlin", namespace="u", session_id="s2")
    stale = atlas.get(old.id)
    assert stale.valid_to == clock.now() and stale.weight == pytest.approx(1.0)  # 2.0 x contradiction_factor 0.5
    assert atlas.get(unrelated.id).valid_to is None
    edge = next(e for e in atlas.edges(old.id) if e.relation is Relation.CONTRADICTS)
    assert (edge.source, edge.target) == (new.id, old.id)
    assert edge.metadata["kind"] == "value" and "paris -> berlin" in edge.metadata["reason"]
    event = atlas.events.events(kind="contradict")[-1]
    assert event.node_id == old.id and event.data["by"] == new.id and "paris" in event.reason
    hits = atlas.retrieve("where does the user live", namespace="u", reinforce=False)
    assert old.id not in {h.node.id for h in hits} and new.id in {h.node.id for h in hits}
    history = atlas.retrieve("where does the user live", namespace="u", include_history=True, reinforce=False)
    assert old.id in {h.node.id for h in history}
    assert len(atlas) == 3  # never deleted


@pytest.mark.parametrize(("old", "new"), [
    ("I like tea", "I like coffee"),  # both can hold
    ("User lives in Paris", "User lives in Paris with her cat"),  # added detail
    ("My sister lives in Paris", "My brother lives in Paris"),  # another subject
    ("Room 12 is booked", "Room 14 is booked"),
    ("On Monday I went to the gym", "On Tuesday I went to the gym"),  # two events
])
def test_the_heuristic_leaves_compatible_statements_alone(clock: ManualClock, old: str, new: str) -> None:
    atlas = _checked(clock)
    first = atlas.add_memory(old, namespace="u")
    atlas.add_memory(new, namespace="u")
    assert atlas.get(first.id).valid_to is None
    assert not atlas.events.events(kind="contradict")


@pytest.mark.parametrize(("old", "new", "kind"), [
    ("User prefers oat milk", "User now prefers soy milk", "value"),
    ("The meeting is at 3pm", "The meeting is at 5pm", "date"),
    ("The flight leaves on June 12", "The flight leaves on June 14", "date"),
    ("The budget is 3000 euros", "The budget is 5000 euros", "number"),
    ("I drink coffee", "I don't drink coffee anymore", "negation"),
    ("My favourite colour is blue", "My favourite colour is green", "value"),
])
def test_the_heuristic_flags_a_changed_number_date_negation_or_value(old: str, new: str, kind: str) -> None:
    conflict = value_conflict(new, old)
    assert conflict is not None and conflict.kind == kind


def test_contradictions_never_cross_namespaces(clock: ManualClock) -> None:
    atlas = _checked(clock)
    alice = atlas.add_memory("User lives in Paris", namespace="alice")
    atlas.add_memory("User lives in Berlin", namespace="bob")
    assert atlas.get(alice.id).valid_to is None


class _Chat:
    """A LangChain-like chat model: ``invoke`` returns a message with ``content``."""

    class _Message:
        def __init__(self, content: str) -> None:
            self.content = content

    def __init__(self, answer: str) -> None:
        self.answer, self.prompts = answer, []  # type: ignore[var-annotated]

    def invoke(self, prompt: str) -> _Chat._Message:
        self.prompts.append(prompt)
        return self._Message(self.answer)


class _Completion:
    """A LlamaIndex-like LLM: ``complete`` returns a response with ``text``."""

    class _Response:
        def __init__(self, text: str) -> None:
            self.text = text

    def __init__(self, answer: str) -> None:
        self.answer = answer

    def complete(self, prompt: str) -> _Completion._Response:
        return self._Response(self.answer)


@pytest.mark.parametrize("make_llm", [_Chat, _Completion, lambda a: (lambda prompt: a)],
                         ids=["langchain-like", "llamaindex-like", "callable"])
def test_an_llm_detector_is_asked_and_its_answer_applied(clock: ManualClock, make_llm: Any) -> None:
    llm = make_llm('Sure.\n```json\n{"contradicted": [1], "reason": "she moved"}\n```')
    atlas = _checked(clock, llm=llm)
    old = atlas.add_memory("Alice's office is on the third floor", namespace="u")
    atlas.add_memory("Alice's office is on the fifth floor", namespace="u")
    assert atlas.get(old.id).valid_to is not None
    edge = next(e for e in atlas.edges(old.id) if e.relation is Relation.CONTRADICTS)
    assert edge.metadata == {"kind": "model", "reason": "she moved"}
    if isinstance(llm, _Chat):
        assert "NEW: Alice's office is on the fifth floor" in llm.prompts[-1]
        assert "1. Alice's office is on the third floor" in llm.prompts[-1]


MALFORMED = ["yes", "", "{}", '{"contradicted": "1"}', '{"contradicted": [2]}', '{"contradicted": [0]}',
             '{"contradicted": [true]}', '{"contradicted": [1, 1]}', '{"contradicted": [1], "reason": 3}', "[1]",
             '{"contradicted": [1.0]}', "not json {"]


@pytest.mark.parametrize("answer", MALFORMED)
def test_a_malformed_model_answer_is_logged_and_changes_nothing(clock: ManualClock, answer: str,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    atlas = _checked(clock, llm=lambda prompt: answer)
    old = atlas.add_memory("User lives in Paris", namespace="u")
    before = {n.id: n.as_dict() for n in atlas.memories(namespace="u")}
    with caplog.at_level(logging.WARNING, logger="shared_core"):
        new = atlas.add_memory("User lives in Berlin", namespace="u")
    after = {n.id: n.as_dict() for n in atlas.memories(namespace="u") if n.id != new.id}
    assert after == before and atlas.get(old.id).valid_to is None
    assert not any(e.relation is Relation.CONTRADICTS for e in atlas.edges(old.id))
    assert not atlas.events.events(kind="contradict")
    assert "malformed" in caplog.text


def test_a_failing_model_or_detector_changes_nothing(clock: ManualClock, caplog: pytest.LogCaptureFixture) -> None:
    def broken(prompt: str) -> str:
        raise TimeoutError("model unreachable")

    class Bad:
        def detect(self, new: MemoryNode, candidates: Sequence[MemoryNode]) -> list[Contradiction]:
            return [Contradiction("not-a-candidate", "value", "made up")]

    for kwargs in ({"llm": broken}, {"contradiction_detector": Bad()}):
        atlas = _checked(clock, **kwargs)
        old = atlas.add_memory("User lives in Paris", namespace="u")
        atlas.add_memory("User lives in Berlin", namespace="u")
        assert atlas.get(old.id).valid_to is None and not atlas.events.events(kind="contradict")
    assert "model unreachable" in caplog.text and "malformed" in caplog.text


@settings(max_examples=80, deadline=None)
@given(answer=st.one_of(st.text(max_size=40),
                        st.lists(st.integers(-1, 3), max_size=3).map(lambda xs: json.dumps({"contradicted": xs}))))
def test_property_an_answer_changes_exactly_what_it_validly_says(answer: str) -> None:
    atlas = ElasticMemoryAtlas(config=AtlasConfig(contradiction_check=True, contradiction_similarity=0.0),
                               embedder=HashingEmbedder(dim=64), clock=ManualClock(1_700_000_000.0),
                               llm=lambda prompt: reply[0])
    reply = ['{"contradicted": []}']
    atlas.add_memories(["The meeting is at 3pm", "The meeting room is B12"], namespace="u")
    reply[0] = answer
    before = {n.id: n.as_dict() for n in atlas.memories(namespace="u", include_history=True)}
    new = atlas.add_memory("The meeting is at 5pm", namespace="u")
    after = {n.id: n.as_dict() for n in atlas.memories(namespace="u", include_history=True) if n.id != new.id}
    parsed = parse_contradiction_answer(answer, 2)
    contradicted = {e.node_id for e in atlas.events.events(kind="contradict")}
    if parsed is None or not parsed[0]:
        assert after == before and not contradicted
        assert not any(e.relation is Relation.CONTRADICTS for e in atlas.edges(new.id))
    else:
        assert len(contradicted) == len(parsed[0])
        assert all(after[i]["valid_to"] is not None for i in contradicted)
        assert all(after[i] == before[i] for i in set(before) - contradicted)


def test_a_custom_detector_turns_the_check_on(clock: ManualClock) -> None:
    seen: list[tuple[str, list[str]]] = []

    class Everything:
        def detect(self, new: MemoryNode, candidates: Sequence[MemoryNode]) -> list[Contradiction]:
            seen.append((new.content, [c.content for c in candidates]))
            return [Contradiction(c.id, "custom", "policy: newest wins") for c in candidates]

    custom = ElasticMemoryAtlas(embedder=HashingEmbedder(dim=256), clock=clock,
                                contradiction_detector=Everything())
    first = custom.add_memory("the deploy window is Friday", namespace="u")
    custom.add_memory("the deploy window is Thursday", namespace="u")
    assert seen[-1] == ("the deploy window is Thursday", ["the deploy window is Friday"])
    assert custom.get(first.id).valid_to is not None
    assert isinstance(LLMContradictionDetector(lambda p: ""), LLMContradictionDetector)
