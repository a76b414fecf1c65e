"""Recall's second round: pseudo-relevance feedback, a path of candidates the query alone misses.

Evidence for a list or multi-hop question ("What activities has Melanie done with her family?")
often shares neither the question's words nor its vector ("I'm off to go swimming with the
kids"), so no reordering of the first round's candidates brings it in. It does resemble the
first round's best hits, which talk about the same thing. `feedback_path` runs one more
candidate generation, with the storage contract's own operation (`Partition.candidates`), so
every backend serves it unchanged:

1. the ``feedback_docs`` best first-round candidates (fused relevance, ties to the smaller id)
   are the feedback set;
2. **Rocchio** vector: ``q + feedback_beta * mean(feedback vectors)``, normalised;
3. **RM3-style** text: the query plus its ``feedback_terms`` best expansion words, a word
   scoring ``sum over the feedback set of relevance * tf / length`` (query words, stopwords,
   digits and one-letter words left out); 0 terms: the keyword leg is not re-run;
4. one `CandidateQuery` with them (``k`` per path, the caller's subset and admission);
5. the **feedback path**: each candidate of that round scored in [0, 1] as the fusion of its
   Rocchio cosine (scaled between the round's worst and best) and its BM25 for the expanded text
   (over the round's best), weighted ``vector_weight`` and ``keyword_weight``; recall fuses it
   with weight ``feedback_weight``, and the query's own cosine of each new candidate comes back
   too (for the vector signal and the relevance floor).

>>> rm3_terms([("Melanie: we went camping with the kids at the lake", 1.0),
...            ("Melanie: the kids loved the camping trip", 0.5)], "What does Melanie do?", 2)
['camping', 'kids']
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ..store.contract import CandidateQuery, Partition
from ..store.terms import index_terms, query_stems
from ..values.config import AtlasConfig

__all__ = ["FeedbackPath", "feedback_path", "rm3_terms"]

# Expansion words: letters only (a date or a count is never the topic), two letters at least.
_WORD = re.compile(r"[^\W\d_]{2,}", re.UNICODE)
# Words that say nothing about a topic, left out of the expansion (the keyword index's own
# query stopwords plus chat filler).
_FILLER = frozenset((
    "a", "about", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be", "been", "but", "by", "can",
    "could", "did", "do", "does", "don", "for", "from", "get", "got", "had", "has", "have", "he", "her", "hers",
    "hey", "him", "his", "how", "i", "if", "im", "in", "into", "is", "it", "its", "just", "like", "ll", "me",
    "more", "my", "no", "not", "of", "oh", "on", "one", "or", "our", "really", "so", "some", "such", "than",
    "thanks", "that", "the", "their", "them", "then", "there", "these", "they", "this", "to", "too", "ve", "very",
    "was", "we", "were", "what", "when", "where", "which", "who", "whom", "why", "will", "with", "would", "yeah",
    "yes", "you", "your", "yours", "shares", "wow", "great", "glad", "sounds", "awesome", "cool", "nice", "it's",
    "i'm", "that's", "re", "much", "lot", "been", "being", "out", "up", "going", "know", "think", "thing",
))


@dataclass(frozen=True, slots=True)
class FeedbackPath:
    """The second round's answer: ``signal`` (id -> feedback path value in [0, 1], best first)
    and ``cosine`` (the query's cosine of the candidates the first round did not have)."""

    signal: dict[str, float]
    cosine: dict[str, float]


def rm3_terms(docs: Sequence[tuple[str, float]], query: str, n: int) -> list[str]:
    """The ``n`` best expansion words of (text, relevance) feedback documents, best first.

    A word scores ``sum(relevance * count / words in the text)`` over the texts (RM3's relevance
    model with uniform smoothing); words with the query's stems, filler and digits are left out;
    ties go to the word seen first.
    """
    if n <= 0:
        return []
    asked = set(query_stems(query))
    score: dict[str, float] = defaultdict(float)
    seen: dict[str, int] = {}
    skipped: dict[str, bool] = {}  # each distinct word stemmed once, not once per occurrence
    for text, weight in docs:
        words = [w.lower() for w in _WORD.findall(text)]
        if not words:
            continue
        share = max(weight, 0.0) / len(words)
        for w in words:
            skip = skipped.get(w)
            if skip is None:
                skip = skipped[w] = w in _FILLER or not asked.isdisjoint(index_terms(w))
            if skip:
                continue
            score[w] += share
            seen.setdefault(w, len(seen))
    ranked = sorted(score, key=lambda w: (-score[w], seen[w]))
    return [w for w in ranked if score[w] > 0][:n]


def _unit(vector: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    norm = float(np.linalg.norm(vector))
    return vector if norm == 0 else (vector / norm).astype(np.float32)


def feedback_path(part: Partition, query: str, vector: npt.NDArray[np.float32], first: Mapping[str, float],
                  config: AtlasConfig, *, k: int, subset: Collection[str] | None, every_admissible: bool,
                  keyword_session: str | None, allowed: Callable[[str], bool]) -> FeedbackPath | None:
    """The feedback path of one recall (see the module): ``first`` is the first round's fused
    relevance by id; None when there is nothing to feed back."""
    if config.feedback_docs <= 0 or not first:
        return None
    top = sorted(first.items(), key=lambda kv: (-kv[1], kv[0]))[:config.feedback_docs]
    ids = [i for i, _ in top]
    found_vectors = [v for v in part.vectors.get_many(ids) if v is not None]
    if not found_vectors:
        return None
    centroid = np.mean(np.stack(found_vectors).astype(np.float32), axis=0)
    rocchio = _unit(_unit(vector.astype(np.float32)) + np.float32(config.feedback_beta) * centroid)
    terms: list[str] = []
    keywords = config.feedback_terms > 0 and config.keyword_weight > 0
    if keywords:
        docs = [(node.content, rel) for (i, rel) in top if (node := part.graph.get_node(i)) is not None]
        terms = rm3_terms(docs, query, config.feedback_terms)
        keywords = bool(terms)
    found = part.candidates(CandidateQuery(
        text=" ".join([query, *terms]), vector=rocchio, k=k, vector_k=k, keyword_k=k, keywords=keywords,
        keyword_session=keyword_session, subset=subset, every_admissible=every_admissible), allowed)
    signal = _fused(found.paths.get("vector", {}), found.paths.get("keyword", {}) if keywords else {}, config)
    new = [i for i in signal if i not in first]
    cosine = dict(zip(new, part.vectors.similarities(vector, new).tolist(), strict=True)) if new else {}
    return FeedbackPath(signal, cosine)


def _fused(vector_hits: Mapping[str, float], keyword_hits: Mapping[str, float], config: AtlasConfig
           ) -> dict[str, float]:
    """The round's two legs in [0, 1] (cosine between the round's worst and best, BM25 over
    the best), summed with the vector and keyword weights, best first (ties: smaller id).

    >>> _fused({"a": 0.9, "b": 0.5}, {"b": 4.0, "c": 2.0}, AtlasConfig())
    {'a': 0.5, 'b': 0.5, 'c': 0.25}
    """
    wv = config.vector_weight if vector_hits else 0.0
    wk = config.keyword_weight if keyword_hits else 0.0
    total = wv + wk
    if total <= 0:
        return {}
    out: dict[str, float] = defaultdict(float)
    if wv > 0:
        low, high = min(vector_hits.values()), max(vector_hits.values())
        span = high - low
        for i, c in vector_hits.items():
            out[i] += wv / total * ((c - low) / span if span > 0 else 1.0)
    top_keyword = max(keyword_hits.values(), default=0.0)
    if wk > 0 and top_keyword > 0:
        for i, s in keyword_hits.items():
            out[i] += wk / total * max(s, 0.0) / top_keyword
    return dict(sorted(out.items(), key=lambda kv: (-kv[1], kv[0])))
