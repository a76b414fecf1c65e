"""Context windows (`shared_core.engine.neighbours`): what comes along with a packed memory, the
exact budget, admission (``as_of``, ``exclude_ids``), no reinforcement, and the config field."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from shared_core import AtlasConfig, ElasticMemoryAtlas, InvalidInputError, ManualClock, TiktokenCounter
from shared_core.engine.context import build_context_block
from shared_core.values.model import MemoryNode, ScoredMemory

Make = Callable[..., ElasticMemoryAtlas]
NO_WALK = {"graph_hops": 0, "similar_top": 0}


def _chat(atlas: ElasticMemoryAtlas, n: int = 40) -> list[MemoryNode]:
    """A chat of short turns in two interleaved sessions, one word of a topic per exchange."""
    topics = ["swimming", "chess", "violin", "gardening", "pottery", "climbing", "baking", "cycling"]
    specs = []
    for i in range(n):
        who = "Ann" if i % 2 == 0 else "Bob"
        text = f"{who}: and then?" if i % 4 else f"{who}: we talked about {topics[(i // 4) % len(topics)]}"
        specs.append({"content": text, "session_id": f"s{(i // 10) % 2}"})
    return atlas.add_memories(specs, namespace="chat")


def test_the_budget_stays_exact_and_a_neighbour_never_comes_alone(make_atlas: Make) -> None:
    atlas = make_atlas(context_neighbours=8, **NO_WALK)
    written = _chat(atlas)
    order = {n.id: [o.id for o in written if o.session_id == n.session_id].index(n.id) for n in written}
    counter = TiktokenCounter()
    neighbours_seen = 0
    for budget in range(8, 160, 7):
        ctx = atlas.build_context("swimming chess violin pottery", namespace="chat", token_budget=budget,
                                  reinforce=False)
        assert ctx.tokens <= budget and counter.count(ctx.text) == ctx.tokens
        leads = [m.node for m in ctx.memories if m.paths != ("neighbour",)]
        for m in ctx.memories:
            if m.paths == ("neighbour",):  # next to a recalled memory of its session, in the context
                neighbours_seen += 1
                assert any(o.session_id == m.node.session_id and abs(order[o.id] - order[m.node.id]) == 1
                           for o in leads)
    assert neighbours_seen > 0


def test_packing_skips_a_companion_whose_memory_was_not_packed() -> None:
    counter = TiktokenCounter()
    long_hit = ScoredMemory(MemoryNode(id="a", namespace="n", content="word " * 300, turn=1), 1.0)
    short_hit = ScoredMemory(MemoryNode(id="c", namespace="n", content="a short one", turn=5), 0.5)
    companion = ScoredMemory(MemoryNode(id="b", namespace="n", content="ok", turn=2), 1.0, paths=("neighbour",))
    ctx = build_context_block([], [short_hit, long_hit, companion], [], style="timeline", budget=40,
                              count=counter.count, companions={"b": "a"})
    assert [m.node.id for m in ctx.memories] == ["c"] and "b" in {m.node.id for m in ctx.dropped}
    ctx = build_context_block([], [short_hit, companion], [], style="timeline", budget=40, count=counter.count,
                              companions={"b": "c"})  # after its memory: packed
    assert {m.node.id for m in ctx.memories} == {"b", "c"}


def test_neighbours_are_admitted_as_recall_admits(make_atlas: Make, clock: ManualClock) -> None:
    atlas = make_atlas(context_neighbours=12, **NO_WALK)
    first = atlas.add_memories([{"content": "Ann: What did you do this weekend?", "session_id": "s"},
                                {"content": "Bob: Went swimming with the kids", "session_id": "s"}],
                               namespace="chat")
    start = clock.now()
    clock.advance(3600)
    later = atlas.add_memory("Ann: Which pool?", namespace="chat", session_id="s")

    def shown(**kwargs: object) -> set[str]:
        ctx = atlas.build_context("swimming", namespace="chat", token_budget=100, reinforce=False, **kwargs)  # type: ignore[arg-type]
        return {m.content for m in ctx.memories}

    assert shown() == {first[0].content, first[1].content, later.content}
    assert shown(as_of=start) == {first[0].content, first[1].content}  # not yet written then
    assert shown(exclude_ids=[first[0].id]) == {first[1].content, later.content}


def test_neighbours_are_not_reinforced(make_atlas: Make) -> None:
    atlas = make_atlas(context_neighbours=12, **NO_WALK)
    question, answer = atlas.add_memories([{"content": "Ann: What did you do this weekend?", "session_id": "s"},
                                           {"content": "Bob: Went swimming with the kids", "session_id": "s"}],
                                          namespace="chat")
    ctx = atlas.build_context("swimming", namespace="chat", token_budget=100)
    weights = {m.node.id: m.node.weight for m in ctx.memories}
    assert weights[answer.id] > answer.weight and weights[question.id] == question.weight


@pytest.mark.parametrize("bad", [-1, 1.5, True, "8"])
def test_the_field_is_checked(bad: object) -> None:
    with pytest.raises(InvalidInputError, match="context_neighbours"):
        AtlasConfig(context_neighbours=bad)  # type: ignore[arg-type]
    assert AtlasConfig().context_neighbours == 12 and AtlasConfig.archive().context_neighbours == 12
