"""`MemoryService` without MCP: the namespace rule and the shapes of the results."""

from __future__ import annotations

import json
from dataclasses import asdict

import pytest

from shared_core import AtlasConfig, ElasticMemoryAtlas, HashingEmbedder, InvalidInputError, MemoryNotFoundError
from shared_core.apps.mcp import MemoryService
from shared_core.values.errors import NamespaceViolationError


@pytest.fixture
def atlas() -> ElasticMemoryAtlas:
    return ElasticMemoryAtlas(embedder=HashingEmbedder())


def test_the_namespace_comes_from_the_call_or_the_default(atlas: ElasticMemoryAtlas) -> None:
    service = MemoryService(atlas, default_namespace="alice")
    assert service.write("Bob plays the cello", namespace="bob").namespace == "bob"
    assert service.write("Alice plays the oboe").namespace == "alice"  # not bob: nothing carries over
    assert [h.content for h in service.search("plays").memories] == ["Alice plays the oboe"]
    assert [h.content for h in service.search("plays", namespace="bob").memories] == ["Bob plays the cello"]


def test_ids_do_not_cross_namespaces(atlas: ElasticMemoryAtlas) -> None:
    service = MemoryService(atlas, default_namespace="alice")
    bob = service.write("Bob's PIN is 1234", namespace="bob")
    with pytest.raises(MemoryNotFoundError, match="in namespace 'alice'"):
        service.forget(bob.id)
    with pytest.raises(MemoryNotFoundError):
        service.update(bob.id, "Bob's PIN is 0000")
    assert service.forget(bob.id, namespace="bob").id == bob.id


def test_configuration_is_checked(atlas: ElasticMemoryAtlas) -> None:
    with pytest.raises(InvalidInputError, match="default_namespace"):
        MemoryService(atlas, default_namespace=" ")
    with pytest.raises(InvalidInputError, match="fixed_namespace"):
        MemoryService(atlas, fixed_namespace=True)
    with pytest.raises(InvalidInputError, match="default_token_budget"):
        MemoryService(atlas, default_token_budget=0)
    with pytest.raises(InvalidInputError, match="atlas"):
        MemoryService("atlas")  # type: ignore[arg-type]
    with pytest.raises(NamespaceViolationError):
        MemoryService(atlas, default_namespace="a", fixed_namespace=True).stats(namespace="b")


def test_cross_session_recall_is_on_unless_switched_off(atlas: ElasticMemoryAtlas) -> None:
    service = MemoryService(atlas, default_namespace="alice")
    service.write("Alice's passport expires in May", session_id="s1")
    (hit,) = service.search("passport expiry", session_id="s2").memories
    assert hit.other_session and hit.session_id == "s1"
    strict = MemoryService(atlas, default_namespace="alice", cross_session=False)
    assert strict.search("passport expiry", session_id="s2").memories == []


def test_results_are_json_ready(atlas: ElasticMemoryAtlas) -> None:
    service = MemoryService(atlas, default_namespace="alice")
    node = service.write("Alice's cat is called Pixel", session_id="s1", metadata={"type": "pet"},
                         importance=2.0, pinned=True)
    updated = service.update(node.id, "Alice's cat is called Pixel II")
    results = [node, updated, service.read("cat name", session_id="s1"), service.search("cat"),
               service.stats(), service.forget(updated.id)]
    for result in results:
        json.dumps(asdict(result), allow_nan=False)
    stats = service.stats()
    assert (stats.memories, stats.pinned, stats.superseded) == (1, 1, 1)
    assert sum(count for _, _, count in stats.weight_histogram) == 1


def test_memory_write_states_intent_and_passes_the_write_filter() -> None:
    atlas = ElasticMemoryAtlas(config=AtlasConfig.managed(), embedder=HashingEmbedder())
    service = MemoryService(atlas, default_namespace="alice")
    written = service.write("ok, thanks a lot!")  # small talk the filter would hold back from a chat
    assert not written.id.startswith("wm-") and len(atlas) == 1
    assert [h.id for h in service.search("thanks a lot").memories] == [written.id]
    service.forget(written.id)
    assert len(atlas) == 0
