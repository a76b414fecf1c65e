"""A recall's reinforcement written behind (`Connection.write_behind`, `FalkorPartition.reinforce_many`):
its rows read ahead of the write by the write's own expressions, the write's reply read before the
process's next command, a refusal or a lost reply logged."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest

from shared_core import ElasticMemoryAtlas, ManualClock
from shared_core.store.falkordb import FalkorDBBackend, FalkorPartition
from shared_core.store.falkordb import cypher as q
from shared_core.store.falkordb.client import Connection
from shared_core.store.falkordb.reinforce import INPUTS, LN2, Inputs, reinforced_weight_of
from shared_core.store.falkordb.replication import Confirmations

from ._probes import round_trips

TEXTS = ["oat milk in the coffee", "the train to Lyon leaves at nine", "oat milk again, always oat milk",
         "a walk by the river", "coffee with oat milk at the station", "the river flooded the station"]


def _backend(atlas: ElasticMemoryAtlas) -> FalkorDBBackend:
    backend = atlas.backend
    assert isinstance(backend, FalkorDBBackend)
    return backend


def _owed(conn: Connection) -> int:
    """Replies the connection has still to read."""
    lane = conn._lane
    assert lane is not None
    return sum(len(queries) for _, queries, _ in lane._owed)


def test_a_recall_goes_on_before_its_reinforcement_is_written_and_the_next_command_sees_it(
        shared_atlas: Callable[..., ElasticMemoryAtlas], clock: ManualClock,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """`retrieve` returns with the write's reply unread; the reinforced nodes it returns are what
    the server then holds, which the next command (any) reads."""
    atlas = shared_atlas(half_life=3_600.0)
    atlas.add_memories(TEXTS, namespace="p", session_id="s")
    clock.advance(600)
    atlas.retrieve("oat milk", namespace="p", top_k=2, reinforce=False)
    conn = _backend(atlas).conn
    with round_trips(monkeypatch) as waited:  # as before: the write statement, its reply waited for
        monkeypatch.setattr(Connection, "write_behind", lambda *args, **kwargs: None)
        atlas.retrieve("oat milk coffee", namespace="p", top_k=3)
        monkeypatch.undo()
    assert _owed(conn) == 0
    clock.advance(60)
    with round_trips(monkeypatch) as seen:
        hits = atlas.retrieve("oat milk coffee", namespace="p", top_k=3)
    assert _owed(conn) == 1 and len(seen) == len(waited)  # the write's reply not waited for; no request more
    assert all(h.node.embedding is not None for h in hits)  # the vectors came with the rows read ahead
    for hit in hits:
        stored = atlas.get(hit.node.id, namespace="p")
        assert _owed(conn) == 0
        assert stored is not None and stored.access_count == hit.node.access_count >= 1
        assert (stored.weight, stored.last_accessed_at, stored.accessed_turn) == (
            hit.node.weight, hit.node.last_accessed_at, hit.node.accessed_turn)
        assert stored.last_accessed_at == clock.now()
        assert stored.weight > 1.0  # reinforced (the decay over 600 s is smaller than the factor)
    context = atlas.build_context("oat milk coffee", namespace="p", token_budget=60)
    assert _owed(conn) == 1
    shown = [m.node for m in context.memories if m.paths not in (("working",), ("neighbour",))]
    assert shown and all((atlas.get(n.id, namespace="p").weight, atlas.get(n.id, namespace="p").access_count)
                         == (n.weight, n.access_count) for n in shown)


@pytest.mark.parametrize(("decay_unit", "weight_model"),
                         [("seconds", "simple"), ("turns", "simple"), ("seconds", "rich"), ("turns", "rich")])
def test_the_rows_read_ahead_are_the_rows_the_write_returns(
        shared_atlas: Callable[..., ElasticMemoryAtlas], clock: ManualClock, decay_unit: str,
        weight_model: str) -> None:
    """`cypher.rescale_preview` gives, cell for cell, what `cypher.batch_rescale` returns when it
    writes next (pinned, decayed, capped and never-accessed memories among them)."""
    atlas = shared_atlas(decay_unit=decay_unit, weight_model=weight_model, half_life=1_000.0, weight_cap=1.5)
    nodes = atlas.add_memories([TEXTS[0], {"content": TEXTS[1], "pinned": True, "importance": 0.7}, *TEXTS[2:]],
                               namespace="p")
    clock.advance(777.3)
    atlas.add_memory("one more turn", namespace="p")
    atlas.retrieve("oat milk", namespace="p", top_k=3)  # some reinforced once already (one to the cap)
    clock.advance(123.4)
    part = _backend(atlas).partition("p")
    assert isinstance(part, FalkorPartition)
    config = atlas.config
    params = {"ids": [n.id for n in nodes], "now": clock.now(), "factor": config.reinforce_factor,
              "ln2": 0.6931471805599453, "half_life": config.half_life, "floor": config.weight_floor,
              "cap": config.weight_cap, "recency_gain": 0.5}
    ahead = part.graph_key.read(q.rescale_preview(decay_unit, weight_model), params)
    written = part.graph_key.write(q.batch_rescale(decay_unit, weight_model, reinforce=True), params)
    assert len(ahead) == len(nodes) and ahead == written


def test_the_nodes_returned_are_those_of_a_write_waited_for(
        shared_atlas: Callable[..., ElasticMemoryAtlas], clock: ManualClock) -> None:
    """The same recalls on two copies of a namespace, one reinforced behind, one waiting for each
    write (as on a cluster): the same hits, the same nodes, the same stored weights."""
    behind, waited = shared_atlas(half_life=5_000.0), shared_atlas(half_life=5_000.0)
    for ns in ("a", "b"):
        behind.add_memories(TEXTS, namespace=ns, session_id="s")
    conn = _backend(waited).conn
    conn.confirmations = Confirmations(wanted=0, timeout=0.1)  # waits for every write's reply (and 0 replicas)
    for query in ("oat milk", "the river station", "coffee", "oat milk coffee"):
        clock.advance(900)
        mine = [(h.node, h.score) for h in behind.retrieve(query, namespace="a", top_k=3)]
        theirs = [(h.node, h.score) for h in waited.retrieve(query, namespace="b", top_k=3)]
        assert _owed(conn) == 0
        assert [(n.content, n.weight, n.access_count, n.last_accessed_at, s) for n, s in mine] == \
            [(n.content, n.weight, n.access_count, n.last_accessed_at, s) for n, s in theirs]
    assert sorted((n.content, n.weight) for n in behind.memories(namespace="a")) == \
        sorted((n.content, n.weight) for n in behind.memories(namespace="b"))


def test_a_write_behind_refused_or_unanswered_is_logged_by_the_next_command(
        shared_atlas: Callable[..., ElasticMemoryAtlas], caplog: pytest.LogCaptureFixture) -> None:
    atlas = shared_atlas()
    atlas.add_memories(TEXTS[:2], namespace="p")
    part = _backend(atlas).partition("p")
    assert isinstance(part, FalkorPartition)
    conn, key = part.graph_key.conn, part.key
    rows = conn.write_behind(key, "MATCH (n:Memory) SET n.weight = 1 / 0 RETURN 1", {},
                             [("MATCH (n:Memory) RETURN count(n)", {})])
    assert rows == [[[2]]] and _owed(conn) == 1
    with caplog.at_level(logging.ERROR, logger="shared_core"):
        assert atlas.count(namespace="p") == 2  # the next command reads the refusal first
    assert _owed(conn) == 0
    assert [r.levelno for r in caplog.records] == [logging.ERROR] and key in caplog.records[0].getMessage()
    caplog.clear()
    conn.write_behind(key, "MATCH (n:Memory) SET n.weight = 2.0 RETURN count(n)", {})
    lane = conn._lane
    assert lane is not None
    lane._owed[0][0].disconnect()  # the reply lost with its connection
    with caplog.at_level(logging.ERROR, logger="shared_core"):
        assert atlas.count(namespace="p") == 2  # a new connection serves the next command
    assert "may or may not have run" in caplog.records[0].getMessage() and _owed(conn) == 0


def test_nothing_is_sent_behind_where_each_reply_is_waited_for(
        shared_atlas: Callable[..., ElasticMemoryAtlas]) -> None:
    """With ``?replicas=N`` a write's ``WAIT`` follows its reply: `write_behind` sends nothing and
    says so (None), and the reinforcement is the write waited for."""
    atlas = shared_atlas()
    atlas.add_memories(TEXTS[:3], namespace="p")
    part = _backend(atlas).partition("p")
    assert isinstance(part, FalkorPartition)
    conn = part.graph_key.conn
    conn.confirmations = Confirmations(wanted=0, timeout=0.1)
    assert conn.write_behind(part.key, "MATCH (n:Memory) SET n.weight = 2.0", {}) is None
    assert {n.weight for n in atlas.memories(namespace="p")} == {1.0}
    hits = atlas.retrieve("oat milk", namespace="p", top_k=2)
    assert _owed(conn) == 0 and hits[0].node.access_count == 1


@pytest.mark.parametrize(("decay_unit", "weight_model"),
                         [("seconds", "simple"), ("turns", "simple"), ("seconds", "rich"), ("turns", "rich")])
def test_a_reinforcement_computed_here_gives_the_writes_digits(
        shared_atlas: Callable[..., ElasticMemoryAtlas], clock: ManualClock, decay_unit: str,
        weight_model: str) -> None:
    """What `reinforce.INPUTS` reads, run through `reinforced_weight_of` here and written with 15
    digits, is the weight the write then returns, for memories decayed, pinned, capped, of other
    importances, reinforced before or never."""
    atlas = shared_atlas(decay_unit=decay_unit, weight_model=weight_model, half_life=1_000.0, weight_cap=2.5)
    texts = [f"{t} number {i}" for i in range(4) for t in TEXTS]
    nodes = atlas.add_memories([{"content": t, "importance": 0.3 + 0.17 * (i % 7), "pinned": i % 9 == 4}
                                for i, t in enumerate(texts)], namespace="p")
    for step in range(6):
        clock.advance(97.3 * step + 0.123)
        atlas.retrieve(TEXTS[step % len(TEXTS)], namespace="p", top_k=5)
        atlas.add_memory(f"turn {step}", namespace="p")
    clock.advance(311.7)
    part = _backend(atlas).partition("p")
    assert isinstance(part, FalkorPartition)
    ids = [n.id for n in nodes]
    inputs = {str(r[0]): Inputs.of_row(r) for r in part.graph_key.read(INPUTS, {"ids": ids})}
    assert set(inputs) == set(ids)
    ahead = {str(r[0]): Inputs.of_node_row(r, 0) for r in part.graph_key.read(q.NODES_AHEAD, {"ids": ids})}
    config, now = atlas.config, clock.now()
    params = {"ids": ids, "now": now, "factor": config.reinforce_factor, "ln2": LN2, "half_life": config.half_life,
              "floor": config.weight_floor, "cap": config.weight_cap, "recency_gain": 0.5}
    written = {str(r[0]): float(r[3]) for r in
               part.graph_key.write(q.batch_rescale(decay_unit, weight_model, reinforce=True), params)}
    computed = {i: float(format(reinforced_weight_of(v, now=now, config=config), ".15g"))
                for i, v in inputs.items() if v is not None}
    assert computed == written and len(set(computed.values())) > 5
    for i, v in ahead.items():  # the hops' rows read the same (the turn aside: the call's own)
        w = inputs[i]
        assert v is not None and w is not None
        assert (v.weight, v.importance, v.access_count, v.accessed_turn, v.last_accessed_at, v.pinned) == (
            w.weight, w.importance, w.access_count, w.accessed_turn, w.last_accessed_at, w.pinned)


def test_build_context_reinforces_what_it_shows_without_a_request(
        shared_atlas: Callable[..., ElasticMemoryAtlas], clock: ManualClock,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Its context windows' request read what reinforcing its hits needs: the reinforcement is the
    write alone, sent behind (a request fewer than reading its rows first), the same nodes."""
    atlas = shared_atlas(half_life=3_600.0)
    atlas.add_memories(TEXTS, namespace="p", session_id="s")
    atlas.add_memories(TEXTS, namespace="q", session_id="s")
    clock.advance(600)
    atlas.retrieve("oat milk", namespace="p", top_k=2, reinforce=False)
    atlas.retrieve("oat milk", namespace="q", top_k=2, reinforce=False)
    conn = _backend(atlas).conn
    reads: list[int] = []  # the reads each write sent behind waited for
    behind = Connection.write_behind

    def recorded(self: Connection, key: str, query: str, params: Any, ahead: Any = ()) -> Any:
        reads.append(len(ahead))
        return behind(self, key, query, params, ahead)

    monkeypatch.setattr(Connection, "write_behind", recorded)
    mine = atlas.build_context("oat milk coffee", namespace="p", token_budget=60)
    assert _owed(conn) == 1 and reads == [0]  # the write alone: nothing waited for
    with monkeypatch.context() as patch:  # as if the windows had not read them: the rows read ahead of the write
        patch.setattr(Inputs, "of", classmethod(lambda cls, read: None))
        theirs = atlas.build_context("oat milk coffee", namespace="q", token_budget=60)
    assert reads == [0, 1]
    shown = [(m.node.content, m.node.weight, m.node.access_count, m.node.last_accessed_at) for m in mine.memories]
    assert shown == [(m.node.content, m.node.weight, m.node.access_count, m.node.last_accessed_at)
                     for m in theirs.memories]
    assert mine.text == theirs.text and any(w > 1.0 for _, w, _, _ in shown)
    assert all((atlas.get(m.node.id, namespace="p").weight, atlas.get(m.node.id, namespace="p").access_count)
               == (m.node.weight, m.node.access_count) for m in mine.memories)


