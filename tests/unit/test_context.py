"""Context blocks: the budget always holds, each style renders as documented, tiers keep priority."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shared_core import ElasticMemoryAtlas, ManualClock, TiktokenCounter
from shared_core.engine.context import _words, build_context_block
from shared_core.values.model import MemoryNode, ScoredMemory

Make = Callable[..., ElasticMemoryAtlas]
COUNTER = TiktokenCounter()
MAY8 = datetime(2023, 5, 8, 13, 56, tzinfo=UTC).timestamp()
DAY = 86_400.0


def hit(i: int, text: str, *, ts: float = MAY8, session: str | None = "s", score: float = 1.0,
        kind: str = "memory", turn: int | None = None, speaker: str | None = None) -> ScoredMemory:
    node = MemoryNode(id=f"m{i}", content=text, namespace="u", session_id=session, timestamp=ts,
                      turn=i if turn is None else turn, kind=kind,
                      metadata={} if speaker is None else {"speaker": speaker})
    return ScoredMemory(node, score, {"relevance": score}, ("vector",))


def block(recalled: list[ScoredMemory], budget: int, style: str = "timeline",
          working: list[ScoredMemory] | None = None, summaries: list[ScoredMemory] | None = None):  # type: ignore[no-untyped-def]
    return build_context_block(working or [], recalled, summaries or [], style=style, budget=budget,
                               count=COUNTER.count)


def test_timeline_groups_days_marks_gaps_and_orders_by_time() -> None:
    hits = [hit(5, "Ben: We saw the aurora!", ts=MAY8 + 20 * DAY),
            hit(1, "Ana: How was the trip?"), hit(2, "Ben: Long, but fun."),
            hit(4, "Ana: Did you see the lights?")]
    ctx = block(hits, 500)
    assert ctx.text.splitlines() == [
        "Memory timeline (oldest first):",
        "[Mon 8 May 2023]",
        "Ana: How was the trip?",
        "Ben: Long, but fun.",
        "…",  # turn 3 is not in the context
        "Ana: Did you see the lights?",
        "[Sun 28 May 2023]",
        "Ben: We saw the aurora!",
    ]
    assert [m.node.id for m in ctx.memories] == ["m1", "m2", "m4", "m5"]


def test_bullet_numbers_recalled_memories_by_score_after_the_current_conversation() -> None:
    working = [hit(9, "User: what about Friday?", session="now")]
    recalled = [hit(1, "Dinner is at 8", score=0.9), hit(2, "Bring the salad", score=0.5, ts=MAY8 + DAY)]
    ctx = block(recalled, 500, "bullet", working=working, summaries=[hit(3, "A dinner party", kind="summary")])
    assert ctx.text.splitlines() == [
        "Current conversation:",
        "- User: what about Friday?",
        "",
        "Relevant memories (most relevant first):",
        "1. [8 May 2023] Dinner is at 8",
        "2. [9 May 2023] Bring the salad",
        "",
        "Summaries:",
        "- [summary] A dinner party",
    ]
    assert [m.node.id for m in ctx.memories] == ["m9", "m1", "m2", "m3"]


def test_narrative_is_one_dated_paragraph() -> None:
    ctx = block([hit(1, "Ana started a pottery class"), hit(2, "She loved it"),
                 hit(7, "Ana sold her first bowl!", ts=MAY8 + 3 * DAY)], 500, "narrative")
    assert "\n" not in ctx.text
    assert ctx.text == ("What I remember: On Mon 8 May 2023, Ana started a pottery class. She loved it. "
                        "On Thu 11 May 2023, Ana sold her first bowl!")


def test_a_speaker_only_in_the_metadata_is_shown_as_a_label_in_every_style() -> None:
    """A chat application stores who said a message beside it: the context shows it, as it shows
    a labelled turn's; a turn that has a label of its own keeps it, and summaries get none."""
    hits = [hit(1, "went hiking  today", speaker="Kate"), hit(2, "Jon: nice!", speaker="Jon"),
            hit(3, "no speaker here")]
    summary = [hit(4, "A hike", kind="summary", speaker="Kate")]
    assert block(hits, 500).text.splitlines()[2:] == ["Kate: went hiking today", "Jon: nice!", "no speaker here"]
    assert block(hits, 500, "bullet", summaries=summary).text.splitlines()[1:5] == [
        "1. [8 May 2023] Kate: went hiking today", "2. [8 May 2023] Jon: nice!",
        "3. [8 May 2023] no speaker here", ""]
    assert block(hits[:1], 500, "narrative").text == "What I remember: On Mon 8 May 2023, Kate: went hiking today."
    assert block([], 500, working=hits[:1]).text.endswith("\nKate: went hiking today")
    for budget in range(0, 40):  # the label is counted: the budget is exact at every size, a cut top memory too
        for style in ("timeline", "bullet", "narrative"):
            ctx = block([hit(1, " ".join(["hiking"] * 30), speaker="Kate"), *hits[1:]], budget, style)
            assert ctx.tokens == COUNTER.count(ctx.text) <= budget
            assert ("m1" in {m.node.id for m in ctx.memories}) == ("Kate: " in ctx.text)


def test_a_top_memory_too_long_for_the_budget_is_cut_with_a_marker() -> None:
    long_text = " ".join(f"word{i}" for i in range(400))
    ctx = block([hit(1, long_text), hit(2, "short one")], 60)
    assert ctx.tokens <= 60 and ctx.text.endswith("…[truncated]")
    assert [m.node.id for m in ctx.memories] == ["m1"] and [m.node.id for m in ctx.dropped] == ["m2"]


