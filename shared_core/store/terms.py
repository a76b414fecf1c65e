"""Query terms for the keyword indexes: the words of a query as FTS5's tokenizer sees them."""

from __future__ import annotations

import re

__all__ = ["query_terms"]

# Words as FTS5's unicode61 tokenizer sees them: letters and digits, with "_" a separator. A query
# term the tokenizer would split ("0_0") would otherwise become a phrase query (which a
# detail='column' table, as this one was, refuses).
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
# Query-side stopwords only (documents keep every word): an OR over "the" would match the whole
# table and make a query slow without changing the ranking.
_STOPWORDS = frozenset((
    "a", "an", "and", "are", "as", "at", "be", "been", "but", "by", "can", "could", "did", "do",
    "does", "for", "from", "had", "has", "have", "he", "her", "hers", "him", "his", "how", "i",
    "if", "in", "into", "is", "it", "its", "me", "my", "of", "on", "or", "our", "she", "so",
    "than", "that", "the", "their", "them", "then", "there", "these", "they", "this", "to", "was",
    "we", "were", "what", "when", "where", "which", "who", "whom", "why", "will", "with", "would",
    "you", "your", "yours",
))


def query_terms(text: str, *, max_terms: int = 32) -> list[str]:
    """The distinct lower-cased words of a query, stopwords removed (all words if only stopwords).

    >>> query_terms("What milk does Alice prefer?")
    ['milk', 'alice', 'prefer']
    """
    words = [w.lower() for w in _WORD.findall(text)]
    kept = [w for w in words if w not in _STOPWORDS] or words
    return list(dict.fromkeys(kept))[:max_terms]
