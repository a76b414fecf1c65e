"""`shared_core.engine.runs`: which message is bridged across backchannels, what a plan records,
and the bound on the sessions kept."""

from __future__ import annotations

from typing import Any

import pytest

from shared_core import ElasticMemoryAtlas, HashingEmbedder, ManualClock
from shared_core.engine.runs import SessionRuns, step
from shared_core.values.model import Relation

JON, KATE = {"speaker": "Jon"}, {"speaker": "Kate"}


def test_a_reply_after_its_own_backchannel_is_bridged_and_nothing_else() -> None:
    bridge, state = step(None, "q", "How was the weekend?", JON)
    assert bridge is None and state == ("q", frozenset())
    bridge, state = step(state, "b1", "haha", KATE)
    bridge, state = step(state, "b2", "👍", None)  # no speaker: the run goes on
    assert bridge is None and state == ("q", frozenset({"Kate"}))
    assert step(state, "a", "Went hiking.", KATE)[0] == "q"  # Kate sent one of the backchannels
    assert step(state, "a", "Nice, where?", JON)[0] is None  # Jon sent none of them
    assert step(state, "a", "went hiking", None) == (None, None)  # no speaker: nothing to bridge from next
    assert step(("q", frozenset()), "a", "Went hiking.", KATE)[0] is None  # no backchannel between
    assert step(None, "b", "lol", KATE) == (None, None)


def test_a_plan_records_nothing_until_committed_and_sessions_are_bounded() -> None:
    runs = SessionRuns(sessions=2)
    rows = [("q", "s1", "How was the weekend?", JON), ("b", "s1", "lol", KATE)]
    runs.plan().bridges("ns", rows)  # never committed
    assert runs.plan().bridges("ns", [("a", "s1", "Went hiking.", KATE)]) == [None]
    plan = runs.plan()
    plan.bridges("ns", rows)
    plan.commit()
    assert runs.plan().bridges("ns", [("a", "s1", "Went hiking.", KATE)]) == ["q"]
    assert runs.plan().bridges("other", [("a", "s1", "Went hiking.", KATE)]) == [None]  # per namespace
    for session in ("s2", "s3"):  # two later sessions push s1 out
        plan = runs.plan()
        plan.bridges("ns", [(f"x-{session}", session, "Hi there Kate", JON)])
        plan.commit()
    assert runs.plan().bridges("ns", [("a", "s1", "Went hiking.", KATE)]) == [None]


def test_a_failed_write_records_no_run(monkeypatch: pytest.MonkeyPatch) -> None:
    atlas = ElasticMemoryAtlas(embedder=HashingEmbedder(dim=64), clock=ManualClock(1_700_000_000.0))
    question = atlas.add_memory("How was the weekend?", namespace="a", session_id="s1", metadata=JON)
    atlas.add_memory("lol", namespace="a", session_id="s1", metadata=KATE)
    part: Any = atlas._state.backend.partition("a")

    def broken(self: object, batch: object) -> None:
        raise OSError("disk full")

    with monkeypatch.context() as patch:
        patch.setattr(type(part), "write_batch", broken)
        with pytest.raises(OSError):  # recorded, this message would end the run
            atlas.add_memory("Jon: and Sunday?", namespace="a", session_id="s1")
    answer = atlas.add_memory("Went hiking.", namespace="a", session_id="s1", metadata=KATE)
    assert (question.id, answer.id) in [(e.source, e.target) for e in atlas.edges(answer.id)
                                        if e.relation is Relation.BEFORE]
