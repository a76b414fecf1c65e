"""FalkorDB graph keys are unambiguous: no (prefix, namespace) pair reaches another pair's graph.

The issue's attack: an atlas on ``?prefix=pp:`` listed namespace ``team2:alice`` of an atlas on
``?prefix=pp:team2:`` and read its memories, and writes went both ways.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from shared_core import ElasticMemoryAtlas, HashingEmbedder, InvalidInputError
from shared_core.store.falkordb import FalkorDBBackend, Settings, parse_url

from ..falkordb._server import drop_all

pytestmark = pytest.mark.falkordb


@pytest.fixture
def base(falkordb_url: str) -> Iterator[tuple[str, list[FalkorDBBackend]]]:
    """A URL and a fresh root prefix; every backend a test opens is listed to be dropped."""
    opened: list[FalkorDBBackend] = []
    yield f"{falkordb_url}?prefix=r{uuid.uuid4().hex[:10]}", opened
    for backend in opened:
        drop_all(backend)


def _atlas(base: tuple[str, list[FalkorDBBackend]], suffix: str) -> ElasticMemoryAtlas:
    url, opened = base
    backend = FalkorDBBackend.from_url(url + suffix, dim=64)
    opened.append(backend)
    return ElasticMemoryAtlas(embedder=HashingEmbedder(dim=64), backend=backend)


def test_nested_prefixes_never_share_a_graph(base: tuple[str, list[FalkorDBBackend]]) -> None:
    outer, inner = _atlas(base, ":"), _atlas(base, ":team2:")
    inner.add_memory("Alice's locker code is 4471", namespace="alice")
    outer.add_memory("outer note about team2", namespace="team2:alice")
    assert outer.namespaces() == ["team2:alice"] and inner.namespaces() == ["alice"]
    assert [n.content for n in outer.memories(namespace="team2:alice")] == ["outer note about team2"]
    assert [n.content for n in inner.memories(namespace="alice")] == ["Alice's locker code is 4471"]
    assert all("4471" not in h.node.content for h in outer.retrieve("locker code", namespace="team2:alice"))
    # a deeper prefix and a namespace that spells the rest of a key are strangers too
    deeper = _atlas(base, ":team2:alice:")
    deeper.add_memory("deepest", namespace="x")
    outer.add_memory("spelled", namespace="team2:alice:x")
    assert deeper.namespaces() == ["x"] and [n.content for n in deeper.memories(namespace="x")] == ["deepest"]
    assert sorted(outer.namespaces()) == ["team2:alice", "team2:alice:x"]
    assert inner.namespaces() == ["alice"]
    outer.backend.drop("team2:alice")
    assert inner.count(namespace="alice") == 1


def test_escapes_in_namespaces_do_not_alias(base: tuple[str, list[FalkorDBBackend]]) -> None:
    atlas = _atlas(base, ":")
    names = ["a:b", "a%3Ab", "a%3ab", "a%b", "a%25b", "a%253Ab", "%", "%25", ":", "%3A"]
    for ns in names:
        atlas.add_memory(f"only {ns}", namespace=ns)
    assert sorted(atlas.namespaces()) == sorted(names)
    for ns in names:
        assert [n.content for n in atlas.memories(namespace=ns)] == [f"only {ns}"]
    keys = {atlas.backend.key(ns) for ns in names}  # type: ignore[attr-defined]
    assert len(keys) == len(names)


def test_a_prefix_must_end_with_a_colon_and_hold_no_control_character(falkordb_url: str) -> None:
    for bad in ("team1", "team1:x", "a%00:", "a%0A:", "a%7F:"):
        with pytest.raises(InvalidInputError, match="prefix"):
            parse_url(f"{falkordb_url}?prefix={bad}")
    for raw in ("team1", "a\x00:", "a\x1f:"):
        with pytest.raises(InvalidInputError, match="prefix"):
            Settings(prefix=raw)
    assert parse_url(f"{falkordb_url}?prefix=").prefix == ""
    assert parse_url(f"{falkordb_url}?prefix=team1:").prefix == "team1:"
