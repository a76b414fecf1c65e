"""Query decomposition by speaker: which names a question gives, and the question without them.

A question about a speaker of a conversation ("What activities has Melanie done with her
family?", "Which cities have both Jon and Gina been to?") is answered by that speaker's own turns,
which rarely repeat the name ("Melanie: I'm off to go swimming with the kids"), while the
question's vector and words lean towards the turns that *address* the speaker ("Hey Melanie!").
Decomposed, it becomes one sub-query per named speaker: the question with every speaker's name
taken out (possessive included, and a conjunction left between two names), searched over that
speaker's turns only (`shared_core.engine.decompose`).

Pure parts, no model:

- `name_words`: the words of a query that may be names (a capital letter, not a question or
  auxiliary word at its start), in order, possessive ``'s`` dropped;
- `speaker_words`: the words of a query that name one of a conversation's known speakers,
  whatever their case ("what are kate's hobbies"), by the speaker's full name or any word of it
  ("Kate" for "Kate Moreau"), a capitalised short form of it ("Mel" for "Melanie"), or a
  capitalised nickname of it in the `nicknames` package's table ("Jo" for "Joanna");
- `strip_names`: the query without the given names, spaces tidied;
- `speaker_of`: who said a memory (its metadata's ``speaker``, else its chat label),
  `labelled`: its content as a labelled chat line, the text the context shows and the embedder
  reads when the speaker is only in the metadata, and `keyword_text`: the text the keyword
  index holds for a memory (its labelled line, and the wording of the memories merged into it).

>>> name_words("Which cities have both Jon and Gina been to?")
('Jon', 'Gina')
>>> strip_names("Which cities have both Jon and Gina been to?", ("Jon", "Gina"))
'Which cities have both been to?'
>>> strip_names("What are Melanie's hobbies?", ("Melanie",))
'What are hobbies?'
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nicknames import NickNamer

__all__ = ["MERGED_FROM", "keyword_text", "labelled", "name_words", "speaker_of", "speaker_words", "strip_names"]

# A capitalised word (letters, inner hyphens or apostrophes), possessive 's / ' / ’s allowed after it.
_WORD = re.compile(r"\b([A-Z][^\W\d_]*(?:[-'][^\W\d_]+)*?)(?:['’]s?)?(?![\w'’-])")
# Words capitalised only because they open a question or a sentence, never names.
_NOT_NAMES = frozenset((
    "A", "An", "And", "Are", "As", "At", "But", "Can", "Could", "Did", "Do", "Does", "For", "From", "Had", "Has",
    "Have", "He", "Her", "His", "How", "I", "If", "In", "Is", "It", "My", "Of", "On", "Or", "She", "Should", "So",
    "The", "Their", "They", "This", "To", "Was", "We", "Were", "What", "When", "Where", "Which", "Who", "Whom",
    "Whose", "Why", "Will", "With", "Would", "You", "Your",
))
_CONJUNCTION = r"(?:,?\s*(?:and|or|&)\s+|,\s*)"
# Any word (letters, inner hyphens or apostrophes), possessive allowed after it: a name typed in lower case.
_ANY_WORD = re.compile(r"\b([^\W\d_]+(?:[-'][^\W\d_]+)*?)(?:['’]s?)?(?![\w'’-])")
# The words of a speaker's name: runs of letters ("kate_m92" -> "kate", "m"; one letter names nobody).
_LETTERS = re.compile(r"[^\W\d_]+")
_NOT_NAMES_FOLDED = frozenset(w.casefold() for w in _NOT_NAMES)
# The shortest short form of a name that `speaker_words` reads as that name ("Mel" for "Melanie").
_MIN_SHORT = 3
# The longest ending a pet form adds to a name ("Johnny" for John; "Timbuktu" is no Tim).
_MAX_SUFFIX = 3
# The shortest nickname `speaker_words` looks up in the nicknames table ("Jo" for Joanna).
_MIN_NICKNAME = 2
# Words for kin made of one syllable said twice, never read as a speaker's pet form (`_doubled`).
_KIN = frozenset(("mama", "papa", "nana", "dada", "baba", "mimi", "gaga"))
# A speaker label at the start of a memory: "Name:" (one to three capitalised words).
_LABEL = re.compile(r"^\s*([A-Z][\w'.-]*(?: [A-Z][\w'.-]*){0,2})\s*:")
#: The metadata key under which a merged memory keeps what it absorbed (id, text, metadata, ...:
#: `shared_core.engine.lifecycle.compression`).
MERGED_FROM = "merged_from"


def name_words(query: str) -> tuple[str, ...]:
    """The capitalised words of ``query`` that may be names, each once, in order of appearance.

    >>> name_words("How many times has Kate been to Paris?")
    ('Kate', 'Paris')
    """
    out: dict[str, None] = {}
    for match in _WORD.finditer(query):
        word = match.group(1)
        if word not in _NOT_NAMES:
            out.setdefault(word, None)
    return tuple(out)


def speaker_words(query: str, speakers: Collection[str]) -> tuple[tuple[str, str], ...]:
    """The words of ``query`` that name one of ``speakers``, each as ``(word as written, speaker)``,
    in order of appearance.

    A word names a speaker when, compared case-insensitively (`str.casefold`), it is the speaker's
    name or one word of it, a run of two or more letters (a question typed in lower case, a
    speaker stored under a full name or a handle: "Kate" for "Kate Moreau" or "kate_m92");
    a capitalised word (`name_words`) of at least three letters also names the one speaker with a
    name word that it starts ("Mel" for Melanie) or that starts it with at most three more
    letters ("Johnny" for John), when no other speaker's does; failing that, a capitalised word
    of two letters or more names the one speaker with a longer name word that the `nicknames`
    package (a curated table of English given names and their nicknames, shipped in its wheel)
    gives as a full form of it ("Jo" for Joanna, "Nate" for Nathan; "Jo" with Joanna and
    Josephine both speaking names neither; "John" never names Jon, nor "Ian" John, a pair the
    table lists both ways); failing that, a capitalised
    word of four or six letters made of one syllable twice names the one speaker with a name word
    that starts with it ("Gigi" for Gina, not in the table; "Nana" and the like name kin, no
    speaker). Question and auxiliary
    words (``"will"``, ``"who"``) never name anyone. A word that names two speakers (a shared
    surname) names both.

    >>> speaker_words("what are kate's hobbies?", {"Kate", "Tom"})
    (('kate', 'Kate'),)
    >>> speaker_words("Did Mel and Jon both go to Rome?", {"Melanie", "Jon Reyes", "Gina"})
    (('Mel', 'Melanie'), ('Jon', 'Jon Reyes'))
    >>> speaker_words("What did Jo paint?", {"Joanna", "Nate"}), speaker_words("Jo?", {"Joanna", "Josephine"})
    ((('Jo', 'Joanna'),), ())
    """
    if not speakers:
        return ()
    exact, by_part, ordered = _speaker_index(frozenset(speakers))
    cased = set(name_words(query))
    seen: set[str] = set()
    pairs: list[tuple[str, str]] = []
    for match in _ANY_WORD.finditer(query):
        word = match.group(1)
        folded = word.casefold()
        if folded in _NOT_NAMES_FOLDED or word in seen:
            continue
        seen.add(word)
        named = exact.get(folded, ())
        if not named and word in cased and len(word) >= _MIN_SHORT:
            named = _short_form(folded, by_part, ordered)
        if not named and word in cased and len(word) >= _MIN_NICKNAME:
            named = _nickname_of(folded, exact)
        if not named and word in cased:
            named = _doubled(folded, by_part, ordered)
        pairs += [(word, s) for s in named]
    return tuple(pairs)


def _nickname_of(folded: str, exact: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    """The one speaker with a name word, longer than ``folded``, that the nicknames table gives
    as a full form of it ("jo" -> "joanna"); () for none or several. (The table also lists
    spelling variants, "john" for "jon", which name another person as often as not, and longer
    pet forms, which the short-form rule reads; a pair it lists both ways, "ian" and "john",
    is one name in two languages, two people as often as not, and names nobody.)"""
    found = {s for full in _full_names(folded) if len(full) > len(folded) and folded not in _full_names(full)
             for s in exact.get(full, ())}
    return tuple(found) if len(found) == 1 else ()


@functools.lru_cache(maxsize=1024)
def _full_names(folded: str) -> frozenset[str]:
    """The full forms the `nicknames` table gives for a nickname (lower case; read on first use)."""
    return frozenset(_nicknamer().canonicals_of(folded))


@functools.cache
def _nicknamer() -> NickNamer:
    from nicknames import NickNamer

    return NickNamer()


def _short_form(folded: str, by_part: dict[str, tuple[str, ...]], ordered: tuple[str, ...]) -> tuple[str, ...]:
    """The one speaker with a name word (three letters or more) that starts with ``folded``, or
    that ``folded`` starts with and at most `_MAX_SUFFIX` letters more; () for none or several."""
    found: set[str] = set()
    for n in range(max(_MIN_SHORT, len(folded) - _MAX_SUFFIX), len(folded)):  # "johnny" -> "john"
        found.update(by_part.get(folded[:n], ()))
    _starting(folded, by_part, ordered, found)  # name words that start with it: "mel" -> "melanie"
    return tuple(found) if len(found) == 1 else ()


def _doubled(folded: str, by_part: dict[str, tuple[str, ...]], ordered: tuple[str, ...]) -> tuple[str, ...]:
    """A pet form made of a name's first syllable said twice ("gigi" for Gina, "jojo", "lulu"): a
    word of four or six letters whose halves are equal names the one speaker with a name word
    (three letters or more) that starts with the half; () for none or several, and for the
    kinship words made so (`_KIN`: "nana" is a grandmother, not Nate).

    >>> _doubled("gigi", {"gina": ("Gina",), "jon": ("Jon",)}, ("gina", "jon")), _doubled("gina", {}, ())
    (('Gina',), ())
    """
    half = len(folded) // 2
    if len(folded) not in (4, 6) or folded[:half] != folded[half:] or folded in _KIN:
        return ()
    found: set[str] = set()
    _starting(folded[:half], by_part, ordered, found)
    return tuple(found) if len(found) == 1 else ()


def _starting(prefix: str, by_part: dict[str, tuple[str, ...]], ordered: tuple[str, ...], found: set[str]) -> None:
    """Add to ``found`` the speakers of the name words that start with ``prefix``, stopping at two."""
    i = bisect.bisect_left(ordered, prefix)
    while i < len(ordered) and ordered[i].startswith(prefix) and len(found) < 2:
        found.update(by_part[ordered[i]])
        i += 1


@functools.lru_cache(maxsize=256)
def _speaker_index(speakers: frozenset[str]) -> tuple[dict[str, tuple[str, ...]], dict[str, tuple[str, ...]],
                                                      tuple[str, ...]]:
    """(casefolded name or name word -> its speakers; name word of three letters or more -> its
    speakers; those name words in order), all speakers sorted, built once per set of speakers (a
    namespace's `SpeakerBook` hands out the same set while it learns nobody new)."""
    exact: dict[str, list[str]] = {}
    by_part: dict[str, list[str]] = {}
    for s in sorted(speakers):
        words = [w.casefold() for w in _LETTERS.findall(s) if len(w) > 1]
        for key in dict.fromkeys((s.casefold(), *words)):
            exact.setdefault(key, []).append(s)
        for key in dict.fromkeys(w for w in words if len(w) >= _MIN_SHORT):
            by_part.setdefault(key, []).append(s)
    return ({k: tuple(v) for k, v in exact.items()}, {k: tuple(v) for k, v in by_part.items()},
            tuple(sorted(by_part)))


def strip_names(query: str, names: Sequence[str]) -> str:
    """``query`` without ``names`` (each as a whole word, with a possessive), a conjunction or
    comma that joined two of them dropped too, and spaces tidied; the query unchanged when no
    name is given.

    >>> strip_names("Did Jon and Gina both participate in dance competitions?", ["Jon", "Gina"])
    'Did both participate in dance competitions?'
    """
    if not names:
        return query
    one = "|".join(re.escape(n) for n in sorted(set(names), key=len, reverse=True))
    name = rf"\b(?:{one})(?:['’]s?)?(?![\w'’-])"
    text = re.sub(rf"{name}(?:{_CONJUNCTION}{name})*", " ", query)
    text = " ".join(text.split())
    return re.sub(r"\s+([?.!,;:])", r"\1", text)


def speaker_of(content: str, metadata: object = None) -> str | None:
    """Who said a memory: its metadata's ``speaker`` (a non-empty string), else the label of a
    chat line (``"Name: ..."``), else None.

    >>> speaker_of("Melanie: we went camping"), speaker_of("went camping", {"speaker": "Mel"})
    ('Melanie', 'Mel')
    >>> speaker_of("note: buy oat milk") is None
    True
    """
    if isinstance(metadata, Mapping):
        who = metadata.get("speaker")
        if isinstance(who, str) and who.strip():
            return who.strip()
    match = _LABEL.match(content)
    return match.group(1) if match else None


def labelled(content: str, metadata: object = None) -> str:
    """``content`` as a chat line ``"Speaker: content"`` when its metadata names a speaker (a
    non-empty ``metadata["speaker"]``) and it has no ``"Name: "`` label of its own; else
    ``content`` itself. A chat application stores who said a message beside it, not in it: this
    is the text a reader (the context block) and the embedder need, so that an unlabelled turn
    says who said it as a labelled one does. The stored content is never changed.

    >>> labelled("went hiking", {"speaker": " Kate "}), labelled("Kate: went hiking", {"speaker": "Kate"})
    ('Kate: went hiking', 'Kate: went hiking')
    >>> labelled("Jon: hi", {"speaker": "Gina"}), labelled("went hiking"), labelled("hi", {"speaker": ""})
    ('Jon: hi', 'went hiking', 'hi')
    """
    if _LABEL.match(content) or (who := speaker_of(content, metadata)) is None:
        return content
    return f"{who}: {content}"


def keyword_text(content: str, metadata: Mapping[str, object] | None = None) -> str:
    """The text the keyword index holds for a memory: its labelled line (`labelled`: a speaker
    stored only in the metadata is found by a search for the name, as a labelled turn's is),
    then the labelled wording of each memory merged into it (``metadata["merged_from"]``, each
    with its own metadata), one per line, each once. Every write, update, merge and reopen
    indexes this text, so a reopened atlas scores as the live one did; the stored content is
    never changed.

    >>> keyword_text("went hiking", {"speaker": "Kate"}), keyword_text("Tom: hi"), keyword_text("x")
    ('Kate: went hiking', 'Tom: hi', 'x')
    >>> keyword_text("x", {"merged_from": [{"content": "y", "metadata": {"speaker": "Kate"}}]})
    'x\\nKate: y'
    """
    if not metadata:
        return content
    texts = [labelled(content, metadata)]
    sources = metadata.get(MERGED_FROM)
    if isinstance(sources, list):
        texts += [labelled(text, source.get("metadata")) for source in sources
                  if isinstance(source, Mapping) and isinstance(text := source.get("content"), str)]
    return "\n".join(dict.fromkeys(texts)) if len(texts) > 1 else texts[0]
