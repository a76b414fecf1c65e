"""Terms for the keyword indexes: the words of a query, and the tokens and stems BM25 counts.

`query_terms` gives a query's distinct words as FTS5's tokenizer sees them (stopwords removed).
`index_terms` and `query_stems` give what every BM25 index of the project counts, in process
(`shared_core.store.memory.inverted_index`) and on a server (`shared_core.store.falkordb`), so
the backends rank alike: SQLite FTS5's ``tokenize='porter unicode61'`` tokens, that is unicode61
(lower case, Latin diacritics removed, letters and digits make words) then Porter stems from
PyStemmer, whose Snowball "porter" is the 1980 algorithm (FTS5's has three later rules, so a few
words stem apart: "possibly", "apology", "trekked").

>>> index_terms("Préférés: the runners' RUNNING shoes")
['prefer', 'the', 'runner', 'run', 'shoe']
>>> query_stems('What milk does Alice prefer? "milk" AND NEAR *')
['milk', 'alic', 'prefer', 'near']
"""

from __future__ import annotations

import re
import threading

import Stemmer

__all__ = ["index_terms", "query_stems", "query_terms", "stem_word", "words"]

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
    found = [w.lower() for w in _WORD.findall(text)]
    kept = [w for w in found if w not in _STOPWORDS] or found
    return list(dict.fromkeys(kept))[:max_terms]


# -- tokenizer: FTS5's unicode61 (remove_diacritics=1), then its porter stemmer ----------------------
# letters, digits and private-use characters; everything else separates, "_" included
_TOKEN = re.compile(r"(?:[^\W_]|[\ue000-\uf8ff\U000f0000-\U0010fffd])+")
_ASCII_TOKEN = re.compile(r"[a-z0-9]+", re.ASCII)  # the same on lower-cased ASCII text, 40% faster
# ... and on ASCII text `_ASCII_TOKEN`'s words again, without a regex: upper case to lower, every
# byte but a letter or digit to a space, then `str.split` (faster than the regex's findall)
ASCII_FOLD = bytes(c + 32 if 65 <= c <= 90 else c if 48 <= c <= 57 or 97 <= c <= 122 else 32 for c in range(256))
STEM_CACHE_MAX = 1 << 14  # words per stem cache
_stemmer = Stemmer.Stemmer("porter", 0)  # Snowball's Porter, without its own cache (ours is cheaper)
_stem_lock = threading.Lock()  # a Stemmer object must not be used by two threads at once

# The combining marks unicode61 drops as diacritics; every other mark separates tokens, as in FTS5.
_DIACRITICS = (*range(0x300, 0x305), *range(0x306, 0x30D), 0x30F, 0x311, 0x31B, *range(0x323, 0x329), 0x32D,
               0x32E, 0x330, 0x331)


def _fold_table() -> dict[int, str | None]:
    """What unicode61 does beyond `str.lower`, as a `str.translate` table: a Latin letter with
    one diacritic becomes its base letter (remove_diacritics=1), a lone diacritic disappears, and
    the lower-case letters with another case-folded form take it ("ς" -> "σ", "ſ" -> "s")."""
    import unicodedata

    table: dict[int, str | None] = dict.fromkeys(_DIACRITICS)
    for cp in (*range(0x80, 0x1000), *range(0x1E00, 0x1F00)):  # Latin, Greek, Cyrillic
        ch = chr(cp)
        parts = unicodedata.normalize("NFD", ch)
        if len(parts) == 2 and parts[0].isascii() and ord(parts[1]) in table:
            table[cp] = parts[0]
        elif unicodedata.category(ch) == "Ll" and len(ch.casefold()) == 1 and ch.casefold() != ch:
            table[cp] = ch.casefold()
    return table


_FOLD = _fold_table()


def words(text: str) -> list[str]:
    """The tokens unicode61 makes of ``text``: lower-cased, Latin diacritics removed."""
    if text.isascii():
        return text.encode().translate(ASCII_FOLD).decode().split()
    text = text.lower()
    if text.isascii():  # "\u212a" (Kelvin) lowers to "k"
        return _ASCII_TOKEN.findall(text)
    return _TOKEN.findall(text.translate(_FOLD))


def stem_word(word: str, cache: dict[str, str]) -> str:
    """The Porter stem of a word not in ``cache``. As in FTS5, words under 3 or over 64 bytes stay
    as they are; so do numbers (no suffix to strip), which are not cached, nor are the long words.
    The short words are (a cache hit costs less than this call). The cache is bounded: past
    `STEM_CACHE_MAX` words it is emptied, and the next texts refill it."""
    size = len(word) if word.isascii() else len(word.encode())
    if size > 64 or word.isdigit():
        return word
    if size < 3:
        stem = word
    else:
        with _stem_lock:
            stem = _stemmer.stemWord(word)
        if stem == word:
            stem = word  # one string object for both (and for a vocabulary's key)
    if len(cache) >= STEM_CACHE_MAX:
        cache.clear()
    cache[word] = stem
    return stem


class _StemCache(dict[str, str]):
    """word -> stem, bounded (see `stem_word`)."""

    __slots__ = ()

    def __missing__(self, word: str) -> str:
        return stem_word(word, self)


_stems = _StemCache()


def index_terms(text: str) -> list[str]:
    """The terms a document is indexed under, in order: unicode61 tokens, Porter-stemmed (a
    document's length is their number; every word counts, stopwords too).

    >>> index_terms("Préférés: the runners' RUNNING shoes")
    ['prefer', 'the', 'runner', 'run', 'shoe']
    """
    return list(map(_stems.__getitem__, words(text)))


def query_stems(query: str, *, max_terms: int = 32) -> list[str]:
    """The stems a query looks for: its distinct words less stopwords (all of them if it has only
    stopwords), the first ``max_terms`` of them, stemmed; what `query_terms` and FTS5 make of it.
    FTS5's operators are plain words here. Two words with one stem give it twice: it counts
    twice, as in FTS5.

    >>> query_stems('What milk does Alice prefer? "milk" AND NEAR *')
    ['milk', 'alic', 'prefer', 'near']
    """
    found = words(query)
    kept = [w for w in found if w not in _STOPWORDS] or found
    return list(map(_stems.__getitem__, list(dict.fromkeys(kept))[:max_terms]))
