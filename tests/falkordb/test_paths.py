"""The backend's one-round-trip recall (`FalkorPartition.candidates` and `expand`) gives exactly
what the contract's portable defaults (`PartitionBase`) give over the same server."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from shared_core import ElasticMemoryAtlas, ManualClock
from shared_core.store.base import PartitionBase
from shared_core.store.contract import CandidateQuery, WalkSpec
from shared_core.store.falkordb import FalkorPartition
from shared_core.values.errors import BackendError
from shared_core.values.model import Relation

TOPICS = ("coffee and milk", "trains to Lyon", "the dentist on Friday", "a red bicycle", "chess openings")


def _partition(atlas: ElasticMemoryAtlas) -> FalkorPartition:
    part = atlas.backend.partition("p")
    assert isinstance(part, FalkorPartition)
    return part


def _admit(node_id: str) -> bool:  # some memories are not admitted, as a filter would do
    return not node_id.endswith("0")


def test_candidates_and_walk_match_the_defaults(shared_atlas: Callable[..., ElasticMemoryAtlas],
                                                clock: ManualClock) -> None:
    atlas = shared_atlas()
    for i in range(60):
        clock.advance(60)
        atlas.add_memory(f"note {i} about {TOPICS[i % 5]} and {TOPICS[(i * 3) % 5]}", namespace="p",
                         session_id=f"s{i % 4}")
    gone = [h.node.id for h in atlas.retrieve("chess openings", namespace="p", top_k=2, reinforce=False)]
    atlas.forget(gone[0])  # a deleted vector: the search asks past the stale entry
    start = clock.now() - 1800
    for text in ("coffee", "trains and bicycles", "dentist chess", "nothing in common"):
        vector = atlas.embedder.embed([text])[0]
        cq = CandidateQuery(text=text, vector=vector, k=12, vector_k=30, keyword_k=12,
                            time_range=(start, clock.now() + 1), recent_session="s1", recent_n=6, recent_k=5)
        part = _partition(atlas)
        fast = part.candidates(cq, _admit)
        part = _partition(atlas)  # a fresh call: nothing read before
        default = PartitionBase.candidates(part, cq, _admit)
        assert fast.paths == default.paths
        assert list(fast.paths["vector"]) == list(default.paths["vector"])  # order too
        np.testing.assert_array_equal(fast.vector_sims, default.vector_sims)
        assert fast.cosine == default.cosine
        every = dataclasses.replace(cq, every_admissible=True)  # no admission asked: no node read with the hits
        part = _partition(atlas)
        fast = part.candidates(every, part.graph.has)
        part = _partition(atlas)
        default = PartitionBase.candidates(part, every, part.graph.has)
        assert fast.paths == default.paths and fast.cosine == default.cosine
        assert [list(p) for p in fast.paths.values()] == [list(p) for p in default.paths.values()]
        np.testing.assert_array_equal(fast.vector_sims, default.vector_sims)
        seeds = dict(list(fast.paths["vector"].items())[:5])
        for beam in (None, 3):
            factors = [None if r is Relation.CONTRADICTS else 0.3 + 0.1 * (j % 7) for j, r in enumerate(Relation)]
            spec = WalkSpec(factors=factors, hops=2, decay=0.5, fanout=4,
                            min_activation=0.0, beam=beam)
            part = _partition(atlas)
            walked = part.expand(seeds, spec, lambda i: not i.endswith("1"))
            part = _partition(atlas)
            expected = PartitionBase.expand(part, seeds, spec, lambda i: not i.endswith("1"))
            assert walked == expected
            assert list(walked) == list(expected)


class _Statements:
    """The statements a partition's connection runs while counted (``with`` block)."""

    def __init__(self, part: FalkorPartition, monkeypatch: pytest.MonkeyPatch) -> None:
        self.seen: list[str] = []
        conn = part.graph_key.conn
        run, run_many = conn.run, conn.run_many

        def counted_run(key: str, query: str, *args: Any, **kwargs: Any) -> Any:
            self.seen.append(query)
            return run(key, query, *args, **kwargs)

        def counted_many(key: str, statements: Any, **kwargs: Any) -> Any:
            self.seen.extend(query for query, _ in statements)
            return run_many(key, statements, **kwargs)

        monkeypatch.setattr(conn, "run", counted_run)
        monkeypatch.setattr(conn, "run_many", counted_many)