def test_nothing_fits_in_a_tiny_budget_and_everything_is_accounted_for() -> None:
    ctx = block([hit(1, "one two three"), hit(2, "four five")], 3)
    assert ctx.text == "" and ctx.tokens == 0 and len(ctx.dropped) == 2
    assert block([], 100).text == ""


def test_lower_tiers_give_way_to_higher_ones() -> None:
    working = [hit(i, f"Current turn number {i} about the plan", session="now") for i in range(1, 6)]
    recalled = [hit(10 + i, f"Old memory {i} about gardening and tomatoes") for i in range(5)]
    ctx = block(recalled, 70, "bullet", working=working)
    kept = {m.node.id for m in ctx.memories}
    assert {m.node.id for m in working} <= kept
    assert ctx.tokens <= 70


# any storable text: lone surrogates and NUL are refused at the door (tests/adversarial/test_input.py)
TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",), exclude_characters="\x00"),
               min_size=1, max_size=300)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts=st.lists(TEXT.filter(str.strip), min_size=1, max_size=12),
       working=st.integers(0, 4), budget=st.integers(0, 400),
       style=st.sampled_from(["timeline", "bullet", "narrative"]),
       days=st.lists(st.integers(0, 40), min_size=12, max_size=12))
def test_property_the_budget_always_holds(texts: list[str], working: int, budget: int, style: str,
                                          days: list[int]) -> None:
    hits = [hit(i, t, ts=MAY8 + days[i] * DAY, score=1.0 / (i + 1), session="s" if i % 3 else "t",
                speaker=("Kate", None, "Mary Ann Lee")[i % 3]) for i, t in enumerate(texts)]
    ctx = block(hits[working:], budget, style, working=hits[:working])
    assert ctx.tokens <= budget
    assert ctx.tokens == COUNTER.count(ctx.text)
    shown = {m.node.id for m in ctx.memories}
    assert shown.isdisjoint(m.node.id for m in ctx.dropped)
    assert shown | {m.node.id for m in ctx.dropped} == {h.node.id for h in hits}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(TEXT.filter(str.strip), min_size=1, max_size=8), budget=st.integers(1, 300),
       style=st.sampled_from(["timeline", "bullet", "narrative"]))
def test_property_the_budget_holds_through_the_atlas(make_atlas: Make, texts: list[str], budget: int,
                                                     style: str) -> None:
    atlas = make_atlas()
    atlas.add_memories(texts, namespace="u", session_id="s")
    ctx = atlas.build_context(texts[0], namespace="u", session_id="s", token_budget=budget, style=style)
    assert ctx.tokens <= budget and ctx.tokens == atlas.count_tokens(ctx.text)


def test_build_context_reinforces_what_it_shows_unless_told_not_to(make_atlas: Make, clock: ManualClock) -> None:
    atlas = make_atlas()
    node = atlas.add_memory("Ivy keeps bees on the roof", namespace="u")
    ctx = atlas.build_context("bees", namespace="u", token_budget=100, reinforce=False)
    assert ctx.memories and atlas.get(node.id).access_count == 0
    ctx = atlas.build_context("bees", namespace="u", token_budget=100)
    assert ctx.memories[0].node.access_count == 1 and atlas.get(node.id).access_count == 1


def test_build_context_puts_the_session_first_and_recalls_the_rest(make_atlas: Make) -> None:
    atlas = make_atlas()
    atlas.add_memory("Jack's sister lives in Lisbon", namespace="u", session_id="old")
    atlas.add_memories(["Let's plan the trip", "Which city first?"], namespace="u", session_id="new")
    ctx = atlas.build_context("Where does Jack's sister live?", namespace="u", session_id="new",
                              token_budget=200, style="bullet", cross_session=True, reinforce=False)
    assert ctx.text.startswith("Current conversation:\n- Let's plan the trip\n- Which city first?")
    assert "Lisbon" in ctx.text and "(from session old)" in ctx.text


@pytest.mark.parametrize("style", ["timeline", "bullet", "narrative"])
def test_every_style_through_the_atlas(make_atlas: Make, style: str) -> None:
    atlas = make_atlas()
    atlas.add_memories(["Kim adopted a cat", "The cat is called Miso"], namespace="u", session_id="s")
    ctx = atlas.build_context("Kim's cat", namespace="u", token_budget=120, style=style, reinforce=False)
    assert ctx.style == style and "Miso" in ctx.text and ctx.tokens == atlas.count_tokens(ctx.text)


SQUEEZED = st.lists(st.text(alphabet=st.characters(exclude_categories=("Cs",)).filter(lambda c: not c.isspace()),
                            min_size=1, max_size=10), max_size=20).map(" ".join)


@given(SQUEEZED)
def test_property_every_word_of_a_line_costs_a_token(line: str) -> None:
    assert COUNTER.count(line) >= _words(line)


def test_a_memory_whose_words_cannot_fit_is_not_counted() -> None:
    counter = TiktokenCounter()
    too_long = " ".join(f"w{i}" for i in range(60))
    ctx = build_context_block([], [hit(1, "Ana: How was the trip?"), hit(2, too_long)], [], style="timeline",
                              budget=40, count=counter.count)
    assert [m.node.id for m in ctx.dropped] == ["m2"]
    misses = counter.cache_info().misses
    counter.count(too_long)
    assert counter.cache_info().misses == misses + 1  # first time it is counted


def test_other_counters_count_every_memory() -> None:
    """A counter under which a line counts fewer tokens than it has words still packs it."""
    words = " ".join(["a"] * 40)
    ctx = build_context_block([], [hit(1, words), hit(2, words)], [], style="timeline", budget=12,
                              count=lambda s: len(s) // 20)
    assert [m.node.id for m in ctx.memories] == ["m1", "m2"]
