"""Category words and their members: the helpers of ``category_miss.py`` (issue 24, session 23).

A list question names a CATEGORY ("What are Kate's hobbies?", "Which cities has he visited?",
"What kinds of books does she read?") and its evidence names MEMBERS of it ("I've been painting a
lot", "Paris was lovely", "I just finished Dune"), so neither the question's words nor its whole
vector are near the evidence. `category_words` reads those category words from the question: its
plural nouns (`shared_core.formulas.questions`' rough English plural: a word ending in "s" that is
not a possessive nor one of the common words that end in s) and the noun after "kind of", "type
of", "sort of" (singular or plural), less the words that name no category (`NOT_CATEGORIES`:
"times", "things", "days", ...) and a capitalised word past the first (a name: "Paris").
No model, no word list beyond that.

`expansion` bridges them to members: given the category words' vectors and a vocabulary's
(`vocabulary_words` of the memories, each word embedded alone), the vocabulary words nearest
each category word, with their cosines ("pets" -> "dog", "cat", "pup"). The library's category
path built on them (a keyword search for those words, fused as one more recall path) did not pay
held out and is not in the library: commit 6207af5 has it (`benchmarks/README.md`, "Category
words and their members (session 23)").

>>> category_words("What are Kate's hobbies?")
['hobbies']
>>> category_words("What kind of car does he drive, and which cities has he lived in?")
['car', 'cities']
>>> category_words("How many times has she been to Paris?")
[]
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from shared_core.engine.feedback import _FILLER
from shared_core.formulas.questions import _PLURAL

__all__ = ["FLOOR", "NOT_CATEGORIES", "category_words", "expansion", "vocabulary_words"]

#: the least cosine between a category word and a vocabulary word for the word to count as near it
FLOOR = 0.45
_WORD = re.compile(r"[^\W\d_]{3,}", re.UNICODE)

#: plural words that name no category whose members a memory would name
NOT_CATEGORIES = frozenset((
    "times", "things", "ones", "others", "days", "weeks", "months", "years", "hours", "minutes", "ways", "kinds",
    "types", "sorts", "categories", "varieties", "lots", "bits", "people", "guys", "thanks", "words", "plans",
    "reasons", "steps", "does", "goes", "makes", "takes", "gives", "gets", "likes", "loves", "enjoys", "wants",
    "needs", "plays", "says", "tells", "feels", "seems", "keeps", "uses", "helps", "lives", "works", "shares",
    "thinks", "supports", "names", "status", "focus", "bonus", "virus", "campus", "plus", "thus",
))
_KIND_OF = re.compile(r"\b(?:kinds?|types?|sorts?|varieties|categories)\s+of\s+([a-z][a-z-]+)")
_PLURAL_WORD = re.compile(rf"\b{_PLURAL}\b")


def category_words(query: str, *, limit: int = 3) -> list[str]:
    """The category words of ``query`` (lower case, in order, at most ``limit``; see the module).

    >>> category_words("What activities has Melanie done with her family?")
    ['activities']
    """
    spaced = " ".join(query.replace("’", "'").split())
    text = spaced.lower()
    # a capitalised word past the first is a name ("Paris", "James"), not a category
    names = {w.lower() for w in re.findall(r"(?<=\s)[A-Z][a-z]+", spaced)}
    found = [m.group(1) for m in _KIND_OF.finditer(text)] + _PLURAL_WORD.findall(text)
    ordered = sorted(dict.fromkeys(found), key=text.find)
    return [w for w in ordered if w not in NOT_CATEGORIES and w not in names][:limit]


def expansion(categories: npt.NDArray[np.float32], words: Sequence[str], vectors: npt.NDArray[np.float32], *,
              terms: int, floor: float, keep: Callable[[str], bool] | None = None) -> dict[str, float]:
    """The vocabulary words nearest the category words: word -> cosine, best first.

    ``categories`` and ``vectors`` are unit rows (the category words' and the vocabulary's
    ``words``'); for each category word its ``terms`` nearest vocabulary words whose cosine is
    at least ``floor`` and that ``keep`` accepts (None: every word) are kept; a word near two
    category words keeps its best cosine; ties go to the earlier word.

    >>> import numpy as np
    >>> cats = np.array([[1.0, 0.0]], dtype=np.float32)
    >>> vocab = np.array([[0.8, 0.6], [0.6, 0.8], [0.0, 1.0], [1.0, 0.0]], dtype=np.float32)
    >>> expansion(cats, ["painting", "pottery", "tuesday", "hobby"], vocab, terms=2, floor=0.5,
    ...           keep=lambda w: w != "hobby")
    {'painting': 0.8, 'pottery': 0.6}
    """
    out: dict[str, float] = {}
    if terms <= 0 or not len(words) or not len(categories):
        return out
    sims = categories.astype(np.float32) @ vectors.astype(np.float32).T
    for row in sims:
        order = np.argsort(-row, kind="stable")
        kept = 0
        for j in order.tolist():
            sim = float(row[j])
            if sim < floor or kept >= terms:
                break
            word = words[j]
            if keep is not None and not keep(word):
                continue
            kept += 1
            if sim > out.get(word, -1.0):
                out[word] = round(sim, 6)
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def vocabulary_words(text: str) -> set[str]:
    """The words of ``text`` a category may name: lower case, letters only, three or more, filler out.

    >>> sorted(vocabulary_words("Kate: I've been painting a lot, and 3 pots!"))
    ['kate', 'painting', 'pots']
    """
    return {w for w in (m.lower() for m in _WORD.findall(text)) if w not in _FILLER}
