"""What a user asked to keep (issue 20, items 10-13), on every backend.

Under the managed preset the write filter holds small talk in working memory; an explicit
importance, a pin or ``keep=True`` must pass it; a held turn's ``wm-`` id must be readable and
forgettable, and refused with a dedicated error where only a stored memory will do; a query
unrelated to every memory must return nothing and change no weight.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from shared_core import ElasticMemoryAtlas, HeldInWorkingMemoryError, MemoryNotFoundError

Make = Callable[..., ElasticMemoryAtlas]
MANAGED: dict[str, Any] = {"write_filter": True, "contradiction_check": True, "compress_every": 200,
                           "prune_below": 0.2}


@pytest.mark.parametrize("kwargs", [{"importance": 10.0}, {"importance": 0.5}, {"pinned": True}, {"keep": True}])
def test_a_write_that_states_intent_passes_the_filter(make_atlas: Make, kwargs: dict[str, Any]) -> None:
    atlas = make_atlas(**MANAGED)
    node = atlas.add_memory("ok thanks!", namespace="u", session_id="s", **kwargs)
    assert node.kind == "memory" and not node.id.startswith("wm-")
    assert len(atlas) == 1 and atlas.get(node.id).content == "ok thanks!"
    assert atlas.working_memory(namespace="u", session_id="s") == []


def test_items_that_state_intent_pass_and_the_others_are_held(make_atlas: Make) -> None:
    atlas = make_atlas(**MANAGED)
    nodes = atlas.add_memories([{"content": "cool", "importance": 2.0}, "cool", {"content": "ok", "keep": True}],
                               namespace="u", session_id="s")
    assert [n.kind for n in nodes] == ["memory", "working", "memory"] and len(atlas) == 2


def test_a_held_turn_can_be_read_forgotten_and_corrected_by_its_id(make_atlas: Make) -> None:
    atlas = make_atlas(**MANAGED)
    held = atlas.add_memory("ok thanks!", namespace="u", session_id="s")
    assert held.kind == "working" and held.id.startswith("wm-")
    assert atlas.get(held.id).content == "ok thanks!" and atlas.get(held.id, namespace="u").kind == "working"
    with pytest.raises(MemoryNotFoundError):
        atlas.get(held.id, namespace="other")
    fixed = atlas.update_memory(held.id, "User owns a dog named Rex", namespace="u")
    assert fixed.kind == "memory" and atlas.get(fixed.id).content == "User owns a dog named Rex"
    assert atlas.working_memory(namespace="u", session_id="s") == [] and len(atlas) == 1
    with pytest.raises(MemoryNotFoundError):
        atlas.get(held.id)
    again = atlas.add_memory("cool", namespace="u", session_id="s")
    atlas.forget(again.id, namespace="u")
    assert atlas.working_memory(namespace="u", session_id="s") == []
    with pytest.raises(MemoryNotFoundError):
        atlas.forget(again.id)


def test_linking_a_held_turn_raises_a_dedicated_error_and_changes_nothing(make_atlas: Make) -> None:
    atlas = make_atlas(**MANAGED)
    fact = atlas.add_memory("User owns a dog", namespace="u", session_id="s", keep=True)
    held = atlas.add_memory("ok thanks!", namespace="u", session_id="s")
    for call in (lambda: atlas.link(held.id, fact.id), lambda: atlas.link(fact.id, held.id),
                 lambda: atlas.edges(held.id), lambda: atlas.history(held.id)):
        with pytest.raises(HeldInWorkingMemoryError, match="working memory"):
            call()
    assert [n.id for n in atlas.working_memory(namespace="u", session_id="s")] == [held.id]
    assert atlas.edges(fact.id) == []


def test_the_transcript_holds_every_turn_in_the_order_given(make_atlas: Make) -> None:
    atlas = make_atlas(**MANAGED)
    texts = ["ok", "My flight to Lisbon is on June 12", "cool", "thanks", "We booked the hotel in Alfama"]
    atlas.add_memories(texts[:2], namespace="u", session_id="s")
    for text in texts[2:]:
        atlas.add_memory(text, namespace="u", session_id="s")
    for _ in range(40):  # a long chat: no held turn falls out of the transcript
        atlas.add_memory("ok", namespace="u", session_id="s")
    transcript = atlas.memories(namespace="u", session_id="s", include_held=True)
    assert [n.content for n in transcript] == texts + ["ok"] * 40
    assert [n.content for n in atlas.memories(namespace="u", session_id="s")] == [texts[1], texts[4]]


def test_an_unrelated_query_returns_nothing_and_changes_no_weight(make_atlas: Make) -> None:
    atlas = make_atlas()
    node = atlas.add_memory("the user owns a hamster", namespace="u")
    for _ in range(3):
        assert atlas.retrieve("quantum chromodynamics lattice", namespace="u") == []
        ctx = atlas.build_context("quantum chromodynamics lattice", namespace="u", token_budget=200)
        assert ctx.memories == ()
    assert atlas.get(node.id).weight == node.weight
    hits = atlas.retrieve("which pet does the user own? a hamster", namespace="u")
    assert [h.node.id for h in hits] == [node.id] and atlas.get(node.id).weight > node.weight
