"""How often a write asks the server, and what one atlas call may keep of what it read."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from shared_core import ElasticMemoryAtlas
from shared_core.store.falkordb import FalkorDBBackend, FalkorPartition
from shared_core.store.falkordb.client import Connection


@contextmanager
def _round_trips(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """What each request to the server was (every command, pipeline or query goes through
    `Connection._retrying`, once per attempt)."""
    seen: list[str] = []
    retrying = Connection._retrying

    def counted(self: Connection, call: Callable[[], Any], what: str, *, budget: float | None = None) -> Any:
        seen.append(what)
        return retrying(self, call, what, budget=budget)

    with monkeypatch.context() as patch:
        patch.setattr(Connection, "_retrying", counted)
        yield seen


def test_an_add_memory_asks_the_server_twice(shared_atlas: Callable[..., ElasticMemoryAtlas],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """One pipeline of reads (EXISTS, the neighbour search with the superseded count, the
    session's newest memory) and one write statement (nodes, vector, terms, the turn's
    reservation and the edges), however often the engine asks for the partition within the call."""
    atlas = shared_atlas()
    atlas.add_memories(["oat milk in the coffee", "the train to Lyon", "oat milk again"], namespace="p",
                       session_id="s")
    with _round_trips(monkeypatch) as seen:
        node = atlas.add_memory("oat milk, always oat milk", namespace="p", session_id="s")
    assert seen == ["EXISTS", "a query"]
    links = {(e.relation.value, e.source == node.id) for e in atlas.backend.partition("p").graph.edges(node.id)}
    assert ("before", False) in links and ("similar_to", True) in links  # the edges came with the write


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
        with _round_trips(monkeypatch) as seen:
            assert backend.partition("p") is part and backend.partition("p", create=True) is part
        assert seen == []
    other = ElasticMemoryAtlas(embedder=atlas.embedder, backend=prefixed_url)  # another process
    other.add_memory("second", namespace="p")
    with lock:
        with _round_trips(monkeypatch) as seen:
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
    assert labels == {"Memory", "Embedding", "Session"} and node.turn == 1
    assert [h.node.id for h in atlas.retrieve("after the drop", namespace="p", top_k=1)] == [node.id]
    FalkorDBBackend.from_url(prefixed_url, dim=64).drop("p")
    with atlas._state.lock:  # a direct write through a partition handed out for a write
        part = backend.partition("p", create=True)
        assert isinstance(part, FalkorPartition) and not part.checked
        part.graph.put_node(node)
    assert {str(label) for label, _, _ in part.graph_key.read(cypher.INDEXES)} == {"Memory", "Embedding", "Session"}
