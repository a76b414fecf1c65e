"""A short memory's share of the walk (``AtlasConfig.short_graph_factor`` / ``short_words``):
its body's words counted without the label, the relevance it gets, a longer memory untouched, the
lazy ranking still exact, and the cross-validation grid that measures it."""

from __future__ import annotations

import dataclasses
import random
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from shared_core import AtlasConfig, ElasticMemoryAtlas, InvalidInputError
from shared_core.formulas.chatter import body_words

Make = Callable[..., ElasticMemoryAtlas]
FILLER = ["The weather was grey all afternoon", "We talked about the football results",
          "Lunch was a cheese sandwich", "The train was ten minutes late",
          "She repainted the kitchen walls", "He is learning to juggle three balls"]
TURNS = ["Ann: What did you do at the lake this weekend?", "Bob: swam a lot",
         "Ann: The quarterly report is due on Friday and I worry about the numbers",
         "Bob: my brother visited the lake last summer with his old dog", "Ann: cool",
         "Bob: we went to the museum on Sunday afternoon with the kids", *FILLER]
QUERY = "what did Bob do at the lake this weekend"


@pytest.mark.parametrize(("content", "metadata", "words"), [
    ("Kate: went hiking!", None, 2),
    ("went hiking!", {"speaker": "Kate"}, 2),
    ("kate: at 5 pm", {"speaker": "Kate"}, 3),  # the metadata's speaker, in any case
    ("Caroline Reyes: hi there", None, 2),  # a label of two words
    ("note: buy oat milk", None, 4),  # not a label: a lower-case word, no such speaker
    ("Kate: 👍", None, 0),
    ("", None, 0),
    ("I can't wait - 2 weeks!", None, 6),  # "can", "t": runs of letters; digits count
])
def test_body_words_counts_the_message_without_its_label(content: str, metadata: dict[str, str] | None,
                                                         words: int) -> None:
    assert body_words(content, metadata) == words


@pytest.mark.parametrize("field_value", [{"short_graph_factor": -0.5}, {"short_graph_factor": float("inf")},
                                         {"short_words": -1}, {"short_words": 2.5}])
def test_the_fields_are_checked(field_value: dict[str, float]) -> None:
    with pytest.raises(InvalidInputError):
        AtlasConfig(**field_value)


def test_off_by_default() -> None:
    assert AtlasConfig().short_graph_factor == 1.0 == AtlasConfig.archive().short_graph_factor


def _hits(make_atlas: Make, **config: float) -> dict[str, tuple[float, dict[str, float]]]:
    atlas = make_atlas(similar_top=0, **config)
    atlas.add_memories(TURNS, namespace="u", session_id="s1")
    hits = atlas.retrieve(QUERY, namespace="u", top_k=len(TURNS), reinforce=False, explain=True)
    return {h.node.content: (h.score, dict(h.components)) for h in hits}


def test_a_short_memory_takes_the_factor_of_its_boost_and_a_long_one_is_untouched(make_atlas: Make) -> None:
    plain, lifted = _hits(make_atlas), _hits(make_atlas, short_graph_factor=3.0, short_words=4)
    config = AtlasConfig()
    norm = 1.0 + config.graph_weight * (config.graph_hop_decay + config.graph_hop_decay ** 2)
    short = "Bob: swam a lot"
    assert body_words(short) <= 4 and plain[short][1]["graph"] > 0
    got = lifted[short][1]
    assert got["relevance"] == pytest.approx(min(1.0, (got["fused"] + config.graph_weight * 3.0 * got["graph"]) / norm))
    assert got["relevance"] > plain[short][1]["relevance"]
    assert list(lifted).index(short) < list(plain).index(short)  # it climbs
    for content, (score, components) in plain.items():
        if body_words(content) > 4:  # every longer memory: exactly the same score
            assert lifted[content][0] == score, content
            assert lifted[content][1]["relevance"] == components["relevance"], content


def test_a_factor_below_one_lowers_a_short_memory_only(make_atlas: Make) -> None:
    plain, lowered = _hits(make_atlas), _hits(make_atlas, short_graph_factor=0.0, short_words=4)
    short = "Bob: swam a lot"
    assert lowered[short][1]["relevance"] < plain[short][1]["relevance"]
    assert lowered[short][1]["relevance"] == pytest.approx(lowered[short][1]["fused"] / (1 + 0.45 + 0.45 ** 2))
    for content, (score, _) in plain.items():
        if body_words(content) > 4:
            assert lowered[content][0] == score, content


def test_a_factor_of_one_is_the_walk_as_before(make_atlas: Make) -> None:
    assert _hits(make_atlas) == _hits(make_atlas, short_graph_factor=1.0, short_words=100)


