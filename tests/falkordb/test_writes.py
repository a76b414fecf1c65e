"""How often a write asks the server, and what one atlas call may keep of what it read."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from shared_core import ElasticMemoryAtlas
from shared_core.store.falkordb import FalkorDBBackend, FalkorPartition, cypher
from shared_core.store.falkordb.client import Connection

from ._probes import round_trips


def test_an_add_memory_asks_the_server_twice(shared_atlas: Callable[..., ElasticMemoryAtlas],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """One pipeline of reads (EXISTS, the neighbour search with the superseded count, the
    session's newest memory) and one write statement (nodes, vector, terms, the turn's
    reservation and the edges), however often the engine asks for the partition within the call."""
    atlas = shared_atlas()
    atlas.add_memories(["oat milk in the coffee", "the train to Lyon", "oat milk again"], namespace="p",
                       session_id="s")
    with round_trips(monkeypatch) as seen:
        node = atlas.add_memory("oat milk, always oat milk", namespace="p", session_id="s")
    assert seen == ["EXISTS", "a query"]
    links = {(e.relation.value, e.source == node.id) for e in atlas.backend.partition("p").graph.edges(node.id)}
    assert ("before", False) in links and ("similar_to", True) in links  # the edges came with the write


def test_no_index_lookup_is_keyed_by_an_element_of_a_parameter() -> None:
    """FalkorDB 4.16 costs a lookup such as ``(n:Memory {id: $rows[j][0]})`` by the size of the
    whole parameter, at each row (a batch write of 500 memories took seconds): every statement
    binds the element first (``WITH $rows[j][0] AS id MATCH (n:Memory {id: id})``)."""
    keyed = re.compile(r"\{\s*\w+\s*:\s*\$\w+\s*\[")
    sources = {path.name: path.read_text() for path in Path(cypher.__file__).parent.glob("*.py")}
    built = {f"write_reserving{flags}": cypher.write_reserving(["SIMILAR_TO"], named=flags[0], unnamed=flags[1],
                                                               counted=flags[2])
             for flags in itertools.product((True, False), repeat=3)}
    found = [(name, m.group()) for name, text in (sources | built).items() for m in keyed.finditer(text)]
    assert found == []
    assert keyed.search("MATCH (n:Memory {id: $rows[j][0]})")  # the pattern finds the old form


def test_a_call_keeps_its_view_and_the_next_call_starts_afresh(shared_atlas: Callable[..., ElasticMemoryAtlas],
                                                                prefixed_url: str,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Within one atlas call (its lock held) the partition comes back without a request; the next
    call asks again and sees what another process wrote in between."""
    atlas = shared_atlas()
    atlas.add_memory("first", namespace="p")
    backend = atlas.backend
    assert isinstance(backend, FalkorDBBackend)
    lock = atlas._state.lock  # the backend's CallLock
    with lock:
        part = backend.partition("p")
        assert isinstance(part, FalkorPartition)
        turn = part.turn
        with round_trips(monkeypatch) as seen:
            assert backend.partition("p") is part and backend.partition("p", create=True) is part
        assert seen == []
    other = ElasticMemoryAtlas(embedder=atlas.embedder, backend=prefixed_url)  # another process
    other.add_memory("second", namespace="p")
    with lock:
        with round_trips(monkeypatch) as seen:
            fresh = backend.partition("p")
            assert fresh is not None and fresh.turn == turn + 1  # read with EXISTS, in the same request
        assert seen == ["EXISTS"]
    assert backend.partition("p") is not None  # outside a call: a fresh view each time, as before
    backend.drop("p")
    with lock:
        assert backend.partition("p") is None


def test_a_write_takes_its_turns_atomically_when_another_process_writes_between(
        shared_atlas: Callable[..., ElasticMemoryAtlas], monkeypatch: pytest.MonkeyPatch) -> None:
    """Another process writes after this write's reads and before its write statement: the
    statement takes the next turns from the counter, so both writes keep turns of their own, and
    the node this write returns carries the turn stored."""
    atlas, other = shared_atlas(), shared_atlas()
    atlas.add_memory("first", namespace="p", session_id="s")
    read_checked = FalkorPartition.read_checked
    between: list[int] = []

    def then_another_write(self: FalkorPartition, statements: Any) -> Any:
        rows = read_checked(self, statements)
        if not between:
            between.append(0)
            between[0] = other.add_memory("in between", namespace="p", session_id="s").turn
        return rows

    monkeypatch.setattr(FalkorPartition, "read_checked", then_another_write)
    node = atlas.add_memory("second", namespace="p", session_id="s")
    monkeypatch.undo()
    part = atlas.backend.partition("p")
    assert between == [2] and node.turn == 3 and part.graph.get_node(node.id).turn == 3 and part.turn == 3
    assert atlas.get(node.id).turn == 3
    assert sorted(n.turn for n in part.graph.nodes()) == [1, 2, 3]


