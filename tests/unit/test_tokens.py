"""The default counter: exact cl100k_base counts, with a bounded cache that never changes a count."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shared_core import TiktokenCounter
from shared_core.values.errors import InvalidInputError

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


# Words as the counter's word path sees them: no whitespace inside, any other character (letters,
# digits, marks, punctuation, apostrophes, symbols, emoji, controls that are not whitespace).
WORD = st.text(alphabet=st.characters(exclude_categories=("Cs",)).filter(lambda c: not c.isspace()),
               min_size=1, max_size=12)
TRICKY = st.sampled_from(["'s", "'ll", "'", "123", "1234567", "…", ".", "!?", "\u0301", "e\u0301", "ña", "ȫ",
                          "日本語", "🙂", "<|endoftext|>", "x" * 70, "'S", "a'b", "$", "\x1c", "\u200b"])


@given(st.lists(st.one_of(WORD, TRICKY), min_size=1, max_size=30))
def test_property_counting_word_by_word_is_exact(words: list[str]) -> None:
    text = " ".join(words)
    assert TiktokenCounter(cache_size=16).count(text) == exact(text)
    assert CACHED.count(text) == exact(text) and CACHED.count(text + text) == exact(text + text)


def test_word_counts_are_cached_and_other_texts_are_encoded_whole() -> None:
    counter = TiktokenCounter()
    first, rest = counter._word_caches
    assert counter.count("alpha beta gamma") == exact("alpha beta gamma")
    assert (first.cache_info().currsize, rest.cache_info().currsize) == (1, 2)
    assert counter.count("gamma beta alpha") == exact("gamma beta alpha")  # " beta" was known
    assert rest.cache_info().hits == 1
    for text in ("two  spaces", " leading", "trailing ", "a\n", "\nb", "a \nb", "tab\there", "x" * 70 + " y"):
        before = (first.cache_info().currsize, rest.cache_info().currsize)
        assert counter.count(text) == exact(text)
        assert (first.cache_info().currsize, rest.cache_info().currsize) == before


LINE = st.lists(st.one_of(WORD, TRICKY), min_size=1, max_size=8).map(" ".join)


@given(st.lists(st.tuples(LINE, st.sampled_from(["\n", "\n", "\n\n", "\n\n\n", "\n" * 6])), min_size=1, max_size=12))
def test_property_counting_line_by_line_is_exact(lines: list[tuple[str, str]]) -> None:
    text = "".join(line + end for line, end in lines)
    for candidate in (text, text.rstrip("\n"), "\n" + text):
        assert TiktokenCounter(cache_size=16).count(candidate) == exact(candidate)
        assert CACHED.count(candidate) == exact(candidate)


def test_a_counter_pickles_as_its_settings() -> None:
    counter = TiktokenCounter(cache_size=5, cache_chars=40)
    counter.count("hello world")
    copy = pickle.loads(pickle.dumps(counter))
    assert copy.count("hello world") == 2
    assert copy.cache_info().maxsize == 5 and copy.cache_info().misses == 1 and copy._cache_chars == 40


def test_a_block_is_counted_line_by_line_from_a_cache() -> None:
    counter = TiktokenCounter()
    block = "Memory timeline:\n[Mon 8 May 2023]\nAna: How was the trip?\n\nBen: Long, but fine." * 3
    assert counter.count(block) == exact(block)
    misses = counter._line_cache.cache_info().misses
    assert counter.count(block + "\nOne more line") == exact(block + "\nOne more line")
    assert counter._line_cache.cache_info().misses <= misses + 2  # the known lines were looked up
