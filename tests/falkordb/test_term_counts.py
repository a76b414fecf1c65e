"""BM25's per-term document counts on FalkorDB ((:Term {t, df}), `shared_core.store.falkordb.bm25`),
kept only in a namespace of at least the backend's ``term_counts_from`` documents: none below it;
counted once, exactly, by the write that crosses it (or by the next opening); from then on every
path that changes a memory's terms changes them in the same statement, so they always equal a
recount of the postings, whichever process writes; and the search reads them, ranking as in
process."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from shared_core import AtlasConfig, ElasticMemoryAtlas, HashingEmbedder, ManualClock
from shared_core.store.falkordb import FalkorDBBackend, bm25, client, indexes
from shared_core.store.falkordb.partition import FalkorPartition

TEXTS = ["Alice prefers oat milk in her coffee every morning", "Bob drinks coffee, coffee and more coffee",
         "The runners were running in the Lyon marathon", "Alice likes trains; trains to Lyon",
         "A red bicycle leaned on the fence by the station", "Bob sold his bicycle in 2023",
         "the and of to in", "milk"]
QUERIES = ["milk coffee", "Who was running in Lyon?", "bicycle station 2023", "coffee coffee morning", "zebra"]
Build = Callable[..., ElasticMemoryAtlas]


@pytest.fixture(autouse=True)
def _two_statements(monkeypatch: pytest.MonkeyPatch) -> None:
    """Searches in two statements, as a large namespace's (the one statement of a small one
    counts postings itself: `cypher.bm25_counted`), so that the kept counts are read."""
    monkeypatch.setattr(indexes, "ONE_STATEMENT_BELOW", 0)


@pytest.fixture
def build(prefixed_url: str, clock: ManualClock) -> Build:
    """An atlas ('a process') on the test's prefix whose backend keeps the counts from
    ``counts_from`` documents."""

    def atlas(counts_from: int = 1, **config: Any) -> ElasticMemoryAtlas:
        backend = FalkorDBBackend.from_url(prefixed_url, dim=64, term_counts_from=counts_from)
        return ElasticMemoryAtlas(config=AtlasConfig(**config), embedder=HashingEmbedder(dim=64), clock=clock,
                                  backend=backend)

    return atlas


def _part(atlas: ElasticMemoryAtlas) -> FalkorPartition:
    part = atlas.backend.partition("c")
    assert isinstance(part, FalkorPartition)
    return part


def _counts(atlas: ElasticMemoryAtlas) -> dict[str, int]:
    return {str(t): int(n) for t, n in _part(atlas).graph_key.read(bm25.TERM_COUNTS)}


def _recount(atlas: ElasticMemoryAtlas) -> dict[str, int]:
    return {str(t): int(n) for t, n in _part(atlas).graph_key.read(bm25.TERM_RECOUNT)}


def _flag(atlas: ElasticMemoryAtlas) -> object:
    return _part(atlas).graph_key.read("MATCH (c:Atlas) RETURN c.dfs")[0][0]


def _exact(atlas: ElasticMemoryAtlas) -> None:
    counts = _counts(atlas)
    assert _flag(atlas) is True
    assert counts and counts == _recount(atlas)
    assert min(counts.values()) > 0


def _uncounted(atlas: ElasticMemoryAtlas) -> None:
    assert _flag(atlas) is None and _counts(atlas) == {}


def _keyword_hits(atlas: ElasticMemoryAtlas) -> list[list[tuple[str, float]]]:
    part = _part(atlas)
    return [part.keywords.search(query, 20) for query in QUERIES]


def test_every_write_keeps_the_counts(build: Build, clock: ManualClock, tmp_path: Path, prefixed_url: str) -> None:
    atlas = build(max_nodes=12)
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
    atlas.forget(nodes[5].id, namespace="c")
    part = _part(atlas)
    part.keywords.remove(nodes[6].id)
    held = atlas.count(namespace="c")
    atlas.forget(nodes[6].id, namespace="c")  # a memory without terms is deleted all the same
    assert not _part(atlas).graph.has(nodes[6].id) and atlas.count(namespace="c") == held - 1
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
    saved = atlas.save(tmp_path / "atlas.zip")
    atlas.backend.drop("c")
    loaded = ElasticMemoryAtlas.load(saved, backend=FalkorDBBackend.from_url(prefixed_url, dim=64, term_counts_from=1),
                                     embedder=HashingEmbedder(dim=64), clock=clock)
    _exact(loaded)  # a loaded snapshot's terms are counted by the write that indexes them


def test_below_the_size_nothing_is_kept_and_the_crossing_write_counts_once(build: Build) -> None:
    small = build(counts_from=12)
    small.add_memories(TEXTS, namespace="c", session_id="s")
    small.add_memory("Carol walks her dog", namespace="c")
    small.forget(small.add_memory("gone at once", namespace="c").id, namespace="c")
    _uncounted(small)  # 9 documents: no counts, no flag
    small.add_memories(["Dan visited Lyon", "Erin rides a bicycle"], namespace="c")  # 11: still none
    _uncounted(small)
    small.add_memory("Frank drinks milk with his coffee", namespace="c")  # the 12th: counted, exactly
    _exact(small)
    wanted = _recount(small)
    _part(small).graph_key.write(bm25.BACKFILL_COUNTS, {"from": 1})  # again: nothing (flagged)
    assert _counts(small) == wanted
    assert _keyword_hits(small) == _keyword_hits(build(counts_from=10**9))
    small.add_memory("Gina likes milk", namespace="c")
    _exact(small)


def test_a_large_batch_and_a_keyword_write_that_cross_are_counted(build: Build) -> None:
    """The crossing write in several statements (more than 512 memories: the count rides with
    them) and through the keyword index alone (`FalkorKeywordIndex.add_many`)."""
    atlas = build(counts_from=530, similar_top=0)
    atlas.add_memories([f"note {i} about topic{i % 37} and item{i % 11}" for i in range(520)], namespace="c")
    _uncounted(atlas)
    atlas.add_memories([f"later note {i} on topic{i % 5}" for i in range(600)], namespace="c")
    _exact(atlas)
    writer = build(counts_from=10**9)  # 9 documents, then 8: one memory's terms removed
    nodes = writer.add_memories([*TEXTS, "no keywords yet"], namespace="k", session_id="s")
    part = writer.backend.partition("k")
    assert isinstance(part, FalkorPartition)
    part.keywords.remove(nodes[-1].id)
    mine = build(counts_from=9).backend.partition("k")  # opened: 8 documents, nothing counted
    assert isinstance(mine, FalkorPartition)
    assert mine.graph_key.read("MATCH (c:Atlas) RETURN c.dfs, c.docs") == [[None, 8]]
    mine.keywords.add(nodes[-1].id, "keywords at last: milk")  # the 9th document: counted
    assert mine.graph_key.read("MATCH (c:Atlas) RETURN c.dfs, c.docs") == [[True, 9]]
    assert {str(t): int(n) for t, n in mine.graph_key.read(bm25.TERM_COUNTS)} == \
        {str(t): int(n) for t, n in mine.graph_key.read(bm25.TERM_RECOUNT)}


def test_another_process_reads_and_keeps_the_same_counts(build: Build) -> None:
    """A process that never counts (its size out of reach) writes after another one turned the
    counts on, with its own view saying they were off: its writes still change them (the guard
    is evaluated inside each statement), and it reads the same counts and ranks the same."""
    late = build(counts_from=10**9)
    late.add_memories(TEXTS, namespace="c", session_id="s")
    assert _keyword_hits(late)  # its view: no counts
    _uncounted(late)
    early = build(counts_from=1)
    early.add_memory("Hana drinks oat milk", namespace="c")  # counted now
    _exact(early)
    late.add_memories(["Ivan runs to the station", "milk and honey"], namespace="c")
    late.update_memory(late.memories(namespace="c")[0].id, "Alice switched to tea", namespace="c")
    late.forget(late.memories(namespace="c")[1].id, namespace="c")
    _exact(early)
    assert _counts(late) == _counts(early)
    assert _keyword_hits(late) == _keyword_hits(early) == _keyword_hits(build(counts_from=10**9))


def test_a_write_that_guessed_no_counts_is_refused_and_sent_again(build: Build,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch of one statement goes without the counts' updates while its process has not seen
    them kept; once they are, the server refuses it and the process sends it again with them,
    and from then on sends them at once."""
    late = build(counts_from=10**9)
    late.add_memories(TEXTS, namespace="c", session_id="s")
    build(counts_from=1).add_memory("Hana drinks oat milk", namespace="c")  # counted now
    sent: list[bool] = []
    real = client.query_command

    def spy(key: str, query: str, params: Any, *, write: bool = False) -> list[str]:
        if "x0:Memory" in query:
            sent.append("c.dfs IS NULL" not in query)  # True: with the counts' updates
        return real(key, query, params, write=write)

    monkeypatch.setattr(client, "query_command", spy)
    late.add_memory("Ivan runs to the station", namespace="c")
    assert sent == [False, True]
    late.add_memories(["milk and honey", "more milk"], namespace="c")
    assert sent == [False, True, True]
    _exact(late)
    assert len(late.memories(namespace="c")) == len(TEXTS) + 4