def test_a_namespace_dropped_between_calls_is_made_again_with_its_indexes(
        shared_atlas: Callable[..., ElasticMemoryAtlas], prefixed_url: str) -> None:
    """A write's partition comes back without asking whether its graph exists; when another
    process dropped the graph meanwhile, the write (or any first write of the call) makes the
    graph again with its indexes, as a first write does."""
    from shared_core.store.falkordb import cypher

    atlas = shared_atlas()
    backend = atlas.backend
    assert isinstance(backend, FalkorDBBackend)
    atlas.add_memory("before the drop", namespace="p")
    FalkorDBBackend.from_url(prefixed_url, dim=64).drop("p")  # another process
    node = atlas.add_memory("after the drop", namespace="p")
    part = backend.partition("p")
    assert isinstance(part, FalkorPartition) and [n.id for n in part.graph.nodes()] == [node.id]
    labels = {str(label) for label, _, _ in part.graph_key.read(cypher.INDEXES)}
    assert labels == {"Memory", "Embedding", "Session", "Term"} and node.turn == 1
    assert [h.node.id for h in atlas.retrieve("after the drop", namespace="p", top_k=1)] == [node.id]
    FalkorDBBackend.from_url(prefixed_url, dim=64).drop("p")
    with atlas._state.lock:  # a direct write through a partition handed out for a write
        part = backend.partition("p", create=True)
        assert isinstance(part, FalkorPartition) and not part.checked
        part.graph.put_node(node)
    labels = {str(label) for label, _, _ in part.graph_key.read(cypher.INDEXES)}
    assert labels == {"Memory", "Embedding", "Session", "Term"}


def _before_sources(atlas: ElasticMemoryAtlas, node_id: str) -> list[str]:
    return [e.source for e in atlas.edges(node_id) if e.relation.value == "before" and e.target == node_id]


def test_each_sessions_newest_memory_is_named_and_not_read_before_the_write(
        shared_atlas: Callable[..., ElasticMemoryAtlas], monkeypatch: pytest.MonkeyPatch) -> None:
    """The write statement finds the session's newest memory through the session's node (the
    (:Atlas) node for memories without a session) and names the new one there: the read before
    the write is the neighbour search alone, and no write scans the session."""
    from shared_core.store.falkordb import client

    atlas = shared_atlas()
    first = atlas.add_memories(["oat milk in the coffee", "the train to Lyon"], namespace="p", session_id="s")
    loose = atlas.add_memory("no session here", namespace="p")
    sent: list[str] = []
    command = client.query_command

    def recorded(key: str, query: str, params: Any, *, write: bool = False) -> list[Any]:
        sent.append(query)
        return command(key, query, params, write=write)

    monkeypatch.setattr(client, "query_command", recorded)
    node = atlas.add_memory("oat milk, always oat milk", namespace="p", session_id="s")
    other = atlas.add_memory("still no session", namespace="p")
    monkeypatch.undo()
    assert len(sent) == 4 and sum("queryNodes" in s for s in sent) == 2  # per write: the search, the write
    assert _before_sources(atlas, node.id) == [first[1].id] and _before_sources(atlas, other.id) == [loose.id]
    part = atlas.backend.partition("p")
    assert isinstance(part, FalkorPartition)
    assert part.graph_key.read("MATCH (s:Session) RETURN s.id, s.last") == [["s", node.id]]
    assert part.graph_key.read("MATCH (c:Atlas) RETURN c.last") == [[other.id]]