def test_a_walked_memory_is_admitted_without_reading_it(shared_atlas: Callable[..., ElasticMemoryAtlas],
                                                        clock: ManualClock, monkeypatch: pytest.MonkeyPatch) -> None:
    """When every memory may be recalled, admission asks `has`: the hop that reached a memory
    found it on the server, so no statement asks about it again; an unknown or removed id is
    still answered right."""
    atlas = shared_atlas()
    for i in range(30):
        clock.advance(60)
        atlas.add_memory(f"note {i} about {TOPICS[i % 5]}", namespace="p", session_id=f"s{i % 3}")
    part = _partition(atlas)
    seeds = {h.node.id: h.score for h in atlas.retrieve("coffee and milk", namespace="p", top_k=3, reinforce=False)}
    part = _partition(atlas)
    counted = _Statements(part, monkeypatch)
    spec = WalkSpec(factors=[0.5] * len(Relation), hops=2, decay=0.5, fanout=4, min_activation=0.0, beam=3)
    asked: list[str] = []

    def admit(node_id: str) -> bool:
        asked.append(node_id)
        return part.graph.has(node_id)

    walked = part.expand(seeds, spec, admit)
    assert walked and asked
    assert not [s for s in counted.seen if "RETURN n.id LIMIT 1" in s]  # `cypher.HAS_NODE`: never asked
    assert not part.graph.has("no-such-memory")
    gone = asked[0]
    part.graph.remove_node(gone)
    assert not part.graph.has(gone)


def test_a_walk_reads_no_cosine_and_the_ranking_reads_them_ahead(
        shared_atlas: Callable[..., ElasticMemoryAtlas], clock: ManualClock, monkeypatch: pytest.MonkeyPatch) -> None:
    """A hop reads edges only: the cosines of the memories a walk reached, asked for afterwards
    (as the ranking asks for those of the graph-only memories it visits), come in one statement
    with those of the next memories the walk reached, equal to those a call that walked nothing
    reads (0 for an unknown id)."""
    atlas = shared_atlas()
    for i in range(40):
        clock.advance(60)
        atlas.add_memory(f"note {i} about {TOPICS[i % 5]} and {TOPICS[(i * 2) % 5]}", namespace="p",
                         session_id=f"s{i % 3}")
    vector = atlas.embedder.embed(["coffee and milk"])[0]
    cq = CandidateQuery(text="coffee and milk", vector=vector, k=4, vector_k=4, keyword_k=4, every_admissible=True)
    part = _partition(atlas)
    found = part.candidates(cq, part.graph.has)
    counted = _Statements(part, monkeypatch)
    spec = WalkSpec(factors=[0.5] * len(Relation), hops=2, decay=0.5, fanout=8, min_activation=0.0, beam=None)
    walked = part.expand(dict(list(found.paths["vector"].items())[:3]), spec, part.graph.has)
    hops = [s for s in counted.seen if "m <> n" in s]  # `cypher.WALK_HOP`
    assert len(hops) == 2
    assert not [s for s in hops if "cosineDistance" in s or "Embedding" in s]
    reached = [i for i in walked if i not in found.cosine]
    assert len(reached) > 2
    before = len(counted.seen)
    first = part.vectors.similarities(vector, [reached[0], "no-such-memory"])
    assert len(counted.seen) == before + 1
    sims = part.vectors.similarities(vector, reached)  # read with the first: the walk reached them
    assert len(counted.seen) == before + 1
    fresh = _partition(atlas)  # a new call: no cosine known
    np.testing.assert_array_equal(sims, fresh.vectors.similarities(vector, reached))
    assert first.tolist() == [sims[0], 0.0]


