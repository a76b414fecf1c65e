"""The backchannel flag on FalkorDB: a property of each memory's node, written with the batch
(`cypher.WRITE_NODES`), and computed when a graph written before it is opened
(`FalkorGraphStore.backfill_chatter`); the graph's own flag (whether it has ever held a
backchannel, read with each call's counters) lets a walk skip the step over where there is none."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from shared_core import ElasticMemoryAtlas
from shared_core.formulas.chatter import contentless
from shared_core.store.falkordb import cypher as q
from shared_core.store.falkordb.partition import CheckedKey, FalkorPartition

CHAT = ["Kate: I went hiking on Sunday", "Sam: lol", "Kate: the view from the top was great", "Sam: 👍"]


def _graph_flag(atlas: ElasticMemoryAtlas) -> bool | None:
    part = atlas.backend.partition("u")
    assert isinstance(part, FalkorPartition)
    rows = part.graph_key.read("MATCH (c:Atlas) RETURN c.chatter", {})
    return None if rows[0][0] is None else bool(rows[0][0])


def _flags(atlas: ElasticMemoryAtlas) -> dict[str, bool | None]:
    part = atlas.backend.partition("u")
    assert isinstance(part, FalkorPartition)
    rows = part.graph_key.read("MATCH (n:Memory) RETURN n.content, n.chatter", {})
    return {str(content): flag for content, flag in rows}


def test_an_older_graph_gets_the_flag_when_it_is_opened(shared_atlas: Callable[..., ElasticMemoryAtlas]) -> None:
    writer = shared_atlas()
    writer.add_memories(CHAT, namespace="u", session_id="s")
    assert _flags(writer) == {text: contentless(text) for text in CHAT}  # written with the batch
    assert _graph_flag(writer) is True
    part = writer.backend.partition("u")
    assert isinstance(part, FalkorPartition)
    # as a graph written before the flag
    part.graph_key.write("MATCH (n:Memory) SET n.chatter = null WITH count(*) AS _ MATCH (c:Atlas) "
                         "SET c.chatter = null", {})
    assert set(_flags(writer).values()) == {None} and _graph_flag(writer) is None
    reader = shared_atlas()  # another process opens the graph
    assert _flags(reader) == {text: contentless(text) for text in CHAT}
    assert _graph_flag(reader) is True
    opened = reader.backend.partition("u")
    assert opened is not None
    assert {n.content: opened.graph.is_chatter(n.id) for n in opened.graph.nodes()} == \
        {text: contentless(text) for text in CHAT}


def _walk_hops(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The walk hop statements every `CheckedKey.read_many` sends from now on."""
    sent: list[str] = []
    original = CheckedKey.read_many

    def spy(self: CheckedKey, statements: Sequence[tuple[str, Any]], *args: Any, **kwargs: Any) -> Any:
        sent.extend(s for s, _ in statements if s in (q.WALK_HOP, q.WALK_HOP_THROUGH))
        return original(self, statements, *args, **kwargs)

    monkeypatch.setattr(CheckedKey, "read_many", spy)
    return sent


def test_a_walk_steps_over_only_in_a_graph_that_has_held_a_backchannel(
        shared_atlas: Callable[..., ElasticMemoryAtlas], monkeypatch: pytest.MonkeyPatch) -> None:
    reader, writer = shared_atlas(), shared_atlas()
    facts = ["Kate: I went hiking on Sunday", "Kate: the view from the top was great",
             "Kate: next week I am going to Lisbon"]
    writer.add_memories(facts, namespace="u", session_id="s")
    assert _graph_flag(writer) is False
    hops = _walk_hops(monkeypatch)
    before = [h.node.content for h in reader.retrieve("hiking on Sunday", namespace="u", top_k=3)]
    assert hops and set(hops) == {q.WALK_HOP}  # no backchannel: the plain hop, no OPTIONAL MATCH
    writer.add_memory("Sam: lol", namespace="u", session_id="s")  # another process writes one
    assert _graph_flag(writer) is True
    hops.clear()
    after = [h.node.content for h in reader.retrieve("hiking on Sunday", namespace="u", top_k=4)]
    assert hops and set(hops) == {q.WALK_HOP_THROUGH}  # the reader's next call reads the flag
    assert before[0] == after[0] == facts[0] and "Sam: lol" not in after[:1]
