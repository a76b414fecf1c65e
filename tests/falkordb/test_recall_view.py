"""A recall's view of its namespace (`FalkorDBBackend.recall_partition`): asked for with the
recall's first request, not in a round trip of its own, and the recall started over when it
turns out stale."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from shared_core import ElasticMemoryAtlas
from shared_core.store.contract import StaleView
from shared_core.store.falkordb import FalkorDBBackend, FalkorPartition
from shared_core.store.falkordb.graph import FalkorGraphStore

from ._probes import round_trips

TEXTS = ["oat milk in the coffee", "the train to Lyon leaves at nine", "oat milk again, always oat milk",
         "a walk by the river", "coffee with oat milk at the station", "the river flooded the station"]


def _hits(atlas: ElasticMemoryAtlas, query: str = "oat milk coffee", **options: Any) -> list[tuple[str, float]]:
    return [(h.node.id, h.score) for h in atlas.retrieve(query, namespace="p", top_k=4, reinforce=False, **options)]


def _stale_views(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The `StaleView`s raised by a partition's confirmation, recorded."""
    raised: list[str] = []
    confirm = FalkorPartition._confirm

    def recorded(self: FalkorPartition, exists: bool, snapshot: Any) -> None:
        try:
            confirm(self, exists, snapshot)
        except StaleView as exc:
            raised.append(str(exc))
            raise

    monkeypatch.setattr(FalkorPartition, "_confirm", recorded)
    return raised


def test_a_recall_asks_whether_its_namespace_exists_in_its_first_request(
        shared_atlas: Callable[..., ElasticMemoryAtlas], monkeypatch: pytest.MonkeyPatch) -> None:
    """After a first recall, the next call's EXISTS and counters ride in its first request: one
    round trip fewer than asking first, the same hits."""
    atlas = shared_atlas()
    atlas.add_memories(TEXTS, namespace="p", session_id="s")
    expected = _hits(atlas)
    backend = atlas.backend
    assert isinstance(backend, FalkorDBBackend)
    with round_trips(monkeypatch) as speculated:
        assert _hits(atlas) == expected
    with monkeypatch.context() as patch:  # the partition asked for first, as before
        patch.setattr(FalkorDBBackend, "recall_partition", FalkorDBBackend.partition)
        with round_trips(monkeypatch) as asked:
            assert _hits(atlas) == expected
    assert asked[0] == "EXISTS" and speculated[0] == "EXISTS"
    assert len(speculated) == len(asked) - 1
    with round_trips(monkeypatch) as seen:  # build_context as well
        atlas.build_context("oat milk coffee", namespace="p", token_budget=200, reinforce=False)
    with monkeypatch.context() as patch:
        patch.setattr(FalkorDBBackend, "recall_partition", FalkorDBBackend.partition)
        with round_trips(monkeypatch) as before:
            atlas.build_context("oat milk coffee", namespace="p", token_budget=200, reinforce=False)
    assert len(seen) == len(before) - 1


def test_a_recall_on_a_stale_view_starts_over_and_ranks_as_a_fresh_process(
        shared_atlas: Callable[..., ElasticMemoryAtlas], monkeypatch: pytest.MonkeyPatch) -> None:
    """Another process supersedes a memory (the superseded count changes: the candidates' statements
    would differ) or forgets one (the counts the recall uses do not change): the hits are a fresh
    process's, and only the first starts over."""
    atlas, other = shared_atlas(), shared_atlas()
    nodes = atlas.add_memories(TEXTS, namespace="p", session_id="s")
    best = _hits(atlas)
    raised = _stale_views(monkeypatch)
    other.update_memory(best[0][0], "soy milk in the coffee now", namespace="p")
    after = _hits(atlas)
    assert after == _hits(shared_atlas()) and best[0][0] not in dict(after)
    assert len(raised) == 1 and "counts" in raised[0]
    other.forget(nodes[4].id, namespace="p")
    again = _hits(atlas)
    assert again == _hits(shared_atlas()) and nodes[4].id not in dict(again)
    assert len(raised) == 1
    context = atlas.build_context("oat milk coffee", namespace="p", token_budget=200, reinforce=False)
    fresh = shared_atlas().build_context("oat milk coffee", namespace="p", token_budget=200, reinforce=False)
    assert context.text == fresh.text and len(raised) == 1


def test_a_namespace_dropped_between_recalls_is_not_made_again(
        shared_atlas: Callable[..., ElasticMemoryAtlas], prefixed_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The recall's first request finds the graph gone: the recall asks again and answers as for
    a namespace that does not exist; nothing is written, so the graph stays gone."""
    atlas = shared_atlas()
    atlas.add_memories(TEXTS, namespace="p", session_id="s")
    assert _hits(atlas)
    raised = _stale_views(monkeypatch)
    FalkorDBBackend.from_url(prefixed_url, dim=64).drop("p")  # another process
    assert atlas.retrieve("oat milk coffee", namespace="p", top_k=4) == []
    assert len(raised) == 1 and "gone" in raised[0]
    context = atlas.build_context("oat milk coffee", namespace="p", session_id="s", token_budget=200)
    assert context.text == "" and context.memories == ()
    assert "p" not in set(atlas.backend.namespaces())
    node = atlas.add_memory("after the drop", namespace="p")
    assert [h.node.id for h in atlas.retrieve("after the drop", namespace="p", top_k=1)] == [node.id]


def test_choosing_seeds_that_carry_a_fact_costs_no_request_of_its_own(
        shared_atlas: Callable[..., ElasticMemoryAtlas], monkeypatch: pytest.MonkeyPatch) -> None:
    """The walk's seeds skip backchannels ("ok", "lol"); the check reads the seeds' nodes that the
    walk's first hop brought, not in a request of its own; a backchannel among the best candidates
    is neither a hit nor a seed (the walk runs again)."""
    atlas = shared_atlas()
    atlas.add_memories(TEXTS, namespace="p", session_id="s")
    _hits(atlas)
    prefetch = FalkorGraphStore.prefetch
    with round_trips(monkeypatch) as seen:
        asked: list[int] = []

        def counted(self: FalkorGraphStore, ids: Sequence[str], *, edges: bool = False) -> None:
            before = len(seen)
            prefetch(self, ids, edges=edges)
            asked.append(len(seen) - before)

        monkeypatch.setattr(FalkorGraphStore, "prefetch", counted)
        _hits(atlas)
    assert len(seen) > 1 and sum(asked) == 0  # the walk's hops read every node the recall needs
    (chatter,) = atlas.add_memories(["oat milk coffee ok"], namespace="p", session_id="s")
    (ok,) = atlas.add_memories(["ok"], namespace="p", session_id="s")
    hits = dict(_hits(atlas, "ok oat milk coffee"))
    assert ok.id not in hits and chatter.id in hits