def test_retrieve_reinforces_its_hits_without_a_request(
        shared_atlas: Callable[..., ElasticMemoryAtlas], clock: ManualClock,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The walk's hops read what reinforcing the ranked memories needs, the vector search the
    first hits' vectors: `retrieve`'s reinforcement is the write alone, the vectors returned the
    stored ones, the nodes returned the stored ones."""
    atlas = shared_atlas(half_life=3_600.0)
    atlas.add_memories(TEXTS, namespace="p", session_id="s")
    clock.advance(600)
    atlas.retrieve("oat milk", namespace="p", top_k=2, reinforce=False)
    reads: list[int] = []
    behind = Connection.write_behind

    def recorded(self: Connection, key: str, query: str, params: Any, ahead: Any = ()) -> Any:
        reads.append(len(ahead))
        return behind(self, key, query, params, ahead)

    monkeypatch.setattr(Connection, "write_behind", recorded)
    with round_trips(monkeypatch) as seen:
        hits = atlas.retrieve("oat milk coffee", namespace="p", top_k=3)
    assert reads == [0] and len(hits) == 3
    monkeypatch.undo()
    part = _backend(atlas).partition("p")
    assert isinstance(part, FalkorPartition)
    for hit in hits:
        stored = atlas.get(hit.node.id, namespace="p")
        assert (stored.weight, stored.access_count, stored.last_accessed_at) == (
            hit.node.weight, hit.node.access_count, hit.node.last_accessed_at)
        assert hit.node.embedding is not None
        assert hit.node.embedding.tolist() == part.vectors.get_many([hit.node.id])[0].tolist()
    with round_trips(monkeypatch) as waited:  # the rows read first, as when the hops had not read them
        monkeypatch.setattr(Inputs, "of", classmethod(lambda cls, read: None))
        atlas.retrieve("the river", namespace="p", top_k=3)
        monkeypatch.undo()
    assert len(seen) == len(waited)  # the write alone counts as the request it is sent in
