"""The fusion and ranking formulas of `shared_core.formulas.scoring`, on small inputs with known answers."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shared_core.formulas.scoring import (
    convex_fusion,
    linear_score,
    max_normalize,
    multiplicative_score,
    normalize_relevance,
    pool_normalize,
    spread_max,
    weighted_rrf,
)


def test_rrf_rewards_agreement_between_paths() -> None:
    fused = weighted_rrf({"vector": ["a", "b", "c"], "keyword": ["b", "d"]}, {"vector": 1.0, "keyword": 1.0})
    assert max(fused, key=fused.__getitem__) == "b"  # second on both beats first on one
    assert fused["b"] > fused["a"]


def test_rrf_ignores_zero_weight_paths_and_counts_duplicates_once() -> None:
    fused = weighted_rrf({"a": ["x", "x", "y"], "b": ["y"]}, {"a": 1.0, "b": 0.0}, k=1.0)
    assert fused == {"x": 0.5, "y": pytest.approx(1 / 3)}


def test_normalized_rrf_is_one_for_a_document_first_everywhere() -> None:
    weights = {"a": 1.0, "b": 0.5}
    fused = weighted_rrf({"a": ["x"], "b": ["x"]}, weights)
    assert normalize_relevance(fused["x"], weights) == pytest.approx(1.0)


def test_pool_normalize_is_scale_free() -> None:
    low = pool_normalize({"a": 0.3, "b": 0.2, "c": 0.1})
    high = pool_normalize({"a": 0.93, "b": 0.92, "c": 0.91})
    assert low == pytest.approx(high)  # the same ranking margins, whatever the embedder's range


def test_pool_normalize_clips_below_the_floor_and_handles_ties() -> None:
    assert pool_normalize({"a": 0.5, "b": 0.1}, floor=0.3) == {"a": 1.0, "b": 0.0}
    assert pool_normalize({"a": 0.5, "b": 0.5}) == {"a": 1.0, "b": 1.0}
    assert pool_normalize({}) == {}


def test_max_normalize() -> None:
    assert max_normalize({"a": 2.0, "b": 1.0}) == {"a": 1.0, "b": 0.5}
    assert max_normalize({"a": 0.0}) == {"a": 0.0}


def test_convex_fusion_keeps_margins_and_divides_by_the_active_paths() -> None:
    fused = convex_fusion({"vector": {"x": 1.0, "y": 0.9}, "keyword": {"y": 1.0}, "time": {}},
                          {"vector": 0.5, "keyword": 0.5, "time": 1.0})
    # "time" found nothing for this query: it does not dilute the others
    assert fused == {"x": pytest.approx(0.5), "y": pytest.approx(0.95)}


@given(st.dictionaries(st.sampled_from("abcdef"), st.floats(0, 1), min_size=1),
       st.dictionaries(st.sampled_from("abcdef"), st.floats(0, 1)),
       st.floats(0.01, 5), st.floats(0.01, 5))
def test_convex_fusion_stays_in_the_unit_interval(vec: dict[str, float], kw: dict[str, float],
                                                   wv: float, wk: float) -> None:
    fused = convex_fusion({"vector": vec, "keyword": kw}, {"vector": wv, "keyword": wk})
    assert set(fused) == set(vec) | set(kw)
    assert all(-1e-9 <= v <= 1 + 1e-9 for v in fused.values())


CHAIN = {  # a - b - c - d, plus e linked weakly to a
    "a": [("b", 1.0), ("e", 0.2)],
    "b": [("a", 1.0), ("c", 1.0)],
    "c": [("b", 1.0), ("d", 1.0)],
    "d": [("c", 1.0)],
    "e": [("a", 0.2)],
}


def test_spread_decays_per_hop_and_respects_strength() -> None:
    boost = spread_max({"a": 1.0}, CHAIN.__getitem__, hops=3, decay=0.5)
    assert boost == {"b": 0.5, "e": pytest.approx(0.1), "c": 0.25, "d": 0.125}


def test_spread_takes_the_best_neighbour_not_the_sum() -> None:
    star = {"hub": [("x", 1.0), ("y", 1.0), ("z", 1.0)], "x": [("hub", 1.0)], "y": [("hub", 1.0)],
            "z": [("hub", 1.0)]}
    boost = spread_max({"x": 0.4, "y": 0.4, "z": 0.4}, star.__getitem__, hops=1, decay=0.5)
    assert boost["hub"] == pytest.approx(0.2)  # three weak neighbours do not add up


def test_spread_never_returns_activation_to_its_origin() -> None:
    boost = spread_max({"a": 1.0}, CHAIN.__getitem__, hops=2, decay=0.5)
    assert "a" not in boost  # a -> b -> a is not a boost of a


def test_spread_hop_limit_and_fanout() -> None:
    assert spread_max({"a": 1.0}, CHAIN.__getitem__, hops=1, decay=0.5) == {"b": 0.5, "e": pytest.approx(0.1)}
    assert spread_max({"a": 1.0}, CHAIN.__getitem__, hops=1, decay=0.5, fanout=1) == {"b": 0.5}
    assert spread_max({"a": 1.0}, CHAIN.__getitem__, hops=0) == {}


def test_multiplicative_score_exponents_switch_factors_off() -> None:
    assert multiplicative_score(0.5, 3.0, 0.1, weight_exponent=0.0, recency_exponent=0.0) == 0.5
    assert multiplicative_score(0.5, 1.0, 0.25, recency_exponent=1.0) == 0.125
    assert multiplicative_score(0.5, 1.0, 1.0, session_factor=0.5) == 0.25


def test_linear_score_is_the_seed_formula() -> None:
    assert linear_score(0.8, 1.5, 0.5) == pytest.approx(0.5 * 0.8 + 0.3 * 0.5 + 0.2 * 0.5)
    assert math.isclose(linear_score(1.0, 99.0, 1.0), 1.0)  # weight capped


def _spread_reference(scores, neighbors, *, hops, decay, fanout, min_activation, beam, walkable):  # type: ignore[no-untyped-def]
    """`spread_max` as first written (key-function sorts, tuple lookups): the faster one must
    agree with it exactly."""
    boost: dict[str, float] = {}
    frontier = {node: (s, node, node) for node, s in scores.items() if s > min_activation}
    for hop in range(hops):
        nxt: dict[str, tuple[float, str, str]] = {}
        for node, (act, origin, came_from) in frontier.items():
            edges = list(neighbors(node))
            if len(edges) > fanout:
                edges = sorted(edges, key=lambda e: (-e[1], e[0]))[:fanout]
            for other, strength in edges:
                if other in (node, origin, came_from):
                    continue
                passed = act * strength * decay
                if passed > min_activation and passed > nxt.get(other, (0.0, "", ""))[0]:
                    nxt[other] = (passed, origin, node)
        for node, (act, _, _) in nxt.items():
            boost[node] = boost.get(node, 0.0) + act
        if hop == hops - 1:
            break
        if beam is not None and (len(nxt) > beam or walkable is not None):
            ranked = sorted(nxt.items(), key=lambda kv: (-kv[1][0], kv[0]))
            frontier = {}
            for node, value in ranked:
                if walkable is None or walkable(node):
                    frontier[node] = value
                    if len(frontier) == beam:
                        break
        else:
            frontier = nxt if walkable is None else {n: v for n, v in nxt.items() if walkable(n)}
    return boost


@pytest.mark.parametrize("seed", range(60))
def test_spread_max_equals_its_reference_on_random_graphs_with_ties(seed: int) -> None:
    import random

    rng = random.Random(seed)
    names = [f"n{i:02d}" for i in range(rng.randint(2, 40))]
    graph: dict[str, list[tuple[str, float]]] = {n: [] for n in names}
    for _ in range(rng.randint(0, 200)):
        a, b = rng.choice(names), rng.choice(names)
        w = rng.choice([1.0, 0.5, 0.45, rng.random()])  # repeated weights: ties to break by id
        graph[a].append((b, w))
        graph[b].append((a, w))
    seeds = {n: rng.choice([1.0, 0.5, rng.random()]) for n in rng.sample(names, rng.randint(1, len(names)))}
    blocked = set(rng.sample(names, rng.randint(0, len(names) // 3)))
    params = {"hops": rng.randint(0, 3), "decay": rng.choice([0.5, 0.45]), "fanout": rng.randint(1, 10),
              "min_activation": rng.choice([0.0, 0.01]), "beam": rng.choice([None, 1, 3, 10]),
              "walkable": rng.choice([None, lambda n: n not in blocked])}
    assert spread_max(seeds, graph.__getitem__, **params) == _spread_reference(seeds, graph.__getitem__, **params)
