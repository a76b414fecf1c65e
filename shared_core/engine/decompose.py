"""Recall's speaker path: the question decomposed into one sub-query per speaker it names.

Evidence for a question about a speaker ("What activities has Melanie done with her family?") is
mostly that speaker's own turns ("Melanie: I'm off to go swimming with the kids"); the name pulls
the question's vector and words towards the turns that *address* the speaker instead ("Hey
Melanie!"), and the evidence ranks past the first round's candidates. `speaker_path`
decomposes the question (`shared_core.formulas.subqueries`) and runs one more candidate
generation with the storage contract's own operation (`Partition.candidates`), so every
backend serves it unchanged:

1. the query's words that name **speakers** (`speaker_words`: whatever their case, by a full
   name or one word of it, or a capitalised short form): the speaker (`speaker_of`: metadata
   ``speaker``, or a ``"Name:"`` label) of one of the first round's ``speaker_docs`` best
   relevant candidates; none: no sub-query;
2. the **sub-query**: the question without the speakers' names (`strip_names`), embedded with
   the caller's embedder: `PreEmbedded` answers it from the rows the caller embedded before
   the lock, in the same model call as the query, when it guessed the sub-query right
   (`planned_subquery` over the namespace's `SpeakerBook`); otherwise one more call;
3. one `CandidateQuery` with it (twice ``k`` per path, the caller's subset and admission), and
   each candidate kept for the named speaker who said it (one sub-query per speaker: "both of
   them" gives each speaker's turns a list of their own);
4. the **speaker path**: per speaker, the fusion of the sub-query's cosine (scaled between the
   speaker's worst and best) and its BM25 (over the speaker's best), weighted ``vector_weight``
   and ``keyword_weight``, so each speaker's best turn scores 1; recall fuses it with weight
   ``speaker_weight``, and the query's own cosine of each new candidate comes back too.

The sub-query's text depends on the first round's candidates, found under the atlas's lock; the
caller guesses it before the lock from the speakers it has seen in the namespace (a
`SpeakerBook`: the speakers of the memories written, and those each recall found), so that one
model call embeds both texts. A guess only saves the call: the sub-query is still decided under
the lock, and a vector is used only for the exact text it was made from, so a wrong or stale
guess (a speaker written or forgotten meanwhile) costs today's second call, never a result.

>>> from shared_core.formulas.subqueries import strip_names
>>> strip_names("Which cities have both Jon and Gina been to?", ["Jon", "Gina"])
'Which cities have both been to?'
>>> book = SpeakerBook()
>>> book.heard("chat", ["Jon", "Gina Okafor", None])
>>> sorted(book.known("chat")), planned_subquery("did jon and Gina both go to Rome?", book.known("chat"))
(['Gina Okafor', 'Jon'], 'did both go to Rome?')
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from ..formulas.questions import analyze_query
from ..formulas.subqueries import name_words, speaker_of, speaker_words, strip_names
from ..store.contract import CandidateQuery, Partition
from ..values.config import AtlasConfig
from .feedback import FeedbackPath, _fused

__all__ = ["Embed", "Heard", "PreEmbedded", "SpeakerBook", "may_name_speaker", "planned_subquery", "speaker_path",
           "speaker_weight", "speakers_named"]

#: The caller's embedder for sub-queries: texts -> one unit row per text.
Embed = Callable[[Sequence[str]], npt.NDArray[np.float32]]
#: Told the speakers a recall's query names (`speakers_named`), under the atlas's lock.
Heard = Callable[[tuple[str, ...]], None]


#: The most words a speaker's name has for `SpeakerBook` to keep it ("Mary Ann Lee").
MAX_NAME_WORDS = 3


class SpeakerBook:
    """The speakers seen in each namespace, to guess a query's sub-query before the lock.

    A cache, never a source of truth (see the module): it learns the speakers of written memories
    and those each recall finds (`heard`), and forgets only a whole namespace (`drop`), so a
    speaker whose memories were all forgotten stays (a wrong guess: one more model call). After a
    reopen it learns the stored memories' speakers once per namespace, before the namespace's
    first recall (`EngineState.known_speakers`: from the pass that accounts a reopened
    partition's memories, or one `Partition.speakers` request to a server), and `filled` says
    that this is done. A name of more than `MAX_NAME_WORDS` words is no speaker's. Thread safe:
    `known` returns a snapshot.
    """

    def __init__(self) -> None:
        self._names: dict[str, frozenset[str]] = {}
        self._filled: set[str] = set()
        self._lock = threading.Lock()

    def filled(self, namespace: str) -> bool:
        """Whether the stored memories' speakers of ``namespace`` were learnt (`fill`)."""
        return namespace in self._filled

    def fill(self, namespace: str, speakers: Iterable[str | None] = ()) -> None:
        """Learn the stored memories' ``speakers`` of ``namespace`` (as `heard`) and mark it `filled`."""
        self.heard(namespace, speakers)
        with self._lock:
            self._filled.add(namespace)

    def heard(self, namespace: str, speakers: Iterable[str | None]) -> None:
        """Learn ``speakers`` (None, blank names and names of more than `MAX_NAME_WORDS` words are skipped)."""
        new = {w for w in speakers if w is not None and 1 <= len(w.split()) <= MAX_NAME_WORDS}
        known = self._names.get(namespace, frozenset())
        if new <= known:  # the usual case: nothing to write, no lock
            return
        with self._lock:
            self._names[namespace] = self._names.get(namespace, frozenset()) | new

    def known(self, namespace: str) -> frozenset[str]:
        """The speakers learnt in ``namespace`` (a snapshot)."""
        return self._names.get(namespace, frozenset())

    def drop(self, namespace: str) -> None:
        with self._lock:
            self._names.pop(namespace, None)
            self._filled.discard(namespace)


def planned_subquery(query: str, speakers: Collection[str]) -> str | None:
    """The sub-query `speaker_path` embeds for ``query`` if the speakers it finds named are
    those of ``speakers`` that the query names (`speaker_words`); None when there would be none.

    >>> planned_subquery("What are Kate's hobbies?", {"Kate", "Tom"}), planned_subquery("Hi Bob", {"Kate"})
    ('What are hobbies?', None)
    """
    named = [word for word, _ in speaker_words(query, speakers)]
    text = strip_names(query, named) if named else query
    return text if text.strip() and text != query else None


def may_name_speaker(query: str, known: Collection[str]) -> bool:
    """Whether recall runs the speaker path's search for ``query``'s speakers: the query has
    capitalised name words (`name_words`), or it names one of the ``known`` speakers of the
    namespace whatever its case (`speaker_words`: "what are kate's hobbies"); a query that does
    neither costs no read of the first round's candidates.

    >>> may_name_speaker("What are Kate's hobbies?", ()), may_name_speaker("what are kate's hobbies?", {"Kate"})
    (True, True)
    >>> may_name_speaker("what are her hobbies?", {"Kate"})
    False
    """
    return bool(name_words(query)) or bool(speaker_words(query, known))


class PreEmbedded:
    """An `Embed` that answers the texts embedded before the lock from their rows, and the
    others with ``fallback`` (one call for all of them); ``fallbacks`` counts those calls.

    >>> rows = PreEmbedded({"a": np.ones(2, dtype=np.float32)}, lambda texts: np.zeros((len(texts), 2), np.float32))
    >>> rows(["a", "b"]).tolist(), rows.fallbacks
    ([[1.0, 1.0], [0.0, 0.0]], 1)
    """

    def __init__(self, ready: Mapping[str, npt.NDArray[np.float32]], fallback: Embed) -> None:
        self._ready = dict(ready)
        self._fallback = fallback
        self.fallbacks = 0

    def __call__(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        missing = [t for t in dict.fromkeys(texts) if t not in self._ready]
        rows = dict(self._ready)
        if missing:
            self.fallbacks += 1
            rows.update(zip(missing, self._fallback(missing), strict=True))
        return np.stack([rows[t] for t in texts]).astype(np.float32, copy=False)


def speaker_weight(query: str, config: AtlasConfig) -> float:
    """The speaker path's fusion weight for ``query``: ``speaker_weight``, times
    ``speaker_list_factor`` for a list or count question (`shared_core.formulas.questions.analyze_query`:
    its evidence is told across sessions, and the speaker's own turns carry most of it).

    >>> speaker_weight("What are Kate's hobbies?", AtlasConfig()), speaker_weight("When did Kate move?", AtlasConfig())
    (3.0, 1.0)
    """
    if config.speaker_list_factor == 1.0 or not analyze_query(query).aggregate:
        return config.speaker_weight
    return config.speaker_weight * config.speaker_list_factor


def speakers_named(part: Partition, query: str, first: Mapping[str, float], docs: int
                   ) -> tuple[tuple[str, str], ...]:
    """The query's words that name (`speaker_words`) the speaker of one of the ``docs`` best
    candidates of ``first`` (id -> fused relevance; ties to the smaller id), each as ``(word as
    written, speaker)``, in the query's order."""
    if docs <= 0:
        return ()
    top = sorted(first.items(), key=lambda kv: (-kv[1], kv[0]))[:docs]
    said: set[str] = set()
    part.graph.prefetch([node_id for node_id, _ in top])
    for node_id, _ in top:
        node = part.graph.get_node(node_id)
        if node is not None and (who := speaker_of(node.content, node.metadata)) is not None:
            said.add(who)
    return speaker_words(query, said)


def speaker_path(part: Partition, query: str, vector: npt.NDArray[np.float32], first: Mapping[str, float],
                 config: AtlasConfig, embed: Embed, *, k: int, subset: Collection[str] | None,
                 every_admissible: bool, keyword_session: str | None, allowed: Callable[[str], bool],
                 heard: Heard | None = None) -> FeedbackPath | None:
    """The speaker path of one recall (see the module); None when the query names no speaker of
    the candidates, or nothing of theirs comes back. ``heard`` is told the named speakers."""
    named = speakers_named(part, query, first, config.speaker_docs)
    if not named:
        return None
    speakers = tuple(dict.fromkeys(who for _, who in named))
    if heard is not None:
        heard(speakers)
    text = strip_names(query, [word for word, _ in named])
    if not text.strip() or text == query:
        return None
    sub = np.asarray(embed([text])[0], dtype=np.float32)
    keywords = config.keyword_weight > 0
    found = part.candidates(CandidateQuery(
        text=text, vector=sub, k=2 * k, vector_k=2 * k, keyword_k=2 * k, keywords=keywords,
        keyword_session=keyword_session, subset=subset, every_admissible=every_admissible), allowed)
    vector_hits = found.paths.get("vector", {})
    keyword_hits = found.paths.get("keyword", {}) if keywords else {}
    wanted = set(speakers)
    by_speaker: dict[str, tuple[dict[str, float], dict[str, float]]] = defaultdict(lambda: ({}, {}))
    hits = list(dict.fromkeys([*vector_hits, *keyword_hits]))
    part.graph.prefetch(hits)  # whose each hit is: one read for all of them on a server store
    for node_id in hits:
        node = part.graph.get_node(node_id)
        who = None if node is None else speaker_of(node.content, node.metadata)
        if who in wanted:
            vec, kw = by_speaker[who]
            if node_id in vector_hits:
                vec[node_id] = vector_hits[node_id]
            if node_id in keyword_hits:
                kw[node_id] = keyword_hits[node_id]
    signal: dict[str, float] = {}
    for who in speakers:
        if who in by_speaker:
            for node_id, value in _fused(*by_speaker[who], config).items():
                signal[node_id] = max(value, signal.get(node_id, 0.0))
    if not signal:
        return None
    signal = dict(sorted(signal.items(), key=lambda kv: (-kv[1], kv[0])))
    new = [i for i in signal if i not in first]
    cosine = dict(zip(new, part.vectors.similarities(vector, new).tolist(), strict=True)) if new else {}
    return FeedbackPath(signal, cosine)