def test_an_uncounted_large_graph_is_counted_on_opening(build: Build) -> None:
    writer = build(counts_from=10**9)
    writer.add_memories(TEXTS, namespace="c", session_id="s")
    _uncounted(writer)
    reader = build(counts_from=8)  # opened: 8 documents, counted once
    _exact(reader)
    want = _counts(reader)
    g = _part(reader).graph_key
    g.write("MATCH (w:Term {t: 'milk'}) SET w.df = 5")  # counts gone wrong under the flag are left alone ...
    build(counts_from=1).retrieve("milk", namespace="c")
    assert _counts(reader)["milk"] == 5
    for _ in range(2):  # ... and counted again, exactly, once the flag is cleared (idempotent)
        g.write("MATCH (c:Atlas) SET c.dfs = null")
        g.write(bm25.BACKFILL_COUNTS, {"from": 1})
        assert _counts(reader) == want
    g.write("MATCH (c:Atlas) SET c.dfs = null")
    g.write(bm25.BACKFILL_COUNTS, {"from": 9})  # too small for the size asked: nothing
    assert _flag(reader) is None


def test_the_search_reads_the_kept_counts(build: Build) -> None:
    """With the counts kept, a count changed by hand changes the scores (the postings are not
    counted any more), in a search and in a recall's candidates; with none kept, it does not."""
    atlas = build(counts_from=1, keyword_weight=1.0, vector_weight=0.0)
    atlas.add_memories(TEXTS, namespace="c")
    part = _part(atlas)
    before = dict(part.keywords.search("milk coffee", 5))
    recalled = [(h.node.id, h.score) for h in atlas.retrieve("milk coffee", namespace="c", reinforce=False)]
    part.graph_key.write("MATCH (w:Term {t: 'milk'}) SET w.df = 7")
    part = _part(atlas)
    after = dict(part.keywords.search("milk coffee", 5))
    assert before.keys() == after.keys() and before != after
    assert [(h.node.id, h.score) for h in atlas.retrieve("milk coffee", namespace="c", reinforce=False)] != recalled


