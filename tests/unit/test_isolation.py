"""Namespace isolation, tried adversarially: a secret of namespace A never reaches namespace B."""

from __future__ import annotations

import pytest

from shared_core import ElasticMemoryAtlas, MemoryNotFoundError, NamespaceViolationError

SECRET = "Alice's bank PIN is 4921 and her password is tangerine-42"
QUERIES = [SECRET, "bank PIN", "password", "4921", "tangerine", "Alice", "what is the PIN?", "secret", "x",
           "in May", "last week", "tangerine-42 4921 PIN bank password Alice"]


@pytest.fixture
def two_tenants(atlas: ElasticMemoryAtlas) -> tuple[ElasticMemoryAtlas, str, list[str]]:
    secret = atlas.add_memory(SECRET, namespace="alice", session_id="s1", metadata={"type": "secret"})
    atlas.add_memories([f"Alice note {i} about her bank" for i in range(5)], namespace="alice", session_id="s1")
    bob = atlas.add_memories(["Bob likes trains", "Bob's PIN reminder: ask the bank",
                              "Bob asked about passwords"], namespace="bob", session_id="s1")
    return atlas, secret.id, [n.id for n in bob]


@pytest.mark.parametrize("query", QUERIES)
def test_retrieve_and_context_never_cross(two_tenants, query: str) -> None:  # type: ignore[no-untyped-def]
    atlas, _, bob_ids = two_tenants
    for kwargs in ({}, {"session_id": "s1"}, {"session_id": "s1", "cross_session": True},
                   {"include_history": True}, {"filters": {"type": "secret"}}):
        hits = atlas.retrieve(query, namespace="bob", top_k=50, reinforce=False, **kwargs)
        assert {h.node.id for h in hits} <= set(bob_ids)
        assert all(h.node.namespace == "bob" for h in hits)
        for style in ("timeline", "bullet", "narrative"):
            ctx = atlas.build_context(query, namespace="bob", token_budget=2000, style=style, reinforce=False,
                                      **{k: v for k, v in kwargs.items() if k != "include_history"})
            assert "4921" not in ctx.text and "tangerine" not in ctx.text
            assert {m.node.id for m in (*ctx.memories, *ctx.dropped)} <= set(bob_ids)


def test_no_edge_leads_across(two_tenants) -> None:  # type: ignore[no-untyped-def]
    atlas, secret_id, bob_ids = two_tenants
    with pytest.raises(NamespaceViolationError):
        atlas.link(bob_ids[0], secret_id, relation="related_to")
    with pytest.raises(NamespaceViolationError):
        atlas.link(secret_id, bob_ids[0], relation="caused_by")
    with pytest.raises(NamespaceViolationError):
        atlas.add_memory("sneaky", namespace="bob", links_to=[secret_id])
    for node_id in bob_ids:
        assert all(secret_id not in (e.source, e.target) for e in atlas.edges(node_id))


def test_ids_of_another_namespace_are_unknown_when_a_namespace_is_given(two_tenants) -> None:  # type: ignore[no-untyped-def]
    atlas, secret_id, _ = two_tenants
    for call in (lambda: atlas.get(secret_id, namespace="bob"), lambda: atlas.history(secret_id, namespace="bob"),
                 lambda: atlas.edges(secret_id, namespace="bob"), lambda: atlas.forget(secret_id, namespace="bob"),
                 lambda: atlas.update_memory(secret_id, "overwrite", namespace="bob")):
        with pytest.raises(MemoryNotFoundError) as info:
            call()
        assert "4921" not in str(info.value)
    assert atlas.get(secret_id).content == SECRET  # still there, untouched


def test_counts_and_stats_are_per_namespace(two_tenants) -> None:  # type: ignore[no-untyped-def]
    atlas, _, _ = two_tenants
    assert atlas.count(namespace="bob") == 3
    stats = atlas.stats(namespace="bob")
    assert stats.nodes == 3 and stats.namespaces == 1
    assert stats.nodes_by_kind == {"memory": 3}
    assert [m.content for m in atlas.memories(namespace="bob")] == [
        "Bob likes trains", "Bob's PIN reminder: ask the bank", "Bob asked about passwords"]
    assert atlas.sessions(namespace="bob") == ["s1"]
    assert atlas.retrieve("anything", namespace="carol") == []


def test_end_session_and_similarity_links_stay_inside(atlas: ElasticMemoryAtlas) -> None:
    a = atlas.add_memory("shared words in both tenants", namespace="a", session_id="s")
    b = atlas.add_memory("shared words in both tenants", namespace="b", session_id="s")
    assert atlas.edges(b.id) == []  # identical text elsewhere is not linked
    assert atlas.end_session("s", namespace="b", mode="delete") == 1
    assert atlas.get(a.id).content == "shared words in both tenants"


def test_other_sessions_only_when_asked_and_labelled(atlas: ElasticMemoryAtlas) -> None:
    atlas.add_memory("the dog is called Rex", namespace="u", session_id="s1")
    atlas.add_memory("we talked about the weather", namespace="u", session_id="s2")
    assert atlas.retrieve("dog name", namespace="u", session_id="s2", reinforce=False)[0].node.session_id == "s2"
    hits = atlas.retrieve("dog called Rex", namespace="u", session_id="s2", cross_session=True, reinforce=False)
    rex = next(h for h in hits if "Rex" in h.node.content)
    assert rex.other_session and rex.components["session"] < 1.0
    ctx = atlas.build_context("dog called Rex", namespace="u", session_id="s2", cross_session=True,
                              token_budget=200, style="bullet", reinforce=False)
    assert "(from session s1)" in ctx.text