def test_a_graph_without_session_nodes_links_from_each_sessions_newest(
        shared_atlas: Callable[..., ElasticMemoryAtlas], prefixed_url: str) -> None:
    """A graph written before the sessions' nodes (none, no index): opened again, it gets the index;
    the next write of a session links from its newest memory (found by a scan) and names itself."""
    atlas = shared_atlas()
    olds = atlas.add_memories(["one", "two", "three"], namespace="p", session_id="s")
    loose = atlas.add_memories(["x", "y"], namespace="p")
    part = atlas.backend.partition("p")
    assert isinstance(part, FalkorPartition)
    graph = part.graph_key
    graph.write("MATCH (s:Session) DELETE s")
    graph.write("MATCH (c:Atlas) SET c.last = null, c.lastpos = null")
    graph.write("DROP INDEX ON :Session(id)")
    again = shared_atlas()  # another process, opening the graph as this version first sees it
    node = again.add_memory("four", namespace="p", session_id="s")
    other = again.add_memory("z", namespace="p")
    assert _before_sources(again, node.id) == [olds[2].id] and _before_sources(again, other.id) == [loose[1].id]
    assert "Session" in {str(label) for label, _, _ in graph.read(cypher.INDEXES)}
    assert graph.read("MATCH (s:Session) RETURN s.id, s.last") == [["s", node.id]]


def test_a_forgotten_or_moved_newest_memory_is_not_linked_from(
        shared_atlas: Callable[..., ElasticMemoryAtlas]) -> None:
    """The session's node names a memory that was forgotten, or moved before others: the next
    write links from the session's newest memory as it is now."""
    atlas = shared_atlas()
    a, b, c = atlas.add_memories(["one", "two", "three"], namespace="p", session_id="s")
    atlas.forget(c.id, namespace="p")
    d = atlas.add_memory("four", namespace="p", session_id="s")
    assert _before_sources(atlas, d.id) == [b.id]
    part = atlas.backend.partition("p")
    assert isinstance(part, FalkorPartition)
    part.sessions["s"] = dict.fromkeys([a.id, d.id, b.id])  # d moved before b: b is the newest
    e = atlas.add_memory("five", namespace="p", session_id="s")
    assert _before_sources(atlas, e.id) == [b.id]


