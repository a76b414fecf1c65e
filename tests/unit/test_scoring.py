"""The fusion and ranking formulas of `shared_core.scoring`, on small inputs with known answers."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shared_core.scoring import (
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
