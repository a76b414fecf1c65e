"""List and count questions: the query analysis, the MMR order and the diverse context packing."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from shared_core import AtlasConfig, ElasticMemoryAtlas, InvalidInputError
from shared_core.engine.context import context_breadth
from shared_core.formulas.diversity import mmr_order
from shared_core.formulas.questions import PATTERNS, analyze_query

Make = Callable[..., ElasticMemoryAtlas]


@pytest.mark.parametrize(("query", "kind"), [
    ("What are Kate's hobbies?", "list"),
    ("Which cities have both of them been to?", "list"),
    ("How many times has she been to Rome?", "count"),
    ("How often does Melanie go to the beach?", "count"),
    ("What is the total number of pets they own?", "count"),
    ("What kinds of books does Nate read?", "list"),
    ("What kind of books does Caroline have in her library?", "list"),
    ("What video games does Nate play?", "list"),
    ("Which TV series does Tim mention watching?", "list"),
    ("What LGBTQ+ events has Caroline participated in?", "list"),
    ("What has Melanie painted?", "list"),
    ("What animal do both Nate and Joanna like?", "list"),
    ("Can you name some places she lived?", "list"),
    ("What ways has he tried to relax?", "list"),
    ("When did Kate move to Paris?", "single"),
    ("What is the name of Maria's second puppy?", "single"),
    ("What kind of cake did Joanna bake?", "single"),
    ("Why did Joanna name the stuffed dog Tilly?", "single"),
    ("Where is Tim living now?", "single"),
    ("What is this?", "single"),
    ("", "single"),
])
def test_analyze_query_reads_the_shape(query: str, kind: str) -> None:
    shape = analyze_query(query)
    assert shape.kind == kind
    assert shape.aggregate == (kind != "single")
    assert bool(shape.cues) == (kind != "single")


def test_each_pattern_names_the_cue_it_found() -> None:
    assert analyze_query("How many times did they both go?").cues == ("how_many", "times", "both")
    assert {name for name, _, _ in PATTERNS} >= {"how_many", "kinds_of", "both", "what_are"}
    assert analyze_query("HOW   MANY  cats?").kind == "count"  # case and spacing do not matter
    assert analyze_query("What are Kate’s hobbies?").kind == "list"  # a typographic apostrophe


def test_mmr_with_no_diversity_keeps_the_order_by_score() -> None:
    vectors = np.random.default_rng(0).normal(size=(6, 8))
    assert mmr_order([0.9, 0.8, 0.8, 0.5, 0.2, 0.0], vectors, diversity=0.0) == [0, 1, 2, 3, 4, 5]
    assert mmr_order([0.1, 0.5, 0.3], vectors[:3], diversity=0.0) == [1, 2, 0]
    assert mmr_order([], np.zeros((0, 8)), diversity=0.5) == []


def test_mmr_puts_a_distinct_memory_before_near_duplicates() -> None:
    a, b = np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0])
    vectors = np.stack([a, a * 2, a + 0.01 * b, b, 0.5 * a + 0.5 * b])  # 0-2 say the same thing
    order = mmr_order([1.0, 0.97, 0.95, 0.7, 0.6], vectors, diversity=0.4)
    assert order[:2] == [0, 3]
    assert sorted(order) == [0, 1, 2, 3, 4]  # a permutation: nothing is dropped
    assert mmr_order([1.0, 0.97, 0.95, 0.7, 0.6], vectors, diversity=0.05)[:3] == [0, 1, 2]


def test_mmr_refuses_bad_arguments() -> None:
    with pytest.raises(ValueError, match="diversity"):
        mmr_order([1.0], np.ones((1, 2)), diversity=1.5)
    with pytest.raises(ValueError, match="vectors"):
        mmr_order([1.0, 0.5], np.ones((1, 2)), diversity=0.5)


def test_context_breadth_widens_and_diversifies_only_list_questions() -> None:
    config = AtlasConfig(list_candidates=2.0, list_diversity=0.3)
    assert context_breadth("What are Kate's hobbies?", 2000, config) == (200, 0.3)
    assert context_breadth("When did Kate move?", 2000, config) == (100, 0.0)
    assert context_breadth("How many cats?", 10_000, config) == (400, 0.3)  # at most 400
    assert context_breadth("How many cats?", 2000, AtlasConfig(list_candidates=1.0)) == (100, 0.0)


@pytest.mark.parametrize("bad", [{"list_diversity": -0.1}, {"list_diversity": 1.5}, {"list_candidates": 0.5},
                                 {"list_candidates": True}, {"list_diversity": "0.2"}])
def test_the_list_fields_are_checked(bad: dict[str, object]) -> None:
    with pytest.raises(InvalidInputError, match=next(iter(bad))):
        AtlasConfig(**bad)


def _hobbies(atlas: ElasticMemoryAtlas) -> tuple[list[str], str]:
    repeats = [atlas.add_memory(f"Kate: I went hiking again{'!' * i} Hiking is my favourite hobby",
                                namespace="u", session_id=f"s{i}").id for i in range(6)]
    other = atlas.add_memory("Kate: My other hobby is pottery, I made a bowl", namespace="u", session_id="s9").id
    return repeats, other


def test_a_list_question_packs_distinct_evidence_before_near_duplicates(make_atlas: Make) -> None:
    query = "What are Kate's hobbies?"
    shown = {}
    for diversity in (0.0, 0.5):
        # the speaker path off: "Kate" names the speaker of every memory, and its sub-query
        # ("What are hobbies?") would lift the other hobby before any packing (tests/unit/test_subqueries.py)
        atlas = make_atlas(list_diversity=diversity, relevance_floor=None, speaker_weight=0.0)
        repeats, other = _hobbies(atlas)
        ranked = [h.node.id for h in atlas.retrieve(query, namespace="u", top_k=10, reinforce=False)]
        assert ranked.index(other) > 3  # the near-duplicates outrank the other hobby
        line = atlas.count_tokens("Kate: I went hiking again!! Hiking is my favourite hobby")
        ctx = atlas.build_context(query, namespace="u", token_budget=3 * line + 20, reinforce=False)
        assert ctx.tokens <= 3 * line + 20
        shown[diversity] = {m.node.id for m in ctx.memories}
        assert shown[diversity] & set(repeats)
    assert other not in shown[0.0]
    assert other in shown[0.5]


def test_a_single_fact_question_is_packed_by_score(make_atlas: Make) -> None:
    query = "Which hobby does Kate love most, hiking?"
    assert not analyze_query(query).aggregate
    atlas = make_atlas(list_diversity=0.9, list_candidates=3.0, relevance_floor=None)
    _, other = _hobbies(atlas)
    line = atlas.count_tokens("Kate: I went hiking again!! Hiking is my favourite hobby")
    ctx = atlas.build_context(query, namespace="u", token_budget=3 * line + 20, reinforce=False)
    assert other not in {m.node.id for m in ctx.memories}


def test_nothing_under_the_relevance_floor_is_packed_or_reinforced(make_atlas: Make) -> None:
    for floor, expected in ((0.1, 0), (None, 1)):
        atlas = make_atlas(relevance_floor=floor, list_diversity=0.5, list_candidates=2.0)
        node = atlas.add_memory("the user owns a hamster", namespace="u")
        for query in ("quantum chromodynamics lattice", "how many quantum lattices are there?"):
            ctx = atlas.build_context(query, namespace="u", token_budget=200)
            assert len(ctx.memories) == expected
        assert atlas.get(node.id).weight == pytest.approx(node.weight * 1.2 ** (2 * expected))