@pytest.mark.parametrize("counts_from", [1, 10**9])
def test_a_recall_on_a_guessed_flag_ranks_as_a_fresh_process(build: Build, prefixed_url: str,
                                                              counts_from: int) -> None:
    """A recall's view guesses the flag from the last call: guessed off while another process
    turned it on, the recall counts postings (exact); guessed on in a namespace dropped and
    written again without counts, it starts over. Either way the hits are a fresh process's."""
    atlas = build(counts_from=counts_from, keyword_weight=1.0, vector_weight=0.0)
    atlas.add_memories(TEXTS, namespace="c", session_id="s")
    first = [(h.node.id, h.score) for h in atlas.retrieve("milk coffee", namespace="c", reinforce=False)]
    assert first == [(h.node.id, h.score) for h in build(counts_from=counts_from, keyword_weight=1.0,
                                                         vector_weight=0.0).retrieve("milk coffee", namespace="c",
                                                                                     reinforce=False)]
    other = build(counts_from=1 if counts_from > 1 else 10**9, keyword_weight=1.0, vector_weight=0.0)
    other.backend.drop("c")
    other.add_memories(TEXTS[::-1], namespace="c", session_id="s")  # counted only if `other` counts
    again = [(h.node.id, h.score) for h in atlas.retrieve("milk coffee", namespace="c", reinforce=False)]
    fresh = build(counts_from=10**9, keyword_weight=1.0, vector_weight=0.0)
    assert again == [(h.node.id, h.score) for h in fresh.retrieve("milk coffee", namespace="c", reinforce=False)]
