"""Keyword recall on FalkorDB ranks as in process: the same BM25 over the same terms, so the same
corpus written to both backends gives the same keyword hits (ids, scores, order) and the same
recall."""

from __future__ import annotations

import pytest

from shared_core import AtlasConfig, ElasticMemoryAtlas, HashingEmbedder, ManualClock
from shared_core.store.falkordb import FalkorDBBackend, FalkorPartition, indexes
from shared_core.store.falkordb import cypher as q

# varied lengths (BM25 normalises by length), repeated words (term counts), words sharing a stem,
# numbers, accents, a document of stopwords only, near-duplicates (equal scores: earlier first)
TEXTS = [
    "Alice prefers oat milk in her coffee every morning",
    "Bob drinks coffee, coffee and more coffee before running",
    "The runners were running in the 2023 Lyon marathon",
    "Crème brûlée at the café near the station",
    "the and of to in",
    "Alice likes trains; trains to Lyon are her favourite trains",
    "A red bicycle leaned on the fence by the station",
    "Bob sold his bicycle in 2023",
    "Alice prefers oat milk in her coffee every morning!",
    "Chess openings: the Sicilian, the French and the Caro-Kann",
    "milk",
    "She ran to the dentist on Friday, running late for the 007 appointment",
    "Coffee tastings in Lyon on Friday with Bob and Alice",
]
QUERIES = ["milk coffee", "Who was running in Lyon?", "bicycle station 2023", "the", "creme brulee cafe",
           "trains trains", "run running ran", "nothing matches zebra", "Friday 007 dentist", "oat"]


def _atlas(backend: str | FalkorDBBackend | None, clock: ManualClock) -> ElasticMemoryAtlas:
    return ElasticMemoryAtlas(config=AtlasConfig(keyword_weight=0.6, vector_weight=0.4),
                              embedder=HashingEmbedder(dim=64), clock=clock, backend=backend)


def _pair(server: str | FalkorDBBackend, clock: ManualClock) -> tuple[ElasticMemoryAtlas, ElasticMemoryAtlas]:
    here, there = _atlas(None, clock), _atlas(server, clock)
    for i, text in enumerate(TEXTS):
        clock.advance(60)
        for atlas in (here, there):
            atlas.add_memory(text, namespace="p", session_id=f"s{i % 3}")
    return here, there


def _hits(atlas: ElasticMemoryAtlas, query: str, **options: object) -> list[tuple[str, float]]:
    part = atlas.backend.partition("p")
    assert part is not None
    content = {n.id: n.content for n in part.graph.nodes()}
    return [(content[i], s) for i, s in part.keywords.search(query, 20, **options)]  # type: ignore[arg-type]


def _same(a: list[tuple[str, float]], b: list[tuple[str, float]]) -> None:
    assert [t for t, _ in a] == [t for t, _ in b]
    assert [s for _, s in a] == pytest.approx([s for _, s in b], rel=1e-12)


@pytest.fixture(params=["one statement", "postings counted", "counts kept"])
def searched(request: pytest.FixtureRequest, prefixed_url: str, monkeypatch: pytest.MonkeyPatch
             ) -> str | FalkorDBBackend:
    """The FalkorDB side, searched as a namespace this small is (one statement), or in two
    statements as a large one is, counting each query stem's postings or reading the per-term
    counts its writes keep (past ``term_counts_from`` documents)."""
    if request.param == "one statement":
        return prefixed_url
    monkeypatch.setattr(indexes, "ONE_STATEMENT_BELOW", 0)
    if request.param == "postings counted":
        return prefixed_url
    return FalkorDBBackend.from_url(prefixed_url, dim=64, term_counts_from=1)


def test_keyword_search_is_the_in_process_bm25(searched: str | FalkorDBBackend, clock: ManualClock) -> None:
    here, there = _pair(searched, clock)
    for query in QUERIES:
        _same(_hits(there, query), _hits(here, query))
        _same(_hits(there, query, session_id="s1"), _hits(here, query, session_id="s1"))
    # replaced text, a removed document, a deleted memory: the counts follow
    for atlas in (here, there):
        part = atlas.backend.partition("p")
        assert part is not None
        ids = {n.content: n.id for n in part.graph.nodes()}
        part.keywords.add(ids["milk"], "milk milk and honey toast")
        part.keywords.remove(ids["Bob sold his bicycle in 2023"])
        atlas.forget(ids["The runners were running in the 2023 Lyon marathon"])
    for query in QUERIES:
        _same(_hits(there, query), _hits(here, query))
    part = there.backend.partition("p")
    assert isinstance(part, FalkorPartition)
    assert part.graph_key.read("MATCH (c:Atlas) RETURN c.dfs") == [[True if isinstance(searched, FalkorDBBackend)
                                                                     else None]]
    assert len(part.keywords) == len(TEXTS) - 2
    docs, tokens = part.graph_key.read("MATCH (c:Atlas) RETURN c.docs, c.tokens")[0]
    terms = part.graph_key.read("MATCH (n:Memory) WHERE n.terms IS NOT NULL RETURN count(n), sum(size(n.terms))")[0]
    assert (int(docs), int(tokens)) == (int(terms[0]), int(terms[1]))


def test_recall_gives_the_in_process_hits(searched: str | FalkorDBBackend, clock: ManualClock) -> None:
    here, there = _pair(searched, clock)
    for query in QUERIES:
        for top_k in (3, 8):
            want = [h.node.content for h in here.retrieve(query, namespace="p", top_k=top_k, reinforce=False)]
            got = [h.node.content for h in there.retrieve(query, namespace="p", top_k=top_k, reinforce=False)]
            assert got == want, query


def test_a_graph_with_full_text_gets_its_terms_on_opening(prefixed_url: str, clock: ManualClock) -> None:
    """A namespace written before BM25's terms (text under a full-text index) is indexed anew
    when a backend first opens it, in the order its memories were written."""
    here, there = _pair(prefixed_url, clock)
    part = there.backend.partition("p")
    assert isinstance(part, FalkorPartition)
    g = part.graph_key
    g.write("DROP INDEX ON :Memory(terms)")  # the old layout: text, a full-text index, no terms nor counts
    g.write("MATCH (n:Memory) SET n.text = n.content, n.terms = null, n.kwseq = null")
    g.write("MATCH (c:Atlas) SET c.docs = null, c.tokens = null, c.kwseq = null")
    g.write("CALL db.idx.fulltext.createNodeIndex({label: 'Memory', language: 'english'}, 'text')")
    reopened = _atlas(prefixed_url, clock)
    for query in QUERIES:
        _same(_hits(reopened, query), _hits(here, query))
    assert not g.read("MATCH (n:Memory) WHERE n.text IS NOT NULL RETURN n.id")
    assert not [r for r in g.read(q.INDEXES) if r[0] == "Memory" and "text" in (r[1] or [])]
