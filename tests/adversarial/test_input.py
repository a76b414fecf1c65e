"""Hostile values on every backend: text that is not valid Unicode, numbers outside what can be
stored, metadata nested without end. Each is refused with an `InvalidInputError` (never a
`UnicodeEncodeError`, `OverflowError` or `RecursionError`) and leaves the atlas exactly as it was;
and a write whose store fails halfway is undone whole."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from shared_core import ElasticMemoryAtlas, InvalidInputError, InvalidMemoryError, MemoryEdge, Relation

from ..unit._state import snapshot

Make = Callable[..., ElasticMemoryAtlas]


def _deep(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth - 1):
        value = {"k": value}
    return value


HOSTILE: list[tuple[str, dict[str, Any]]] = [
    ("lone high surrogate", {"content": "note \ud800 x"}),
    ("lone low surrogate", {"content": "\udfffnote"}),
    ("surrogate and an embedding", {"content": "note \ud800 x", "embedding": True}),
    ("surrogate in metadata", {"metadata": {"who": "\ud800"}}),
    ("surrogate metadata key", {"metadata": {"\udc00": "x"}}),
    ("surrogate session id", {"session_id": "s-\ud800"}),
    ("timestamp 1e20", {"timestamp": 1e20}),
    ("timestamp -1e20", {"timestamp": -1e20}),
    ("timestamp in milliseconds", {"timestamp": 1.7e12}),
    ("timestamp NaN", {"timestamp": float("nan")}),
    ("timestamp infinite", {"timestamp": float("inf")}),
    ("ttl 1e20", {"ttl": 1e20}),
    ("ttl infinite", {"ttl": float("inf")}),
    ("ttl past the year 9999", {"ttl": 2.6e11}),
    ("importance NaN", {"importance": float("nan")}),
    ("importance 1e300", {"importance": 1e300}),
    ("importance -1", {"importance": -1.0}),
    ("metadata 5,000 deep", {"metadata": _deep(5000)}),
    ("metadata 100 deep", {"metadata": _deep(100)}),
    ("metadata NaN", {"metadata": {"x": float("nan")}}),
]


@pytest.mark.parametrize(("name", "change"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_a_hostile_write_is_refused_and_changes_nothing(atlas: ElasticMemoryAtlas, name: str,
                                                       change: dict[str, Any]) -> None:
    atlas.add_memories(["User prefers oat milk", "Ana lives in Porto"], namespace="victim", session_id="s")
    before = snapshot(atlas)
    kwargs: dict[str, Any] = {"content": "a fine memory", **change}
    if kwargs.pop("embedding", None):
        kwargs["embedding"] = np.ones(atlas.embedder.dim, dtype=np.float32)
    for namespace in ("victim", "fresh"):
        with pytest.raises(InvalidInputError):
            atlas.add_memory(namespace=namespace, **kwargs)
        with pytest.raises(InvalidInputError):
            atlas.add_memories(["a good one", kwargs], namespace=namespace)
    old = atlas.memories(namespace="victim")[0]
    correction = {k: v for k, v in kwargs.items() if k in ("content", "metadata", "importance", "session_id")}
    if correction != {"content": "a fine memory"}:
        with pytest.raises(InvalidInputError):
            atlas.update_memory(old.id, **correction)
    assert snapshot(atlas) == before and len(atlas) == 2
    assert [h.node.content for h in atlas.retrieve("oat milk", namespace="victim", top_k=1)] == \
        ["User prefers oat milk"]


def test_hostile_edge_values_are_refused(atlas: ElasticMemoryAtlas) -> None:
    a, b = atlas.add_memories(["first", "second"], namespace="n")
    before = snapshot(atlas)
    for kwargs in ({"strength": float("nan")}, {"strength": 1e400}, {"metadata": {"why": "\ud800"}},
                   {"metadata": _deep(5000)}):
        with pytest.raises(InvalidInputError):
            atlas.link(a.id, b.id, **kwargs)
    assert snapshot(atlas) == before


@pytest.mark.parametrize("where", ["vectors", "keywords"])
def test_a_store_that_fails_after_the_node_is_in_undoes_the_write(atlas: ElasticMemoryAtlas, where: str,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The node is stored; then the vector index, or the keyword index, fails: nothing remains."""
    atlas.add_memories(["User prefers oat milk", "Ana lives in Porto"], namespace="n", session_id="s")
    part = atlas.backend.partition("n")
    assert part is not None
    before = snapshot(atlas)
    store = type(getattr(part, where))
    method = "add" if where == "vectors" or not hasattr(store, "add_many") else "add_many"

    def fail(self: Any, *args: Any, **kwargs: Any) -> None:
        raise MemoryError("the store is full")

    monkeypatch.setattr(store, method, fail)
    with pytest.raises(MemoryError):
        atlas.add_memories(["Bob likes tea", "Ana moved to Lisbon"], namespace="n", session_id="s")
    with pytest.raises(MemoryError):
        atlas.add_memory("Bob likes tea", namespace="n", session_id="s", ttl=60.0)
    monkeypatch.undo()
    assert snapshot(atlas) == before
    assert atlas.add_memory("Bob likes tea", namespace="n", session_id="s").turn == 3


