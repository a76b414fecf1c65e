"""Hostile save files, loaded into every backend: crafted records with valid checksums, JSON nested
thousands deep, a zip bomb. Each raises `CorruptFileError`, leaves the target backend empty and
never balloons memory."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from shared_core import CorruptFileError, ElasticMemoryAtlas, InProcessBackend

from ..unit._crafted import CRAFTED, Change, bomb, rewrite, sign

Make = Callable[..., ElasticMemoryAtlas]
ISSUE = {"weight NaN", "weight -5", "timestamp 1e300", "empty content", "unknown kind", "access_count -1",
         "surrogate content", "deep metadata", "edge to itself", "event time 1e300"}


@pytest.fixture
def saved(make_atlas: Make, tmp_path: Path) -> Path:
    atlas = make_atlas(write_filter=True, write_threshold=0.3)
    atlas.add_memories(["User prefers oat milk", "Ana lives in Porto", "The budget is 4000 euros"], namespace="u",
                       session_id="s")
    atlas.add_memory("ok thanks!", namespace="u", session_id="s")
    atlas.add_memory("Bob's PIN is 4921", namespace="bob", metadata={"type": "secret"})
    atlas.link(*(n.id for n in atlas.memories(namespace="u")[:2]), relation="caused_by")
    return atlas.save(tmp_path / "a.atlas")


@pytest.fixture
def target(make_backend: Callable[[int], Any]) -> Any:
    """An empty backend to load into: a FalkorDB graph prefix of its own, or a fresh in-process one."""
    return make_backend(256) or InProcessBackend(dim=256)


@pytest.mark.parametrize(("name", "change", "fragment"), [c for c in CRAFTED if c[0] in ISSUE],
                         ids=[c[0] for c in CRAFTED if c[0] in ISSUE])
def test_a_crafted_file_leaves_the_backend_empty(saved: Path, target: Any, name: str, change: Change,
                                                 fragment: str) -> None:
    rewrite(saved, change)
    with pytest.raises(CorruptFileError, match=fragment):
        ElasticMemoryAtlas.load(saved, backend=target)
    assert list(target.namespaces()) == []


def test_the_file_loads_whole_into_the_backend(saved: Path, target: Any) -> None:
    atlas = ElasticMemoryAtlas.load(saved, backend=target)
    assert list(target.namespaces()) == ["bob", "u"] and len(atlas) == 4
    assert [h.node.content for h in atlas.retrieve("oat milk", namespace="u", top_k=1)] == ["User prefers oat milk"]


def test_a_backend_that_fails_while_loading_is_emptied(saved: Path, target: Any,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The file is sound; the store fails while building the second namespace: the first is dropped."""
    probe = target.partition("probe", create=True)
    keywords = type(probe.keywords)
    target.drop("probe")
    method = "add_many" if hasattr(keywords, "add_many") else "add"
    real, calls = getattr(keywords, method), []

    def fail_second(self: Any, *args: Any, **kwargs: Any) -> None:
        calls.append(self)
        if len({id(c) for c in calls}) == 2:
            raise ConnectionError("the server went away")
        real(self, *args, **kwargs)

    monkeypatch.setattr(keywords, method, fail_second)
    with pytest.raises(ConnectionError):
        ElasticMemoryAtlas.load(saved, backend=target)
    monkeypatch.undo()
    assert list(target.namespaces()) == []


@pytest.mark.parametrize("depth", [50_000, 990])
def test_json_nested_thousands_deep_is_corrupt(tmp_path: Path, depth: int) -> None:
    path = tmp_path / "deep.atlas"
    sign(path, {"state.json": ('{"events": ' + "[" * depth + "]" * depth + "}").encode()})
    with pytest.raises(CorruptFileError, match="nests deeper"):
        ElasticMemoryAtlas.load(path)
    sign(path, {"state.json": ('{"lifecycle": {"held": [' + "[" * depth + "1" + "]" * depth + "]}}").encode()})
    with pytest.raises(CorruptFileError, match="nests deeper"):
        ElasticMemoryAtlas.load(path)


def test_a_zip_bomb_does_not_balloon_memory(tmp_path: Path) -> None:
    """The issue's bomb: under 400 KB on disk, hundreds of megabytes inflated; the default limit
    (32 MiB plus 100 times the file's size) refuses it before inflating a byte."""
    path = tmp_path / "bomb.atlas"
    bomb(path, 384 << 20)
    assert path.stat().st_size < 400_000
    tracemalloc.start()
    try:
        with pytest.raises(CorruptFileError, match="more than the load's limit"):
            ElasticMemoryAtlas.load(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20
