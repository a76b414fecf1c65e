"""Recall's speaker path: the question decomposed into one sub-query per speaker it names.

Evidence for a question about a speaker ("What activities has Melanie done with her family?") is
mostly that speaker's own turns ("Melanie: I'm off to go swimming with the kids"); the name pulls
the question's vector and words towards the turns that *address* the speaker instead ("Hey
Melanie!"), and the evidence ranks past the first round's candidates. `speaker_path`
decomposes the question (`shared_core.formulas.subqueries`) and runs one more candidate
generation with the storage contract's own operation (`Partition.candidates`), so every
backend serves it unchanged:

1. the query's name words that are **speakers**: the speaker (`speaker_of`: metadata
   ``speaker``, or a ``"Name:"`` label) of one of the first round's ``speaker_docs`` best
   relevant candidates; none: no sub-query;
2. the **sub-query**: the question without the speakers' names (`strip_names`), embedded with
   the caller's embedder (one call);
3. one `CandidateQuery` with it (twice ``k`` per path, the caller's subset and admission), and
   each candidate kept for the named speaker who said it (one sub-query per speaker: "both of
   them" gives each speaker's turns a list of their own);
4. the **speaker path**: per speaker, the fusion of the sub-query's cosine (scaled between the
   speaker's worst and best) and its BM25 (over the speaker's best), weighted ``vector_weight``
   and ``keyword_weight``, so each speaker's best turn scores 1; recall fuses it with weight
   ``speaker_weight``, and the query's own cosine of each new candidate comes back too.

>>> from shared_core.formulas.subqueries import strip_names
>>> strip_names("Which cities have both Jon and Gina been to?", ["Jon", "Gina"])
'Which cities have both been to?'
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from ..formulas.subqueries import name_words, speaker_of, strip_names
from ..store.contract import CandidateQuery, Partition
from ..values.config import AtlasConfig
from .feedback import FeedbackPath, _fused

__all__ = ["Embed", "speaker_path", "speakers_named"]

#: The caller's embedder for sub-queries: texts -> one unit row per text.
Embed = Callable[[Sequence[str]], npt.NDArray[np.float32]]


def speakers_named(part: Partition, query: str, first: Mapping[str, float], docs: int) -> tuple[str, ...]:
    """The query's name words that are the speaker of one of the ``docs`` best candidates of
    ``first`` (id -> fused relevance; ties to the smaller id), in the query's order."""
    words = name_words(query)
    if not words or docs <= 0:
        return ()
    top = sorted(first.items(), key=lambda kv: (-kv[1], kv[0]))[:docs]
    said = set()
    part.graph.prefetch([node_id for node_id, _ in top])
    for node_id, _ in top:
        node = part.graph.get_node(node_id)
        if node is not None and (who := speaker_of(node.content, node.metadata)) is not None:
            said.add(who)
    return tuple(w for w in words if w in said)


def speaker_path(part: Partition, query: str, vector: npt.NDArray[np.float32], first: Mapping[str, float],
                 config: AtlasConfig, embed: Embed, *, k: int, subset: Collection[str] | None,
                 every_admissible: bool, keyword_session: str | None, allowed: Callable[[str], bool]
                 ) -> FeedbackPath | None:
    """The speaker path of one recall (see the module); None when the query names no speaker of
    the candidates, or nothing of theirs comes back."""
    speakers = speakers_named(part, query, first, config.speaker_docs)
    if not speakers:
        return None
    text = strip_names(query, speakers)
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
