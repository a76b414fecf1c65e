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
    """One pipeline of reads (EXISTS with the counters, the neighbour search, the session's newest
    memory) and one write statement (nodes, vector, terms, the turn's reservation and the
    edges), however often the engine asks for the partition within the call."""
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
