"""Recall's category path: a list question's category words bridged to the members its evidence names.

"What are Kate's hobbies?" names a category; its evidence names members ("I've been painting a
lot"), which neither the question's words nor its vector are near. With ``category_weight`` > 0
a list or count question (`shared_core.formulas.questions.analyze_query`) that names category
words (`shared_core.formulas.categories.category_words`) gets one more candidate generation:

1. the namespace's vocabulary (`VocabularyBook`: every word of three letters or more of its
   memories, filler out, each embedded alone with the atlas's embedder, once);
2. the ``category_terms`` vocabulary words nearest each category word with a cosine of at
   least `FLOOR` (`shared_core.formulas.categories.expansion`; a word with a stem of the query's
   out: the first round's keyword search has it already);
3. one keyword search for them (`Partition.candidates`, the storage contract's own operation,
   so every backend serves it alike; its vector search asks for one hit only), each hit scored
   by its BM25 over the best;
4. recall fuses that ``category`` path with weight ``category_weight``; the query's cosine of
   each new candidate comes back too (for the vector signal and the relevance floor).

The vocabulary is read from the partition's memories (`GraphStore.nodes`) when the number of
memories changed since the last read, and a word is embedded the first time it is seen: a
write costs nothing, the first list question after writes pays for a scan and for its new
words (`benchmarks/README.md`, "Category words and their members").
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Collection
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ..formulas.categories import category_words, expansion
from ..formulas.questions import analyze_query
from ..store.contract import CandidateQuery, Partition
from ..store.terms import index_terms, query_stems
from ..values.config import AtlasConfig
from .decompose import Embed
from .feedback import _FILLER

__all__ = ["FLOOR", "CategoryPath", "Vocabulary", "VocabularyBook", "category_path", "vocabulary_words"]

#: the least cosine between a category word and a vocabulary word for the word to join the search
FLOOR = 0.45
#: whether the search holds the query's own words too (the query expanded) or only the category's
WITH_QUERY = False
_WORD = re.compile(r"[^\W\d_]{3,}", re.UNICODE)


def vocabulary_words(text: str) -> set[str]:
    """The words of ``text`` a category may name: lower case, letters only, three or more, filler out.

    >>> sorted(vocabulary_words("Kate: I've been painting a lot, and 3 pots!"))
    ['kate', 'painting', 'pots']
    """
    return {w for w in (m.lower() for m in _WORD.findall(text)) if w not in _FILLER}


def _unit_rows(rows: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    rows = np.asarray(rows, dtype=np.float32)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return (rows / np.where(norms == 0, np.float32(1.0), norms)).astype(np.float32)


@dataclass(frozen=True, slots=True)
class Vocabulary:
    """A namespace's words and their unit vectors (one row each)."""

    words: tuple[str, ...]
    vectors: npt.NDArray[np.float32]


class VocabularyBook:
    """Per namespace, the vocabulary of its memories, embedded once per word (see the module)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._vectors: dict[str, dict[str, npt.NDArray[np.float32]]] = {}
        self._read: dict[str, tuple[int, Vocabulary]] = {}

    def of(self, part: Partition, embed: Embed) -> Vocabulary:
        """``part``'s vocabulary, read again when its number of memories changed."""
        ns = part.namespace
        count = part.graph.node_count()
        with self._lock:
            seen = self._read.get(ns)
            if seen is not None and seen[0] == count:
                return seen[1]
            words: set[str] = set()
            for node in part.graph.nodes():
                words |= vocabulary_words(node.content)
            known = self._vectors.setdefault(ns, {})
            new = sorted(words - known.keys())
            if new:
                known.update(zip(new, _unit_rows(embed(new)), strict=True))
            ordered = tuple(sorted(words))
            dim = next(iter(known.values())).shape[0] if known else 0
            matrix = np.stack([known[w] for w in ordered]) if ordered else np.zeros((0, dim), np.float32)
            vocab = Vocabulary(ordered, matrix.astype(np.float32))
            self._read[ns] = (count, vocab)
            return vocab

    def drop(self, namespace: str) -> None:
        with self._lock:
            self._vectors.pop(namespace, None)
            self._read.pop(namespace, None)


@dataclass(frozen=True, slots=True)
class CategoryPath:
    """The path's answer: ``signal`` (id -> value in [0, 1], best first), ``cosine`` (the query's
    cosine of the candidates the first round did not have) and ``words`` (the search's words)."""

    signal: dict[str, float]
    cosine: dict[str, float]
    words: dict[str, float]


def category_path(part: Partition, query: str, vector: npt.NDArray[np.float32], first: Collection[str],
                  config: AtlasConfig, book: VocabularyBook, embed: Embed, *, k: int,
                  subset: Collection[str] | None, every_admissible: bool, keyword_session: str | None,
                  allowed: Callable[[str], bool]) -> CategoryPath | None:
    """The category path of one recall (see the module); None when the query is no list or count
    question, names no category word, or no vocabulary word is near one."""
    if config.category_terms <= 0 or not analyze_query(query).aggregate:
        return None
    categories = category_words(query)
    if not categories:
        return None
    vocab = book.of(part, embed)
    if not vocab.words:
        return None
    rows = _unit_rows(embed(categories))
    asked = set(query_stems(query))
    words = expansion(rows, vocab.words, vocab.vectors, terms=config.category_terms, floor=FLOOR,
                      keep=lambda w: asked.isdisjoint(index_terms(w)))
    if not words:
        return None
    found = part.candidates(CandidateQuery(
        text=" ".join([query, *words] if WITH_QUERY else words), vector=vector, k=k, vector_k=1, keyword_k=k,
        keywords=True, keyword_session=keyword_session, subset=subset, every_admissible=every_admissible), allowed)
    hits = found.paths.get("keyword", {})
    top = max(hits.values(), default=0.0)
    if top <= 0:
        return None
    signal = {i: max(s, 0.0) / top for i, s in sorted(hits.items(), key=lambda kv: (-kv[1], kv[0]))}
    cosine = {i: found.cosine[i] for i in signal if i not in first and i in found.cosine}
    return CategoryPath(signal, cosine, words)
