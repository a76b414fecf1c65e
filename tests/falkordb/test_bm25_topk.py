"""FalkorDB's pruned BM25 (`cypher.bm25`) gives the in-process top k exactly: the same ids in the
same order (ranked on the same floats, summed in the same order) with the same scores (the server
returns 15 significant digits), on a corpus of frequent and rare words, for any k
(1 to more than the matches), with session and subset filters, after removals and
replacements; equal scores rank the earlier document first on both."""

from __future__ import annotations

import random

import pytest

from shared_core import AtlasConfig, ElasticMemoryAtlas, HashingEmbedder, ManualClock
from shared_core.store.falkordb import FalkorDBBackend, indexes

FREQUENT = ["coffee", "train", "morning", "friend", "walk"]
MIDDLE = [f"topic{i}" for i in range(30)]
RARE = [f"rare{i}" for i in range(300)]
LONG_QUERY = " ".join(FREQUENT + MIDDLE[:4] + RARE[:3])  # 12 words: sums over 9 or more terms


def _texts(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    out: list[str] = []
    for i in range(n):
        words = [rng.choice(FREQUENT) for _ in range(rng.randint(0, 4))]
        words += [rng.choice(MIDDLE) for _ in range(rng.randint(0, 5))]
        words += [rng.choice(RARE) for _ in range(rng.randint(0, 2))]
        if i % 37 == 0:  # a term 20 times over (more than one posting in process)
            words += [rng.choice(FREQUENT)] * 20
        if i % 53 == 0:  # most of the long query's words in one memory
            words += LONG_QUERY.split()[: rng.randint(9, 12)]
        rng.shuffle(words)
        out.append(" ".join(words) or "nothing")
    out += [out[3], out[3], out[10]]  # exact duplicates: equal scores, the earlier first
    return out


QUERIES = [
    "coffee", "coffee train", "coffee train morning friend walk", "rare3 coffee", "rare5 rare7 topic2",
    "topic1 topic2 topic3", "topic4 walk", "rare299", "rare1 rare2 rare3 rare4 rare5 rare6", LONG_QUERY,
    "absentword", "absentword coffee", "coffee coffee rare8",
]


@pytest.fixture(params=["postings counted", "counts kept"])
def server(request: pytest.FixtureRequest, prefixed_url: str) -> str | FalkorDBBackend:
    """The FalkorDB side: a search counts each query stem's postings, or (a namespace past
    ``term_counts_from`` documents) reads the per-term counts its writes keep."""
    if request.param == "postings counted":
        return prefixed_url
    return FalkorDBBackend.from_url(prefixed_url, dim=64, term_counts_from=1)


@pytest.fixture
def pair(server: str | FalkorDBBackend, clock: ManualClock) -> tuple[ElasticMemoryAtlas, ElasticMemoryAtlas]:
    def atlas(backend: str | FalkorDBBackend | None) -> ElasticMemoryAtlas:
        return ElasticMemoryAtlas(config=AtlasConfig(keyword_weight=0.6, vector_weight=0.4),
                                  embedder=HashingEmbedder(dim=64), clock=clock, backend=backend)

    here, there = atlas(None), atlas(server)
    texts = _texts(900)
    for start in range(0, len(texts), 300):
        clock.advance(60)
        for a in (here, there):
            for s in range(4):  # one batch per session, the same order on both
                batch = [t for i, t in enumerate(texts[start:start + 300]) if (start + i) % 4 == s]
                a.add_memories(batch, namespace="p", session_id=f"s{s}")
    return here, there


def _search(atlas: ElasticMemoryAtlas, query: str, k: int, **options: object) -> list[tuple[str, float]]:
    part = atlas.backend.partition("p")
    assert part is not None
    return part.keywords.search(query, k, **options)  # type: ignore[arg-type]


def _ids(atlas: ElasticMemoryAtlas) -> dict[str, str]:
    """content -> id for the first memory of each content (ids differ between backends)."""
    part = atlas.backend.partition("p")
    assert part is not None
    out: dict[str, str] = {}
    for node in sorted(part.graph.nodes(), key=lambda n: n.turn):
        out.setdefault(node.content, node.id)
    return out


def _same(got: list[tuple[int, float]], want: list[tuple[int, float]], what: object) -> None:
    assert [t for t, _ in got] == [t for t, _ in want], what
    assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-13), what


def _compare(here: ElasticMemoryAtlas, there: ElasticMemoryAtlas, **options: object) -> None:
    """Both backends' hits, as (turn of the memory, score): ids differ, turns and scores do not."""
    turn = {}
    for a in (here, there):
        part = a.backend.partition("p")
        assert part is not None
        turn.update({n.id: n.turn for n in part.graph.nodes()})
    for query in QUERIES:
        for k in (1, 3, 10, 40, 5000):
            want = [(turn[i], s) for i, s in _search(here, query, k, **options)]
            got = [(turn[i], s) for i, s in _search(there, query, k, **options)]
            _same(got, want, (query, k, options))