def test_top_k_is_a_prefix_with_the_factor(make_atlas: Make) -> None:
    atlas = make_atlas(similar_top=0, short_graph_factor=2.5, short_words=6)
    atlas.add_memories(TURNS * 3, namespace="u", session_id="s1")
    wide = atlas.retrieve(QUERY, namespace="u", top_k=10, reinforce=False)
    for k in (1, 3, 7):
        assert [h.node.id for h in atlas.retrieve(QUERY, namespace="u", top_k=k, reinforce=False)] == \
            [h.node.id for h in wide[:k]]


@pytest.mark.parametrize("seed", range(16))
def test_lazy_ranking_with_exact_relevances_below_the_bounds(make_atlas: Make, seed: int) -> None:
    """`_rank` with ``exact``: every line holds bounds, a fetched memory's exact relevance may be
    lower; the answer is the top_k of scoring every allowed memory at its exact relevance."""
    from shared_core.engine.recall import RecallRequest, _rank, _scorer

    rng = random.Random(seed)
    atlas = make_atlas()
    atlas.add_memories([f"Note {i}: {text}" for i, text in enumerate(FILLER * 6)], namespace="u", session_id="s")
    part = atlas.backend.partition("u")
    assert part is not None
    for node in list(part.graph.nodes()):
        part.graph.put_node(dataclasses.replace(node, weight=rng.uniform(0.2, 3.0)))
    nodes = list(part.graph.nodes())
    rng.shuffle(nodes)
    cut = rng.randrange(len(nodes) + 1)
    levels = [rng.random() for _ in range(12)]
    true = {n.id: rng.choice(levels) for n in nodes}
    # the lines' values: bounds of the exact relevance (some exact, some loose)
    lined = {i: min(1.0, r + rng.choice([0.0, 0.0, 0.1, 0.6])) for i, r in true.items()}
    first = {n.id: lined[n.id] for n in nodes[:cut]}
    pending = {n.id: lined[n.id] for n in nodes[cut:]}
    barred = {n.id for n in nodes if rng.random() < 0.1}
    asked: list[str] = []

    def exact(node: object, relevance: float) -> float:
        node_id = node.id  # type: ignore[attr-defined]
        asked.append(node_id)
        assert relevance == lined[node_id]
        return true[node_id]

    top_k = rng.choice([1, 3, 10, len(nodes) + 5])
    req = RecallRequest(query="q", vector=atlas.embedder.embed(["q"])[0], now=atlas.clock.now(), top_k=top_k)
    got = _rank(part, first, pending, lambda batch: {i: pending[i] for i in batch}, req, atlas.config,
                lambda i: i not in barred, exact)
    assert len(asked) == len(set(asked))  # once a memory
    score = _scorer(part, req, atlas.config)
    scored = sorted(((f["score"], n.timestamp, n.id) for n in nodes
                     if n.id not in barred and (f := score(n, true[n.id])) is not None),
                    key=lambda t: (-t[0], -t[1], t[2]))
    assert [(s, n.id) for s, n, _ in got] == [(s, i) for s, _, i in scored[:top_k]]


def test_the_short_grid_keys_each_point_apart_but_the_off_ones() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    import _cv

    points = _cv.grid_points(_cv.SHORT_GRID)
    off = [p for p in points if p["short_graph_factor"] == 1.0]
    assert len(points) == 12 and len(off) == 3
    assert len({_cv._cache_key(p) for p in off}) == 1  # the length does not matter while the factor is off
    assert len({_cv._cache_key(p) for p in points}) == 10


def test_the_experiments_walk_reaches_past_a_short_memory_and_still_boosts_it() -> None:
    """``benchmarks/walk_short_pass.py``'s step: the short memory's own edges are added to the
    walker's, strengths multiplied, so the turn past it gets one hop's activation."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from walk_short_pass import through_short

    from shared_core.formulas.scoring import spread_max

    edges = {"a": [("s", 1.0)], "s": [("a", 1.0), ("b", 0.5)], "b": [("s", 0.5), ("c", 1.0)], "c": [("b", 1.0)]}
    plain = spread_max({"a": 1.0}, edges.__getitem__, hops=1, decay=0.5)
    passed = spread_max({"a": 1.0}, through_short(edges.__getitem__, {"s"}.__contains__), hops=1, decay=0.5)
    assert plain == {"s": 0.5}
    assert passed == {"s": 0.5, "b": 0.25}  # b one hop away, through s; s still boosted
    assert through_short(edges.__getitem__, set().__contains__)("a") == [("s", 1.0)]
