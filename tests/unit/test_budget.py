"""Greedy packing and truncation to a token count."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from shared_core import TiktokenCounter
from shared_core.formulas.budget import pack_greedy, truncate_to_tokens

COUNT = TiktokenCounter().count


def test_pack_greedy_is_first_fit_by_priority() -> None:
    taken, skipped = pack_greedy(["aaaa", "bbbbbbb", "cc", "d"], len, 7, overhead=1)
    assert taken == ["aaaa", "cc"] and skipped == ["bbbbbbb", "d"]


@given(st.lists(st.integers(0, 50)), st.integers(0, 200), st.integers(0, 20))
def test_property_pack_greedy_never_exceeds_the_budget(costs: list[int], budget: int, overhead: int) -> None:
    items = list(enumerate(costs))
    taken, skipped = pack_greedy(items, lambda it: it[1], budget, overhead=overhead)
    assert not taken or overhead + sum(c for _, c in taken) <= budget
    assert sorted(taken + skipped) == items  # nothing lost, nothing invented


def test_truncate_keeps_short_text_and_cuts_long_text_at_a_word() -> None:
    assert truncate_to_tokens("short text", 10, COUNT) == "short text"
    cut = truncate_to_tokens("alpha beta gamma delta epsilon zeta eta theta", 6, COUNT, marker=" [cut]")
    assert cut.endswith(" [cut]") and COUNT(cut) <= 6
    assert "alpha beta gamma delta epsilon zeta eta theta".startswith(cut.removesuffix(" [cut]"))
    assert truncate_to_tokens("anything at all", 1, COUNT, marker=" …[truncated]") == ""


@given(st.text(min_size=1, max_size=400), st.integers(0, 60))
def test_property_truncation_fits_and_is_a_prefix(text: str, limit: int) -> None:
    marker = " …[truncated]"
    cut = truncate_to_tokens(text, limit, COUNT, marker=marker)
    assert COUNT(cut) <= limit
    if cut and cut != text:
        assert text.startswith(cut.removesuffix(marker).removesuffix(marker.strip()))