@pytest.mark.parametrize("step", ["supersedes edge", "old version"])
def test_a_correction_whose_last_step_fails_is_undone(atlas: ElasticMemoryAtlas, step: str,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    old, _ = atlas.add_memories(["User prefers oat milk", "Ana lives in Porto"], namespace="n", session_id="s")
    part = atlas.backend.partition("n")
    assert part is not None
    before = snapshot(atlas)
    graph = type(part.graph)
    method = "put_edge" if step == "supersedes edge" else "put_node"
    real = getattr(graph, method)

    def fail(self: Any, item: Any) -> None:
        if (isinstance(item, MemoryEdge) and item.relation is Relation.SUPERSEDES) or \
                (not isinstance(item, MemoryEdge) and item.id == old.id):
            raise MemoryError("the store is full")
        real(self, item)

    monkeypatch.setattr(graph, method, fail)
    with pytest.raises(MemoryError):
        atlas.update_memory(old.id, "User prefers soy milk")
    monkeypatch.undo()
    assert snapshot(atlas) == before
    new = atlas.update_memory(old.id, "User prefers soy milk")
    assert [n.content for n in atlas.history(new.id)] == ["User prefers oat milk", "User prefers soy milk"]


def test_an_out_of_range_time_never_reaches_a_read(make_atlas: Make, tmp_path: Any) -> None:
    """The reads the issue saw fail (to_metadata, build_context, exports, the graph page) work on
    whatever a write accepted."""
    atlas = make_atlas()
    for value in (1e20, -1e20, 1e12):
        with pytest.raises(InvalidInputError):
            atlas.add_memory("when?", namespace="n", timestamp=value)
    atlas.add_memory("in the year 9999", namespace="n", timestamp="9999-12-29T00:00:00+00:00")
    atlas.add_memory("in the year 1", namespace="n", timestamp="0001-01-03T00:00:00")
    assert all(h.to_metadata()["timestamp"] for h in atlas.retrieve("the year", namespace="n"))
    assert atlas.build_context("the year", namespace="n", token_budget=200, style="timeline").text
    atlas.export_jsonl(tmp_path / "a.jsonl")
    assert "year 9999" in atlas.to_html(namespace="n")


def test_a_nul_in_content_is_refused_on_every_backend_with_nothing_stored(atlas: ElasticMemoryAtlas) -> None:
    atlas.add_memory("kept", namespace="n")
    with pytest.raises(InvalidMemoryError, match="NUL"):
        atlas.add_memory("before\x00after", namespace="n")
    with pytest.raises(InvalidMemoryError, match="NUL"):
        atlas.add_memories([{"content": "fine"}, {"content": "bad\x00"}], namespace="n")
    assert len(atlas) == 1 and [r.node.content for r in atlas.retrieve("kept", namespace="n")] == ["kept"]
