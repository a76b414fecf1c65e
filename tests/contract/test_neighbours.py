"""Context windows (`shared_core.engine.neighbours`) on every backend: a packed memory brings its
short session neighbours along, through the storage contract's graph walk; long neighbours, and
those a filter leaves out, stay out; with ``context_neighbours=0`` nothing comes along."""

from __future__ import annotations

from collections.abc import Callable

from shared_core import ElasticMemoryAtlas

Make = Callable[..., ElasticMemoryAtlas]

# no graph walk: the neighbours are no candidates of recall, only the context window brings them
COMMON = {"graph_hops": 0, "similar_top": 0}
TURNS = [("Ann: What did you do this weekend?", "Ann"), ("Bob: Went swimming with the kids", "Bob"),
         ("Ann: Nice!", "Ann"),
         ("Bob: Work was busy, the quarterly report is due on Friday and the new manager wants slides", "Bob"),
         ("Ann: Sounds like a long week ahead", "Ann")]


def _chat(atlas: ElasticMemoryAtlas) -> None:
    atlas.add_memories([{"content": text, "session_id": "s1", "metadata": {"speaker": who}} for text, who in TURNS],
                       namespace="chat")


def _shown(atlas: ElasticMemoryAtlas, query: str, **kwargs: object) -> list[str]:
    ctx = atlas.build_context(query, namespace="chat", token_budget=200, reinforce=False, **kwargs)  # type: ignore[arg-type]
    assert ctx.tokens <= 200
    return [m.content for m in ctx.memories]


def test_short_neighbours_come_along(make_atlas: Make) -> None:
    off, on = make_atlas(context_neighbours=0, **COMMON), make_atlas(context_neighbours=12, **COMMON)
    _chat(off)
    _chat(on)
    assert _shown(off, "swimming") == ["Bob: Went swimming with the kids"]
    # "Ann: Nice!" is a backchannel: the window steps over it, to a turn too long to come along
    assert _shown(on, "swimming") == ["Ann: What did you do this weekend?", "Bob: Went swimming with the kids"]


def test_the_window_steps_over_a_backchannel(make_atlas: Make) -> None:
    """The turn past a backchannel comes along and the backchannel does not; past two in a row
    the step ends."""
    atlas = make_atlas(context_neighbours=12, **COMMON)
    atlas.add_memories([{"content": text, "session_id": "s1"} for text in
                        ["Ann: Where did you go on Sunday?", "Bob: The lake, swimming with the kids", "Ann: lol",
                         "Bob: the water was freezing", "Ann: ok", "Bob: haha", "Ann: brr cold"]], namespace="chat")
    assert _shown(atlas, "swimming") == ["Ann: Where did you go on Sunday?", "Bob: The lake, swimming with the kids",
                                         "Bob: the water was freezing"]
    assert _shown(atlas, "water was freezing") == ["Bob: The lake, swimming with the kids",
                                                   "Bob: the water was freezing"]


def test_a_long_neighbour_stays_out(make_atlas: Make) -> None:
    atlas = make_atlas(context_neighbours=12, **COMMON)
    _chat(atlas)
    shown = _shown(atlas, "Sounds like a long week")
    assert shown == ["Ann: Sounds like a long week ahead"]  # its only neighbour is 20-odd tokens


def test_a_filter_holds_for_the_neighbours(make_atlas: Make) -> None:
    atlas = make_atlas(context_neighbours=12, **COMMON)
    _chat(atlas)
    assert _shown(atlas, "swimming", filters={"speaker": "Bob"}) == ["Bob: Went swimming with the kids"]


def test_neighbour_nodes_are_the_walks_ends(make_atlas: Make) -> None:
    """`Partition.neighbour_nodes`: the memories a one-hop walk over ``before`` edges reaches
    from the given ids, other than those ids, in id order, as nodes; a walk's ``fanout`` keeps
    the strongest edges of each memory, as `Partition.expand` does."""
    from shared_core.engine.neighbours import _session_walk

    atlas = make_atlas(**COMMON)
    _chat(atlas)
    part = atlas.backend.partition("chat")
    assert part is not None
    turns = sorted(part.graph.nodes(), key=lambda n: n.turn)
    middle, last = turns[2].id, turns[4].id
    walk = _session_walk()
    found = part.neighbour_nodes([middle, last], walk)
    assert [n.id for n in found] == sorted([turns[1].id, turns[3].id])  # turn 3 is next to both, once
    assert [n.content for n in sorted(found, key=lambda n: n.turn)] == [TURNS[1][0], TURNS[3][0]]
    assert part.neighbour_nodes([middle, turns[3].id], walk) == sorted([turns[1], turns[4]], key=lambda n: n.id)
    assert part.neighbour_nodes([], walk) == []
    assert part.neighbour_nodes(["no-such-memory"], walk) == []
