"""The default counter: exact cl100k_base counts, with a bounded cache that never changes a count."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shared_core import TiktokenCounter
from shared_core.errors import InvalidInputError

UNCACHED = TiktokenCounter(cache_size=0)


def exact(text: str) -> int:
    return len(UNCACHED.encode(text))


def test_counts_are_tiktokens_and_the_cache_answers_repeats() -> None:
    counter = TiktokenCounter(cache_size=4)
    assert counter.count("hello world") == 2 == exact("hello world")
    assert counter.count("hello world") == 2
    info = counter.cache_info()
    assert (info.hits, info.misses, info.currsize) == (1, 1, 1)


def test_the_cache_is_bounded_and_long_texts_stay_out_of_it() -> None:
    counter = TiktokenCounter(cache_size=8, cache_chars=50)
    texts = [f"memory number {i} about the garden" for i in range(100)]
    assert [counter.count(t) for t in texts] == [exact(t) for t in texts]
    assert counter.cache_info().currsize == 8
    assert [counter.count(t) for t in reversed(texts)] == [exact(t) for t in reversed(texts)]
    long_text = "word " * 40
    before = counter.cache_info()
    assert counter.count(long_text) == exact(long_text)
    after = counter.cache_info()
    assert (after.hits, after.misses) == (before.hits, before.misses)


def test_a_zero_cache_still_counts() -> None:
    assert UNCACHED.count("hello world") == 2 and UNCACHED.cache_info().currsize == 0


@pytest.mark.parametrize("bad", [-1, 1.5, True, "8"])
def test_cache_settings_are_checked(bad: object) -> None:
    with pytest.raises(InvalidInputError, match="cache_size"):
        TiktokenCounter(cache_size=bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="cache_chars"):
        TiktokenCounter(cache_chars=bad)  # type: ignore[arg-type]


CACHED = TiktokenCounter(cache_size=64, cache_chars=80)


@given(st.lists(st.text(max_size=120), min_size=1, max_size=20))
def test_property_cached_counts_equal_uncached_counts(texts: list[str]) -> None:
    for text in texts + texts[::-1]:
        assert CACHED.count(text) == exact(text)
    assert CACHED.cache_info().currsize <= 64
