"""The backchannel flag on FalkorDB: a property of each memory's node, written with the batch
(`cypher.WRITE_NODES`), and computed when a graph written before it is opened
(`FalkorGraphStore.backfill_chatter`)."""

from __future__ import annotations

from collections.abc import Callable

from shared_core import ElasticMemoryAtlas
from shared_core.formulas.chatter import contentless
from shared_core.store.falkordb.partition import FalkorPartition

CHAT = ["Kate: I went hiking on Sunday", "Sam: lol", "Kate: the view from the top was great", "Sam: 👍"]


def _flags(atlas: ElasticMemoryAtlas) -> dict[str, bool | None]:
    part = atlas.backend.partition("u")
    assert isinstance(part, FalkorPartition)
    rows = part.graph_key.read("MATCH (n:Memory) RETURN n.content, n.chatter", {})
    return {str(content): flag for content, flag in rows}


def test_an_older_graph_gets_the_flag_when_it_is_opened(shared_atlas: Callable[..., ElasticMemoryAtlas]) -> None:
    writer = shared_atlas()
    writer.add_memories(CHAT, namespace="u", session_id="s")
    assert _flags(writer) == {text: contentless(text) for text in CHAT}  # written with the batch
    part = writer.backend.partition("u")
    assert isinstance(part, FalkorPartition)
    part.graph_key.write("MATCH (n:Memory) SET n.chatter = null", {})  # as a graph written before the flag
    assert set(_flags(writer).values()) == {None}
    reader = shared_atlas()  # another process opens the graph
    assert _flags(reader) == {text: contentless(text) for text in CHAT}
    opened = reader.backend.partition("u")
    assert opened is not None
    assert {n.content: opened.graph.is_chatter(n.id) for n in opened.graph.nodes()} == \
        {text: contentless(text) for text in CHAT}
