"""The category path's parts: the category words a question names, their expansion over a
vocabulary, the vocabulary's words and the config fields; the path itself is in
tests/contract/test_category_path.py."""

from __future__ import annotations

import numpy as np
import pytest

from shared_core import AtlasConfig, InvalidInputError
from shared_core.engine.categories import VocabularyBook, vocabulary_words
from shared_core.formulas.categories import category_words, expansion
from shared_core.store.memory.backend import InProcessBackend
from shared_core.values.model import MemoryNode


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


def test_the_vocabulary_book_embeds_each_word_once_and_reads_again_after_writes() -> None:
    calls: list[list[str]] = []

    def embed(texts: object) -> np.ndarray:
        batch = list(texts)  # type: ignore[call-overload]
        calls.append(batch)
        return np.ones((len(batch), 4), dtype=np.float32)

    part = InProcessBackend(dim=4).partition("ns", create=True)
    assert part is not None
    part.graph.put_node(MemoryNode(id="a", content="painting pottery", namespace="ns"))
    book = VocabularyBook()
    assert book.of(part, embed).words == ("painting", "pottery")
    assert book.of(part, embed).words == ("painting", "pottery") and len(calls) == 1  # no change: no read
    part.graph.put_node(MemoryNode(id="b", content="pottery and hiking", namespace="ns"))
    assert book.of(part, embed).words == ("hiking", "painting", "pottery")
    assert calls == [["painting", "pottery"], ["hiking"]]  # a word is embedded once
    book.drop("ns")
    book.of(part, embed)
    assert len(calls) == 3


@pytest.mark.parametrize(("field", "value"), [
    ("category_weight", -0.1), ("category_weight", float("nan")), ("category_terms", -1), ("category_terms", 2.5),
    ("category_terms", True),
])
def test_category_fields_are_validated(field: str, value: object) -> None:
    with pytest.raises(InvalidInputError, match=field):
        AtlasConfig(**{field: value})


def test_the_category_path_is_off_by_default() -> None:
    for config in (AtlasConfig(), AtlasConfig.archive(), AtlasConfig.managed()):
        assert config.category_weight == 0.0
