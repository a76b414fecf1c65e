"""Each document's length and repeated terms on FalkorDB (``n.tlen``, ``n.reps``: `cypher.repeats`),
which BM25's one-statement search (`cypher.bm25_counted`) reads instead of the terms: written by
every path that writes the terms, and computed when a graph written before them is opened; the
search ranks as in process."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from shared_core import ElasticMemoryAtlas, ManualClock
from shared_core.store.falkordb import cypher as q
from shared_core.store.falkordb.indexes import FalkorKeywordIndex
from shared_core.store.falkordb.partition import FalkorPartition

from .test_bm25 import QUERIES, TEXTS, _atlas

_STORED = ("MATCH (n:Memory) WHERE n.terms IS NOT NULL OR n.tlen IS NOT NULL OR n.reps IS NOT NULL "
           "RETURN n.id, n.terms, n.tlen, n.reps")


def _part(atlas: ElasticMemoryAtlas) -> FalkorPartition:
    part = atlas.backend.partition("p")
    assert isinstance(part, FalkorPartition)
    return part


def _consistent(atlas: ElasticMemoryAtlas) -> int:
    rows = _part(atlas).graph_key.read(_STORED)
    for _, terms, tlen, reps in rows:
        assert terms is not None and tlen == len(terms) and reps == q.repeats(list(terms))
    return len(rows)


def _contents(atlas: ElasticMemoryAtlas) -> dict[str, str]:
    part = atlas.backend.partition("p")
    assert part is not None
    return {n.id: n.content for n in part.graph.nodes()}


def _same_search(here: ElasticMemoryAtlas, there: ElasticMemoryAtlas) -> None:
    """The one-statement search (`bm25_counted`, chosen by a small document count) and the
    counts then the top k (`bm25_all`, `bm25`: the document count unknown) give the in-process
    index's hits (their contents), scores and order."""
    mine = here.backend.partition("p")
    assert mine is not None
    graph = _part(there).graph_key
    here_text, there_text = _contents(here), _contents(there)
    for theirs in (FalkorKeywordIndex(graph, documents=lambda: 10), FalkorKeywordIndex(graph)):
        for query in QUERIES:
            for k in (2, 20):
                want = mine.keywords.search(query, k)
                got = theirs.search(query, k)
                assert [there_text[i] for i, _ in got] == [here_text[i] for i, _ in want], query
                assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-12)


def test_every_write_keeps_them_and_search_ranks_as_in_process(prefixed_url: str, clock: ManualClock) -> None:
    here, there = _atlas(None, clock), _atlas(prefixed_url, clock)
    for text in TEXTS[:6]:
        clock.advance(60)
        for atlas in (here, there):
            atlas.add_memory(text, namespace="p", session_id="s")
    for atlas in (here, there):
        atlas.add_memories(TEXTS[6:], namespace="p", session_id="t")
    assert _consistent(there) == len(TEXTS)
    _same_search(here, there)
    for atlas in (here, there):
        ids = {content: i for i, content in _contents(atlas).items()}
        part = atlas.backend.partition("p")
        assert part is not None
        part.keywords.add(ids["milk"], "milk milk and honey toast toast toast")  # replaced text, repeats
        part.keywords.remove(ids["Bob sold his bicycle in 2023"])
        atlas.forget(ids["The runners were running in the 2023 Lyon marathon"], namespace="p")
    assert _consistent(there) == len(TEXTS) - 2
    _same_search(here, there)


def test_an_older_graph_gets_them_when_it_is_opened(shared_atlas: Callable[..., ElasticMemoryAtlas]) -> None:
    writer = shared_atlas()
    writer.add_memories(TEXTS, namespace="p")
    g = _part(writer).graph_key
    want = sorted((str(i), tlen, tuple(reps)) for i, _, tlen, reps in g.read(_STORED))
    g.write("MATCH (n:Memory) SET n.tlen = null, n.reps = null WITH count(*) AS _ MATCH (c:Atlas) SET c.reps = null")
    assert not g.read("MATCH (n:Memory) WHERE n.tlen IS NOT NULL RETURN n.id")
    reader = shared_atlas()  # another process opens the graph
    assert _consistent(reader) == len(TEXTS)
    assert sorted((str(i), tlen, tuple(reps)) for i, _, tlen, reps in g.read(_STORED)) == want
    assert g.read("MATCH (c:Atlas) RETURN c.reps")[0][0] is True