def test_neighbour_nodes_match_the_default_in_one_statement(shared_atlas: Callable[..., ElasticMemoryAtlas],
                                                           clock: ManualClock,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """`FalkorPartition.neighbour_nodes` of a one-hop walk: the nodes the default (`expand`, then
    `get_node` of each) gives, read with the edges in one statement; the ``before`` walk of
    context windows (its one type in the statement's pattern), a narrower fanout, a walk over two
    relations (filtered) and one over every relation alike."""
    atlas = shared_atlas()
    for i in range(40):
        clock.advance(60)
        atlas.add_memory(f"note {i} about {TOPICS[i % 5]} and {TOPICS[(i * 3) % 5]}", namespace="p",
                         session_id=f"s{i % 3}")
    ids = [h.node.id for h in atlas.retrieve("trains and coffee", namespace="p", top_k=6, reinforce=False)]
    only_before = [1.0 if r is Relation.BEFORE else None for r in Relation]
    two = [0.5 if r in (Relation.BEFORE, Relation.SIMILAR_TO) else None for r in Relation]  # filtered, not typed
    specs = [WalkSpec(factors=only_before, hops=1, decay=1.0, fanout=2, min_activation=0.0, beam=None),
             WalkSpec(factors=two, hops=1, decay=1.0, fanout=3, min_activation=0.0, beam=None),
             WalkSpec(factors=only_before, hops=1, decay=1.0, fanout=1, min_activation=0.0, beam=None),
             WalkSpec(factors=[0.2 + 0.1 * (j % 5) for j, _ in enumerate(Relation)], hops=1, decay=0.5, fanout=3,
                      min_activation=0.05, beam=None)]
    for spec in specs:
        part = _partition(atlas)
        counted = _Statements(part, monkeypatch)
        fast = part.neighbour_nodes(ids, spec)
        assert len(counted.seen) == 1
        monkeypatch.undo()
        part = _partition(atlas)
        default = PartitionBase.neighbour_nodes(part, ids, spec)
        assert fast and fast == default


def test_reads_sent_side_by_side_survive_a_lost_connection(shared_atlas: Callable[..., ElasticMemoryAtlas],
                                                           clock: ManualClock) -> None:
    """The read statements of one request are dealt over connections of their own, one per
    server thread (`_Lane.spread`):
    the rows come back in the statements' order; a refusal is reported as one; a connection
    lost half way is closed and the whole request asked again."""
    atlas = shared_atlas()
    for i in range(10):
        clock.advance(60)
        atlas.add_memory(f"note {i} about {TOPICS[i % 5]}", namespace="p", session_id="s")
    part = _partition(atlas)
    key = part.graph_key
    statements = [("MATCH (n:Memory) RETURN count(n)", {}), ("MATCH (n:Memory) RETURN n.id ORDER BY n.id", {}),
                  ("RETURN $x", {"x": 7})]
    first = key.read_many(statements)
    assert first[0] == [[10]] and len(first[1]) == 10 and first[2] == [[7]]
    lane = key.conn._lane
    assert lane is not None and lane.lanes >= 2 and len(lane._free) >= 2  # the server's threads: 2 or more
    for conn in lane._free:  # every pooled connection dropped under the client's feet
        conn._sock.shutdown(2)
    assert key.read_many(statements) == first
    with pytest.raises(BackendError, match="refused"):
        key.read_many([statements[0], ("THIS IS NOT CYPHER", {})])
    assert key.read_many(statements) == first


def test_a_read_partition_comes_with_its_counts(shared_atlas: Callable[..., ElasticMemoryAtlas],
                                               clock: ManualClock, monkeypatch: pytest.MonkeyPatch) -> None:
    """`FalkorDBBackend.partition` without ``create`` reads the write counter and the superseded
    and bounded counts in the statement that tells whether the graph exists: recall asks for
    them without another round trip."""
    atlas = shared_atlas()
    assert atlas.backend.partition("p") is None
    first = atlas.add_memory("a memory that expires", namespace="p", ttl=3600).id
    second = atlas.add_memory("a memory that replaces nothing", namespace="p").id
    part = _partition(atlas)
    part.inactive.add(second)
    part = _partition(atlas)
    counted = _Statements(part, monkeypatch)
    assert (part.turn, len(part.inactive), part.graph.bounded_nodes) == (2, 1, 1)
    assert counted.seen == []
    assert part.graph.has(first)


def _store(part: FalkorPartition) -> tuple[object, ...]:
    """Everything a batch write leaves: nodes, edges in `edges()` order, session order, BM25
    hits, vectors."""
    nodes = sorted((dataclasses.replace(n, namespace="x") for n in part.graph.nodes()), key=lambda n: n.id)
    edges = {n.id: [(e.source, e.target, e.relation, e.strength, e.created_at) for e in part.graph.edges(n.id)]
             for n in nodes}
    sessions = {s: list(ids) for s, ids in part.sessions.items()}
    keywords = [part.keywords.search(text, 20) for text in TOPICS]
    vectors = [v.tolist() for v in part.vectors.get_many([n.id for n in nodes]) if v is not None]
    return nodes, edges, sessions, keywords, vectors, sorted(part.inactive)


def test_a_batch_write_stores_what_the_default_stores(prefixed_url: str) -> None:
    """`FalkorPartition.write_batch` (two round trips) against `PartitionBase.write_batch` (the
    contract's default, a statement per step) over the same server: batches whose sessions run
    on from earlier batches, neighbours among stored and same-batch memories, superseded
    memories among the neighbours, extra links (one given twice)."""
    from shared_core.store.contract import WriteBatch
    from shared_core.store.falkordb import FalkorDBBackend
    from shared_core.values.model import MemoryNode

    rng = np.random.default_rng(7)
    backend = FalkorDBBackend.from_url(prefixed_url, dim=16)
    fast, default = backend.partition("fast", create=True), backend.partition("default", create=True)
    assert isinstance(fast, FalkorPartition) and isinstance(default, FalkorPartition)
    base = rng.normal(size=(4, 16)).astype(np.float32)
    turn = 0
    for b, size in enumerate((5, 1, 7, 3)):
        nodes, vectors = [], []
        for j in range(size):
            turn += 1
            nodes.append(MemoryNode(id=f"m{turn:03d}", content=f"{TOPICS[turn % 5]} note {turn}", namespace="x",
                                    session_id=None if turn % 4 == 0 else f"s{turn % 3}", timestamp=1000.0 + turn,
                                    created_at=2000.0, last_accessed_at=2000.0, turn=turn, accessed_turn=turn,
                                    metadata={"n": turn} if j == 0 else {}, expires_at=9e9 if j == 1 else None))
            v = base[turn % 4] + 0.3 * rng.normal(size=16).astype(np.float32)
            vectors.append(v / np.linalg.norm(v))
        links: list[list[tuple[str, Relation, float]]] = [[] for _ in nodes]
        if b > 0:
            links[0] = [("m001", Relation.RELATED_TO, 0.7), ("m002", Relation.CAUSED_BY, 0.5),
                        ("m001", Relation.RELATED_TO, 0.9)]
        for part in (fast, default):
            def build(first: int, nodes: list[MemoryNode] = nodes, ns: str = part.namespace) -> list[MemoryNode]:
                return [dataclasses.replace(n, namespace=ns, turn=first + j, accessed_turn=first + j)
                        for j, n in enumerate(nodes)]

            batch = WriteBatch(build=build, vectors=np.array(vectors, dtype=np.float32), similar_top=3,
                               min_similarity=0.2, link_temporal=True, links=links, created_at=2000.0 + b)
            part.begin()
            stored = part.write_batch(batch) if part is fast else PartitionBase.write_batch(part, batch)
            assert [n.turn for n in stored] == [n.turn for n in nodes] and part.turn == nodes[-1].turn  # reserved
        if b == 1:
            for part in (fast, default):
                part.inactive.add("m002")
    fast.begin()
    default.begin()
    assert _store(fast) == _store(default)


def test_a_batch_write_refused_half_way_leaves_nothing(shared_atlas: Callable[..., ElasticMemoryAtlas],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch written in several statements (two memories each), the last refused by the server
    part-way through (after its nodes, in its edges): the server undoes that statement, the write
    raises, and the atlas removes what the statements before it wrote (BM25's counts too)."""
    from shared_core.store.falkordb import cypher, writes
    from shared_core.values.errors import BackendError

    atlas = shared_atlas()
    atlas.add_memories([f"note {i} about {t}" for i, t in enumerate(TOPICS)], namespace="p", session_id="s")
    before = _state(_partition(atlas))
    edges = cypher.write_edges
    monkeypatch.setattr(writes, "_ROWS", 2)
    monkeypatch.setattr(cypher, "write_edges", lambda kinds, after="": (  # a division by zero at run time
        edges(kinds, after=after) + " WITH r RETURN 1 / (size(r) - 5)"))
    with pytest.raises(BackendError, match=r"(?i)division by zero"):
        atlas.add_memories(["coffee again", "trains again", "the dentist again", "chess again", "a bicycle"],
                           namespace="p", session_id="s")
    monkeypatch.undo()
    assert _state(_partition(atlas)) == before
    atlas.add_memories(["coffee again"], namespace="p", session_id="s")  # and the namespace takes writes again
    assert len(_state(_partition(atlas))[0]) == len(before[0]) + 1


def _state(part: FalkorPartition) -> tuple[object, ...]:
    return (sorted((n.id, n.content) for n in part.graph.nodes()), part.graph.edge_count(), len(part.keywords),
            part.graph_key.read("MATCH (c:Atlas) RETURN c.docs, c.tokens"),
            {s: list(i) for s, i in part.sessions.items()})


def test_each_hop_reads_ahead_nodes_in_proportion_to_the_seeds(
        shared_atlas: Callable[..., ElasticMemoryAtlas], clock: ManualClock, monkeypatch: pytest.MonkeyPatch) -> None:
    """A wide recall (`build_context`'s twenty seeds) ranks more of the nodes the walk reaches:
    each hop's request reads two and a half per seed (at least 32), so its ranking seldom reads
    nodes in a round trip of its own; the walk's answer is the default's."""
    from shared_core.store.falkordb.graph import FalkorGraphStore

    atlas = shared_atlas()
    atlas.add_memories([f"note {i} about {TOPICS[i % 5]} and {TOPICS[(i * 3) % 5]}" for i in range(120)],
                       namespace="p", session_id="s")
    vector = atlas.embedder.embed(["coffee and milk"])[0]
    cq = CandidateQuery(text="coffee and milk", vector=vector, k=80, vector_k=80, keyword_k=80, every_admissible=True)
    part = _partition(atlas)
    found = part.candidates(cq, part.graph.has)
    seeds = dict(list(found.paths["vector"].items())[:20])
    absorbed: list[int] = []
    absorb = FalkorGraphStore.absorb

    def counted(self: FalkorGraphStore, ids: Any, rows: Any) -> None:
        absorbed.append(len(ids))
        absorb(self, ids, rows)

    monkeypatch.setattr(FalkorGraphStore, "absorb", counted)
    spec = WalkSpec(factors=[0.5] * len(Relation), hops=2, decay=0.5, fanout=8, min_activation=0.0, beam=20)
    walked = part.expand(seeds, spec, part.graph.has)
    assert absorbed and absorbed[0] == 50
    assert walked == PartitionBase.expand(_partition(atlas), seeds, spec, None)