def test_two_writers_of_one_session_make_one_chain(shared_atlas: Callable[..., ElasticMemoryAtlas]) -> None:
    """Two atlases (as two processes) writing one session at once: each memory follows the one
    stored just before it, whichever wrote it (the newest is found and moved in the write's own
    atomic statement), so the session is one chain, never a fork."""
    import threading

    writers = [shared_atlas(), shared_atlas()]
    writers[0].add_memory("start", namespace="p", session_id="s")

    def write(atlas: ElasticMemoryAtlas, name: str) -> None:
        for i in range(15):
            atlas.add_memory(f"{name} note {i}", namespace="p", session_id="s")

    threads = [threading.Thread(target=write, args=(atlas, f"w{k}")) for k, atlas in enumerate(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    atlas = writers[0]
    ordered = atlas.memories(namespace="p", session_id="s")
    assert len(ordered) == 31
    for previous, node in itertools.pairwise(ordered):
        assert _before_sources(atlas, node.id) == [previous.id], node.content


@pytest.mark.parametrize("linked", [True, False])
def test_a_batch_in_several_statements_names_each_sessions_newest(shared_atlas: Callable[..., ElasticMemoryAtlas],
                                                                  monkeypatch: pytest.MonkeyPatch,
                                                                  linked: bool) -> None:
    """A batch larger than one statement (here two memories a statement), with edges or none:
    the last statement names each session's newest memory, and the next write links from it."""
    from shared_core.store.falkordb import writes

    atlas = shared_atlas(similar_top=3 if linked else 0, link_temporal=linked)
    monkeypatch.setattr(writes, "_ROWS", 2)
    nodes = atlas.add_memories([{"content": f"note {i}", "session_id": "s" if i % 2 else None} for i in range(5)],
                               namespace="p")
    monkeypatch.undo()
    part = atlas.backend.partition("p")
    assert isinstance(part, FalkorPartition)
    assert part.graph_key.read("MATCH (s:Session) RETURN s.id, s.last") == [["s", nodes[3].id]]
    assert part.graph_key.read("MATCH (c:Atlas) RETURN c.last") == [[nodes[4].id]]
    node = shared_atlas().add_memory("next", namespace="p", session_id="s")
    assert _before_sources(atlas, node.id) == [nodes[3].id]
    if linked:
        assert _before_sources(atlas, nodes[3].id) == [nodes[1].id]


def test_a_write_sent_again_after_its_reply_was_lost_is_stored_once(
        shared_atlas: Callable[..., ElasticMemoryAtlas], monkeypatch: pytest.MonkeyPatch) -> None:
    """A write statement whose reply is lost is sent again (`Connection._retrying`). Its edges are
    created without looking for old ones (the memories are new), so the second run must write
    nothing: it finds the first memory stored, and the write returns the memories as the first run
    stored them (no second turn, no edge twice, the counts once)."""
    atlas = shared_atlas()
    atlas.add_memories(["oat milk in the coffee", "the train to Lyon", "oat milk again"], namespace="p",
                       session_id="s")
    run_once = Connection._run_once

    def twice(self: Connection, key: str, query: str, params: Any, *, write: bool) -> Any:
        if write and query.endswith("RETURN first, [b IN before | b[0]]"):  # the write statement
            run_once(self, key, query, params, write=write)  # its reply lost
        return run_once(self, key, query, params, write=write)

    monkeypatch.setattr(Connection, "_run_once", twice)
    node = atlas.add_memory("oat milk, always oat milk", namespace="p", session_id="s")
    monkeypatch.undo()
    part = atlas.backend.partition("p")
    assert isinstance(part, FalkorPartition)
    stored = [n for n in part.graph.nodes() if n.content == node.content]
    assert [n.id for n in stored] == [node.id] and stored[0].turn == node.turn == part.turn == 4
    edges = [(e.source, e.target, e.relation) for e in part.graph.edges(node.id)]
    assert len(edges) == len(set(edges)) and "before" in {e[2].value for e in edges}
    assert part.graph_key.read("MATCH (e:Embedding {id: $id}) RETURN count(e)", {"id": node.id}) == [[1]]
    assert part.graph_key.read("MATCH (c:Atlas) RETURN c.docs") == [[4]]


@pytest.mark.parametrize("refused", [1, 3])
def test_a_vector_query_refused_as_not_ready_is_asked_again_in_every_request(
        shared_atlas: Callable[..., ElasticMemoryAtlas], monkeypatch: pytest.MonkeyPatch, refused: int) -> None:
    """Right after a graph's indexes are made the server has been seen to refuse a valid vector
    query ("Invalid arguments for procedure 'db.idx.vector.queryNodes'") and answer it next: a
    write's read request (with EXISTS) and a recall's (its first, with the view, and the walk's)
    ask again as a whole until it answers, instead of failing the call. The refusal is provoked
    by sending the first queries' vector as a plain list, which the server refuses with that
    message."""
    from shared_core.store.falkordb import client

    atlas = shared_atlas()
    atlas.add_memories(["oat milk in the coffee", "the train to Lyon", "a walk by the river"], namespace="p")
    atlas.retrieve("oat milk", namespace="p")  # the recall's view is now handed out ahead
    left = {"n": 0}

    def refused_once(commands: Any) -> Any:  # this send's vector queries with a plain list
        if left["n"] <= 0 or not any("queryNodes" in str(c) for command in commands for c in command):
            return commands
        left["n"] -= 1
        return [[c.replace("vecf32($", "($") if isinstance(c, str) else c for c in command] for command in commands]

    spread, send = client._Lane.spread, client.Connection._send
    # the window being provoked: the vector index not built yet (a refusal once it is built is the
    # query's own, raised at once: `test_invalid_vector_query.py`)
    monkeypatch.setattr(client.Connection, "built", lambda self, key: False)
    monkeypatch.setattr(client._Lane, "spread", lambda self, commands: spread(self, refused_once(commands)))
    monkeypatch.setattr(client.Connection, "_send", lambda self, commands: send(self, refused_once(commands)))
    left["n"] = refused
    node = atlas.add_memory("oat milk, always oat milk", namespace="p")
    assert left["n"] == 0
    left["n"] = refused
    hits = atlas.retrieve("oat milk", namespace="p", top_k=2)
    assert left["n"] == 0
    monkeypatch.undo()
    assert node.id in {h.id for h in hits} and atlas.get(node.id, namespace="p").id == node.id
