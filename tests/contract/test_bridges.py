"""Bridges across backchannels (`shared_core.engine.runs`) on every backend: a chat message gets one
more ``before`` edge from the session's previous message with content when only backchannels sit
between them and its own speaker sent one of them ("How was the weekend?" / "lol" / "Went
hiking"), in one batch and across calls; no other message gets one; `forget` and `end_session`
drop the session's run; a store draws none from a memory it does not hold; the edges stay after a
reopen (a save file loaded, the chroma directory opened again, the FalkorDB prefix connected to again).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from shared_core import ElasticMemoryAtlas, HashingEmbedder
from shared_core.store.contract import WriteBatch
from shared_core.values.model import MemoryNode, Relation

from .test_speaker_reopen import reopen  # noqa: F401  (the fixture)

Make = Callable[..., ElasticMemoryAtlas]
KATE, JON = {"speaker": "Kate"}, {"speaker": "Jon"}


def _before(atlas: ElasticMemoryAtlas, nodes: list[MemoryNode]) -> set[tuple[str, str]]:
    """The ``before`` edges among ``nodes``, as (source content, target content)."""
    text = {n.id: n.content for n in nodes}
    return {(text[e.source], text[e.target]) for n in nodes for e in atlas.edges(n.id, namespace="a")
            if e.relation is Relation.BEFORE and e.source in text and e.target in text}


def _chat(atlas: ElasticMemoryAtlas) -> list[MemoryNode]:
    first = atlas.add_memories([{"content": "How was the weekend?", "metadata": JON},
                                {"content": "lol", "metadata": KATE},
                                {"content": "Went hiking Saturday.", "metadata": KATE},  # bridged to the question
                                {"content": "haha nice", "metadata": JON},
                                {"content": "The ridge trail, 12 miles.", "metadata": KATE},  # Jon's "haha" only
                                {"content": "Jon: which ridge?"}], namespace="a", session_id="s1")
    later = [atlas.add_memory("ok", namespace="a", session_id="s1", metadata=KATE),  # later calls
             atlas.add_memory("omg", namespace="a", session_id="s1", metadata=JON),
             atlas.add_memory("Kate: the north one", namespace="a", session_id="s1"),
             atlas.add_memory("lol", namespace="a", session_id="s1", metadata=JON),
             atlas.add_memory("Jon: long walk", namespace="a", session_id="s1"),
             atlas.add_memory("The north one.", namespace="a", session_id="s2", metadata=KATE)]
    return [*first, *later]


CHAIN = {("How was the weekend?", "lol"), ("lol", "Went hiking Saturday."), ("Went hiking Saturday.", "haha nice"),
         ("haha nice", "The ridge trail, 12 miles."), ("The ridge trail, 12 miles.", "Jon: which ridge?"),
         ("Jon: which ridge?", "ok"), ("ok", "omg"), ("omg", "Kate: the north one"), ("Kate: the north one", "lol"),
         ("lol", "Jon: long walk")}
BRIDGES = {("How was the weekend?", "Went hiking Saturday."), ("Jon: which ridge?", "Kate: the north one"),
           ("Kate: the north one", "Jon: long walk")}


def test_a_message_is_bridged_to_its_speakers_previous_one_across_backchannels(make_atlas: Make) -> None:
    atlas = make_atlas()
    nodes = _chat(atlas)
    assert _before(atlas, nodes) == CHAIN | BRIDGES


def test_no_bridge_without_session_order(make_atlas: Make) -> None:
    atlas = make_atlas(link_temporal=False)
    assert _before(atlas, _chat(atlas)) == set()


def test_forget_and_end_session_drop_the_sessions_run(make_atlas: Make) -> None:
    atlas = make_atlas()
    old = atlas.add_memory("Kate: hi", namespace="a", session_id="s1")
    question = atlas.add_memory("How was the weekend?", namespace="a", session_id="s1", metadata=JON)
    lol = atlas.add_memory("lol", namespace="a", session_id="s1", metadata=KATE)
    atlas.forget(old.id)
    answer = atlas.add_memory("Went hiking.", namespace="a", session_id="s1", metadata=KATE)
    assert _before(atlas, [question, lol, answer]) == {("How was the weekend?", "lol"), ("lol", "Went hiking.")}
    question = atlas.add_memory("And Sunday?", namespace="a", session_id="s1", metadata=JON)
    lol = atlas.add_memory("haha", namespace="a", session_id="s1", metadata=KATE)
    atlas.end_session("s1", namespace="a", mode="fade")
    answer = atlas.add_memory("Slept all day.", namespace="a", session_id="s1", metadata=KATE)
    assert _before(atlas, [question, lol, answer]) == {("And Sunday?", "haha"), ("haha", "Slept all day.")}
    lol = atlas.add_memory("lol", namespace="a", session_id="s1", metadata=JON)
    again = atlas.add_memory("Jon: I slept till noon", namespace="a", session_id="s1")  # the run goes on after the end
    assert ("Slept all day.", "Jon: I slept till noon") in _before(atlas, [answer, lol, again])


def test_a_store_draws_no_bridge_from_a_memory_it_does_not_hold(make_atlas: Make) -> None:
    atlas = make_atlas()
    held = atlas.add_memory("Kate: went hiking", namespace="a", session_id="s1")
    part = atlas._state.backend.partition("a")
    assert part is not None
    vectors = HashingEmbedder(dim=256).embed(["Kate: the ridge"])

    def build(first: int) -> list[MemoryNode]:
        return [MemoryNode(id="new-1", content="Kate: the ridge", namespace="a", session_id="s1", turn=first,
                           accessed_turn=first)]

    part.write_batch(WriteBatch(build=build, vectors=np.asarray(vectors, dtype=np.float32), similar_top=0,
                                min_similarity=1.0, link_temporal=True, links=[()], created_at=0.0,
                                bridges=["missing-id"]))
    edges = {(e.source, e.target, e.relation) for e in part.graph.edges("new-1")}
    assert edges == {(held.id, "new-1", Relation.BEFORE)}


def test_bridges_stay_after_a_reopen(make_atlas: Make, reopen: Callable[..., Any]) -> None:  # noqa: F811
    atlas = make_atlas()
    nodes = _chat(atlas)
    again = reopen(atlas)
    assert _before(again, nodes) == CHAIN | BRIDGES
