"""BM25's per-term document counts on FalkorDB ((:Term {t, df}), `cypher.bm25`): every path that
changes a memory's terms changes them in the same statement, so they always equal a recount of
the postings; a graph written before them is counted once when it is opened."""

from __future__ import annotations

from collections.abc import Callable

from shared_core import ElasticMemoryAtlas, ManualClock
from shared_core.store.falkordb import bm25
from shared_core.store.falkordb.partition import FalkorPartition

TEXTS = ["Alice prefers oat milk in her coffee every morning", "Bob drinks coffee, coffee and more coffee",
         "The runners were running in the Lyon marathon", "Alice likes trains; trains to Lyon",
         "A red bicycle leaned on the fence by the station", "Bob sold his bicycle in 2023",
         "the and of to in", "milk"]


def _part(atlas: ElasticMemoryAtlas) -> FalkorPartition:
    part = atlas.backend.partition("c")
    assert isinstance(part, FalkorPartition)
    return part


def _counts(atlas: ElasticMemoryAtlas) -> dict[str, int]:
    return {str(t): int(n) for t, n in _part(atlas).graph_key.read(bm25.TERM_COUNTS)}


def _recount(atlas: ElasticMemoryAtlas) -> dict[str, int]:
    return {str(t): int(n) for t, n in _part(atlas).graph_key.read(bm25.TERM_RECOUNT)}


def _exact(atlas: ElasticMemoryAtlas) -> None:
    counts = _counts(atlas)
    assert counts and counts == _recount(atlas)
    assert min(counts.values()) > 0


def test_every_write_keeps_the_counts(shared_atlas: Callable[..., ElasticMemoryAtlas], clock: ManualClock) -> None:
    atlas = shared_atlas(max_nodes=12)
    nodes = atlas.add_memories(TEXTS, namespace="c", session_id="s")
    _exact(atlas)
    one = atlas.add_memory("Carol walks her dog to the station every morning", namespace="c")
    _exact(atlas)
    atlas.update_memory(nodes[0].id, "Alice prefers soy milk in her tea now", namespace="c")
    _exact(atlas)
    atlas.forget(one.id, namespace="c")
    _exact(atlas)
    part = _part(atlas)
    part.keywords.add(nodes[1].id, "coffee coffee and toast with honey")  # replaced text
    part.keywords.add_many([(nodes[2].id, "running running", None), (nodes[3].id, "trains", None)])
    part.keywords.remove(nodes[4].id)
    part.keywords.remove(nodes[4].id)  # twice: nothing the second time
    _exact(atlas)
    before = _counts(atlas)
    part.keywords.add(nodes[1].id, "coffee coffee and toast with honey")  # the same terms again: no change
    assert _counts(atlas) == before
    atlas.add_memory("Alice prefers oat milk in her coffee every morning", namespace="c", ttl=60.0)
    atlas.add_memories([f"Dan visited Lyon in week {i}" for i in range(8)], namespace="c", session_id="t")
    _exact(atlas)
    assert _counts(atlas) != before
    clock.advance(3600)
    atlas.maintain(namespace="c")  # the expired memory and the evicted ones (max_nodes) leave
    _exact(atlas)
    assert atlas.count(namespace="c") <= 12


def test_counts_survive_a_reopen_and_an_older_graph_is_counted(shared_atlas: Callable[..., ElasticMemoryAtlas]
                                                               ) -> None:
    writer = shared_atlas()
    writer.add_memories(TEXTS, namespace="c", session_id="s")
    want = _counts(writer)
    assert _counts(shared_atlas()) == want  # another process reads the same counts
    g = _part(writer).graph_key
    # as a graph written before the counts: no term nodes, no flag
    g.write("MATCH (w:Term) DELETE w")
    g.write("MATCH (c:Atlas) SET c.dfs = null")
    reader = shared_atlas()  # opened: counted once
    assert _counts(reader) == want == _recount(reader)
    assert g.read("MATCH (c:Atlas) RETURN c.dfs")[0][0] is True
    # counts gone wrong under a flag are left alone by the backfill (it runs only on an unflagged graph) ...
    g.write("MATCH (w:Term {t: 'milk'}) SET w.df = 99")
    g.write(bm25.BACKFILL_COUNTS)
    assert _counts(reader)["milk"] == 99
    # ... and counted again, exactly, once the flag is cleared (idempotent: twice the same)
    for _ in range(2):
        g.write("MATCH (c:Atlas) SET c.dfs = null")
        g.write(bm25.BACKFILL_COUNTS)
        assert _counts(reader) == want
    reader.add_memories(["milk and honey"], namespace="c")
    _exact(reader)


def test_search_reads_the_counts(shared_atlas: Callable[..., ElasticMemoryAtlas]) -> None:
    """The counts are what the search weighs a term by: a count changed by hand changes the
    scores (the postings are not counted any more)."""
    atlas = shared_atlas()
    atlas.add_memories(TEXTS, namespace="c")
    part = _part(atlas)
    before = dict(part.keywords.search("milk coffee", 5))
    part.graph_key.write("MATCH (w:Term {t: 'milk'}) SET w.df = 7")
    after = dict(part.keywords.search("milk coffee", 5))
    assert before.keys() == after.keys() and before != after