@pytest.fixture(params=["pruned", "two statements", "by size"])
def pruning(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every search pruned (`cypher.bm25`), or counted then scored by size (`bm25_all` for few
    documents), or as the index chooses (a namespace this small: one statement, `bm25_counted`)."""
    if request.param != "by size":
        monkeypatch.setattr(indexes, "ONE_STATEMENT_BELOW", 0)
    if request.param == "pruned":
        monkeypatch.setattr(indexes, "PRUNE_FROM", 0)
        monkeypatch.setattr(indexes, "PRUNE_PER_HIT", 0)


def test_the_top_k_is_the_in_process_one(pair: tuple[ElasticMemoryAtlas, ElasticMemoryAtlas], pruning: None) -> None:
    here, there = pair
    _compare(here, there)
    _compare(here, there, session_id="s1")
    # a subset (the same memories on both sides, by their turn), alone and with a session
    here_part, there_part = here.backend.partition("p"), there.backend.partition("p")
    assert here_part is not None and there_part is not None
    turn = {n.id: n.turn for p in (here_part, there_part) for n in p.graph.nodes()}
    here_subset = {n.id for n in here_part.graph.nodes() if n.turn % 3 == 0}
    there_subset = {n.id for n in there_part.graph.nodes() if n.turn % 3 == 0}
    for query in QUERIES:
        for k in (1, 10, 5000):
            for session in (None, "s2"):
                want = [(turn[i], s) for i, s in here_part.keywords.search(query, k, subset=here_subset,
                                                                           session_id=session)]
                got = [(turn[i], s) for i, s in there_part.keywords.search(query, k, subset=there_subset,
                                                                           session_id=session)]
                _same(got, want, (query, k, session))


def test_removed_and_replaced_documents_leave_the_ranking(
        pair: tuple[ElasticMemoryAtlas, ElasticMemoryAtlas], pruning: None) -> None:
    here, there = pair
    for atlas in (here, there):
        part = atlas.backend.partition("p")
        assert part is not None
        ids = _ids(atlas)
        for content in list(ids)[5:40]:  # rare and frequent words lose documents
            atlas.forget(ids[content])
        for content in list(ids)[40:50]:
            part.keywords.remove(ids[content])
        for content in list(ids)[50:60]:
            part.keywords.add(ids[content], "rare3 rare3 coffee train topic1")
    _compare(here, there)
    _compare(here, there, session_id="s3")


def test_scores_one_ulp_apart_rank_as_in_process(server: str | FalkorDBBackend, clock: ManualClock,
                                                 pruning: None) -> None:
    """Two memories whose term shares are the same two values in swapped places: a sum in query
    order makes them equal (the earlier first), numpy's sum in process (the first share plus the
    sum of the others) puts the later one a unit in the last place ahead; the server sums as numpy
    (the statement this replaced summed in the order its terms came out of an aggregation)."""
    texts = ["alpha alpha beta gamma zed zed", "alpha beta beta gamma zed zed", "alpha beta", "alpha beta",
             *[f"filler{i} words" for i in range(6)]]
    atlases = [ElasticMemoryAtlas(config=AtlasConfig(keyword_weight=0.6, vector_weight=0.4),
                                  embedder=HashingEmbedder(dim=64), clock=clock, backend=backend)
               for backend in (None, server)]
    for text in texts:
        clock.advance(60)
        for atlas in atlases:
            atlas.add_memory(text, namespace="p")
    here, there = atlases
    content = {n.id: n.content for a in atlases for n in a.backend.partition("p").graph.nodes()}  # type: ignore[union-attr]
    want = [content[i] for i, _ in _search(here, "alpha beta gamma", 2)]
    assert want == [texts[1], texts[0]]  # the later memory first: its score is the larger float
    assert [content[i] for i, _ in _search(there, "alpha beta gamma", 2)] == want


def test_one_heavy_term_and_a_light_one_reach_the_top(server: str | FalkorDBBackend, clock: ManualClock,
                                                      pruning: None) -> None:
    """The pruned search reads a heavy term whole when few documents hold two heavy terms, and
    keeps each of its documents whose share of the term, plus the weights of the query's light
    terms (beyond the six heaviest), may reach the k-th best score: here the best document holds
    one heavy term and two light ones, its heavy share alone below the score of the one document
    holding two heavy terms (and it holds a single light term: no pair of light terms finds it)."""
    fillers = [f"filler{i}" for i in range(30)]
    texts = ["heavya heavyb " + " ".join(fillers[:4]), "heavyc lighta",
             *[f"heavy{c} {fillers[7]} {fillers[8]} {fillers[9]}" for c in "dgf"],
             *[f"lighta {fillers[10 + i]} {fillers[11 + i]}" for i in range(6)],
             *[f"lightb {fillers[12 + i]} {fillers[13 + i]}" for i in range(6)],
             *[" ".join(fillers[i:i + 4]) for i in range(22)]]
    atlases = [ElasticMemoryAtlas(config=AtlasConfig(keyword_weight=0.6, vector_weight=0.4),
                                  embedder=HashingEmbedder(dim=64), clock=clock, backend=backend)
               for backend in (None, server)]
    for atlas in atlases:
        atlas.add_memories(texts, namespace="p")
    here, there = atlases
    content = {n.id: n.content for a in atlases for n in a.backend.partition("p").graph.nodes()}  # type: ignore[union-attr]
    query = "heavya heavyb heavyc heavyd heavyg heavyf lighta lightb"
    for k in (1, 2, 3, 50):
        want = [(content[i], s) for i, s in _search(here, query, k)]
        if k == 1:
            assert [c for c, _ in want] == [texts[1]]
        got = [(content[i], s) for i, s in _search(there, query, k)]
        assert [c for c, _ in got] == [c for c, _ in want], k
        assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-13), k
