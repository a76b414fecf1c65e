"""The backchannel flag (`GraphStore.mark_chatter`): computed once on write, kept by the in-process
graph stores, saved with a chroma directory's records, computed again where it is missing (a save
file, a chroma record written before the flag); and recall's walk stepping over a backchannel."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from shared_core import AtlasConfig, ElasticMemoryAtlas, HashingEmbedder, ManualClock
from shared_core.formulas.chatter import contentless
from shared_core.formulas.scoring import spread_max, step_over
from shared_core.store.memory.graph_store import DictGraphStore, NetworkXGraphStore
from shared_core.values.model import MemoryNode

DATA = Path(__file__).parent / "data"
CHAT = ["Kate: I went hiking on Sunday", "Sam: lol", "Kate: the view from the top was great", "Sam: 👍",
        "Kate: next week I am going to Lisbon"]


def _atlas(**kwargs: object) -> ElasticMemoryAtlas:
    return ElasticMemoryAtlas(config=AtlasConfig(), embedder=HashingEmbedder(dim=64),  # type: ignore[arg-type]
                              clock=ManualClock(1_700_000_000.0), **kwargs)


def _flags(atlas: ElasticMemoryAtlas, namespace: str = "u") -> dict[str, bool]:
    part = atlas.backend.partition(namespace)
    assert part is not None
    return {n.content: part.graph.is_chatter(n.id) for n in part.graph.nodes()}


@pytest.mark.parametrize("store", [DictGraphStore, NetworkXGraphStore])
def test_a_graph_store_keeps_the_flag_of_its_nodes(store: type[DictGraphStore]) -> None:
    graph = store()
    for i in ("a", "b"):
        graph.put_node(MemoryNode(id=i, content=i, namespace="u"))
    graph.mark_chatter([("a", True), ("b", False), ("ghost", True)])  # an id without a node is not kept
    assert (graph.is_chatter("a"), graph.is_chatter("b"), graph.is_chatter("ghost")) == (True, False, False)
    graph.put_node(MemoryNode(id="a", content="a, replaced", namespace="u"))  # a replaced node keeps it
    assert graph.is_chatter("a")
    graph.mark_chatter([("a", False)])
    assert not graph.is_chatter("a")
    graph.mark_chatter([("b", True)])
    graph.remove_node("b")
    graph.put_node(MemoryNode(id="b", content="b", namespace="u"))  # a new node of the same id: not flagged
    assert not graph.is_chatter("b")


def test_the_write_path_flags_each_memory_once() -> None:
    atlas = _atlas()
    atlas.add_memories(CHAT[:3], namespace="u", session_id="s")
    atlas.add_memory("ok cool", namespace="u", session_id="s", metadata={"speaker": "Sam"})
    assert _flags(atlas) == {CHAT[0]: False, CHAT[1]: True, CHAT[2]: False, "ok cool": True}


def test_a_save_file_computes_the_flags_when_it_loads(tmp_path: Path) -> None:
    atlas = _atlas()
    atlas.add_memories(CHAT, namespace="u", session_id="s")
    path = atlas.save(tmp_path / "chat.atlas")
    loaded = ElasticMemoryAtlas.load(path, embedder=HashingEmbedder(dim=64), clock=ManualClock(1_700_000_000.0))
    assert _flags(loaded) == _flags(atlas) == {text: contentless(text) for text in CHAT}
    for query in ("hiking view", "Lisbon next week"):
        assert [(h.node.id, h.score) for h in loaded.retrieve(query, namespace="u", reinforce=False)] == \
            [(h.node.id, h.score) for h in atlas.retrieve(query, namespace="u", reinforce=False)]


def test_a_save_file_of_the_previous_version_loads_with_its_flags() -> None:
    loaded = ElasticMemoryAtlas.load(DATA / "atlas_v1.atlas", embedder=HashingEmbedder(dim=64),
                                     clock=ManualClock(1_700_000_000.0))
    for ns in ("u", "bob"):
        part = loaded.backend.partition(ns)
        assert part is not None
        nodes = list(part.graph.nodes())
        assert nodes and all(part.graph.is_chatter(n.id) == contentless(n.content, n.metadata) for n in nodes)


def test_a_chroma_record_without_the_flag_gets_it_when_its_namespace_loads(tmp_path: Path) -> None:
    from shared_core.store.chroma import ChromaBackend

    atlas = _atlas(backend=ChromaBackend(tmp_path / "c"))
    atlas.add_memories(CHAT, namespace="u", session_id="s")
    atlas.close()
    with sqlite3.connect(tmp_path / "c" / "elastic_atlas.sqlite3") as db:
        assert db.execute("SELECT count(*) FROM memories WHERE json_extract(record, '$._chat') = 1").fetchone() == (2,)
        # the stored flag is read as it is (here made false for "lol"), and computed where it is missing
        db.execute("UPDATE memories SET record = json_set(record, '$._chat', json('false')) "
                   "WHERE json_extract(record, '$.content') = ?", (CHAT[1],))
        db.execute("UPDATE memories SET record = json_remove(record, '$._chat') "
                   "WHERE json_extract(record, '$.content') <> ?", (CHAT[1],))
    reopened = _atlas(backend=ChromaBackend(tmp_path / "c"))
    assert _flags(reopened) == {text: contentless(text) and text != CHAT[1] for text in CHAT}
    reopened.close()


def test_the_step_replaces_an_edge_to_a_backchannel_and_nothing_else() -> None:
    """`scoring.step_over` under `spread_max`: "Kate: hiking" -> "Sam: lol" -> "Kate: view" is
    one step at the product of the strengths, the backchannel itself is never boosted, and a
    walk without backchannels is unchanged (a node reached twice too: two edges, as before)."""
    edges = {"hike": [("lol", 0.9)], "lol": [("hike", 0.9), ("view", 0.5)], "view": [("lol", 0.5), ("next", 1.0)],
             "next": [("view", 1.0)]}
    stepped = spread_max({"hike": 1.0}, step_over(edges.__getitem__, {"lol"}.__contains__), hops=2, decay=0.5)
    assert stepped == pytest.approx({"view": 0.5 * 0.9 * 0.5, "next": 0.5 * 0.9 * 0.5 * 0.5})
    plain = spread_max({"hike": 1.0}, edges.__getitem__, hops=2, decay=0.5)
    assert plain == pytest.approx({"lol": 0.45, "view": 0.45 * 0.5 * 0.5})
    assert spread_max({"hike": 1.0}, step_over(edges.__getitem__, lambda _: False), hops=2, decay=0.5) == plain
    twice = {"a": [("b", 0.5), ("b", 0.9), ("lol", 1.0)], "lol": [("a", 1.0), ("b", 0.7)], "b": []}
    assert step_over(twice.__getitem__, {"lol"}.__contains__)("a") == [("b", 0.5), ("b", 0.9), ("b", 0.7)]
    assert step_over(twice.__getitem__, lambda _: False)("a") == twice["a"]
