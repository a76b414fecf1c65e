"""The helpers of ``benchmarks/category_miss.py`` (`_categories`): the category words a question
names, their expansion over a vocabulary and the vocabulary's words (the category path built on
them was measured and not kept: benchmarks/README.md, "Category words and their members
(session 23)")."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from _categories import category_words, expansion, vocabulary_words


@pytest.mark.parametrize(("query", "words"), [
    ("What are Kate's hobbies?", ["hobbies"]),
    ("What activities has Melanie done with her family?", ["activities"]),
    ("What kind of art does Caroline make?", ["art"]),
    ("What types of pottery have Melanie and her kids made?", ["pottery", "kids"]),
    ("Which cities has Jon visited?", ["cities"]),
    ("How many times has Joanna been to Paris?", []),  # "times" names no category, "Paris" is a name
    ("What did Caroline research?", []),
    ("what pets does nate have", ["pets"]),  # lower case: no capital tells a name, a plural still counts
])
def test_category_words(query: str, words: list[str]) -> None:
    assert category_words(query) == words


def test_expansion_keeps_the_nearest_words_above_the_floor_per_category_word() -> None:
    cats = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]], dtype=np.float32)
    words = ["dog", "cat", "car", "violin", "pets"]
    vocab = np.array([[0.9, 0.436, 0.0], [0.8, 0.6, 0.0], [0.3, 0.954, 0.0], [0.0, 0.6, 0.8], [1.0, 0.0, 0.0]],
                     dtype=np.float32)
    out = expansion(cats, words, vocab, terms=2, floor=0.5, keep=lambda w: w != "pets")
    assert out == pytest.approx({"dog": 0.9, "cat": 0.8, "violin": 0.8})
    assert next(iter(out)) == "dog"  # best first
    assert expansion(cats, words, vocab, terms=1, floor=0.85) == {"pets": 1.0}
    assert expansion(cats, words, vocab, terms=0, floor=0.0) == {}


def test_vocabulary_words_leave_filler_and_short_words_out() -> None:
    assert vocabulary_words("Oh, I've been painting 3 pots, so cool!") == {"painting", "pots"}
