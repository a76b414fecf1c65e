"""Hostile namespaces and session ids, on both backends: control characters are refused with
`InvalidInputError` before anything is stored, and every accepted namespace, however close it
looks to another (Unicode lookalikes, separators, escapes), keeps its own memories.

The first test is the issue's attack: on FalkorDB, ``add_memory(..., namespace="a\\x00b")`` was
acknowledged and emptied namespace ``"a"``.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable

import pytest

from shared_core import ElasticMemoryAtlas, InvalidInputError

CONTROLS = ["\x00", "\x01", "\t", "\n", "\r", "\x1b", "\x1f", "\x7f"]
LOOKALIKES = [
    "alice", "\u0430lice",  # Cyrillic a
    "ALICE", "al ice", "al  ice", "alice\u200b",  # zero-width space
    "ali\u00a0ce", "\uff41\uff4c\uff49\uff43\uff45",  # no-break space, full-width letters
    unicodedata.normalize("NFC", "jos\u00e9"), unicodedata.normalize("NFD", "jos\u00e9"),
    "team2:alice", "team2%3Aalice", "team2%3aalice", "team2%alice", "team2%253Aalice", "team2",
    "team2:", ":alice", "%", "%25", ":", "a.b", "a/b", "a\\b", "{alice}", "*", "?", "'alice'", '"alice"',
]


@pytest.fixture
def victim(atlas: ElasticMemoryAtlas) -> ElasticMemoryAtlas:
    for i in range(3):
        atlas.add_memory(f"victim fact {i}: the vault code is 77{i}", namespace="a", session_id="s1")
    return atlas


def _namespace_calls(victim: ElasticMemoryAtlas, bad: str) -> list[Callable[[], object]]:
    """Every public path that takes a namespace, called with ``bad``."""
    some_id = victim.memories(namespace="a")[0].id
    return [
        lambda: victim.add_memory("evil", namespace=bad),
        lambda: victim.add_memories(["evil", "twice"], namespace=bad),
        lambda: victim.add_memories([{"content": "evil", "namespace": bad}], namespace="a"),
        lambda: victim.retrieve("vault", namespace=bad),
        lambda: victim.build_context("vault", namespace=bad, token_budget=100),
        lambda: victim.memories(namespace=bad),
        lambda: victim.count(namespace=bad),
        lambda: victim.stats(namespace=bad),
        lambda: victim.end_session("s1", namespace=bad),
        lambda: victim.get(some_id, namespace=bad),
        lambda: victim.forget(some_id, namespace=bad),
        lambda: victim.update_memory(some_id, "overwrite", namespace=bad),
    ]


def _intact(atlas: ElasticMemoryAtlas) -> None:
    assert atlas.count(namespace="a") == 3
    assert atlas.namespaces() == ["a"]
    hits = atlas.retrieve("vault code", namespace="a", top_k=5, reinforce=False)
    assert sorted(h.node.content for h in hits) == [f"victim fact {i}: the vault code is 77{i}" for i in range(3)]


@pytest.mark.parametrize("char", CONTROLS, ids=[f"U+{ord(c):04X}" for c in CONTROLS])
def test_a_control_character_in_a_namespace_is_refused_and_touches_nothing(victim: ElasticMemoryAtlas,
                                                                           char: str) -> None:
    for bad in (f"a{char}b", f"a{char}", f"{char}a", char * 3):
        for call in _namespace_calls(victim, bad):
            with pytest.raises(InvalidInputError, match="control character"):
                call()
    _intact(victim)


@pytest.mark.parametrize("char", CONTROLS, ids=[f"U+{ord(c):04X}" for c in CONTROLS])
def test_a_control_character_in_a_session_id_is_refused_and_touches_nothing(victim: ElasticMemoryAtlas,
                                                                            char: str) -> None:
    bad = f"s1{char}x"
    calls: tuple[Callable[[], object], ...] = (
        lambda: victim.add_memory("evil", namespace="a", session_id=bad),
        lambda: victim.add_memories(["evil"], namespace="a", session_id=bad),
        lambda: victim.add_memories([{"content": "evil", "session_id": bad}], namespace="a"),
        lambda: victim.retrieve("vault", namespace="a", session_id=bad),
        lambda: victim.build_context("vault", namespace="a", session_id=bad, token_budget=100),
        lambda: victim.memories(namespace="a", session_id=bad),
        lambda: victim.end_session(bad, namespace="a", mode="delete"),
    )
    for call in calls:
        with pytest.raises(InvalidInputError, match="control character"):
            call()
    _intact(victim)
    assert {n.session_id for n in victim.memories(namespace="a")} == {"s1"}


@pytest.mark.parametrize("bad", ["a ", " a", "a \u00a0 ", "\u2003a"])
def test_a_namespace_or_session_with_a_leading_or_trailing_space_is_refused(victim: ElasticMemoryAtlas,
                                                                           bad: str) -> None:
    """FalkorDB's range index trims strings: a session ``"s1 "`` was stored and then never found."""
    for call in (lambda: victim.add_memory("evil", namespace=bad),
                 lambda: victim.add_memory("evil", namespace="a", session_id=bad),
                 lambda: victim.retrieve("vault", namespace="a", session_id=bad),
                 lambda: victim.memories(namespace=bad)):
        with pytest.raises(InvalidInputError, match="space"):
            call()
    _intact(victim)


def test_a_lone_surrogate_in_a_namespace_is_refused(victim: ElasticMemoryAtlas) -> None:
    with pytest.raises(InvalidInputError, match="namespace"):
        victim.add_memory("evil", namespace="a\ud800")
    with pytest.raises(InvalidInputError, match="session_id"):
        victim.add_memory("evil", namespace="a", session_id="s\udfff")
    _intact(victim)


def test_lookalike_namespaces_each_keep_their_own_memories(atlas: ElasticMemoryAtlas) -> None:
    assert len(set(LOOKALIKES)) == len(LOOKALIKES)
    for i, ns in enumerate(LOOKALIKES):
        atlas.add_memories([f"secret {i} of tenant {i}", f"second note {i} of tenant {i}"], namespace=ns,
                           session_id=ns)
    assert sorted(atlas.namespaces()) == sorted(LOOKALIKES)
    for i, ns in enumerate(LOOKALIKES):
        assert atlas.count(namespace=ns) == 2, ns
        hits = atlas.retrieve("secret of tenant", namespace=ns, top_k=50, reinforce=False)
        assert sorted(h.node.content for h in hits) == sorted([f"secret {i} of tenant {i}",
                                                                f"second note {i} of tenant {i}"]), ns
        assert {h.node.namespace for h in hits} == {ns}
        ctx = atlas.build_context("secret of tenant", namespace=ns, session_id=ns, token_budget=500,
                                  reinforce=False)
        assert {m.node.namespace for m in ctx.memories} == {ns}
    # deleting one tenant's session leaves every lookalike alone
    atlas.end_session("team2:alice", namespace="team2:alice", mode="delete")
    assert atlas.count(namespace="team2:alice") == 0
    assert all(atlas.count(namespace=ns) == 2 for ns in LOOKALIKES if ns != "team2:alice")


def test_the_adapters_refuse_a_bad_namespace_or_session_through_the_core(victim: ElasticMemoryAtlas) -> None:
    from langchain_atlas import AtlasChatMessageHistory, AtlasRetriever, AtlasStore, create_memory_tools
    from llamaindex_atlas import AtlasRetriever as LlamaRetriever

    for build in (lambda: create_memory_tools(victim, namespace="a\x00b"),
                  lambda: create_memory_tools(victim, namespace="a", session_id="s\n"),
                  lambda: AtlasChatMessageHistory(atlas=victim, namespace="a\x00", session_id="s"),
                  lambda: AtlasChatMessageHistory(atlas=victim, namespace="a", session_id="s\x7f"),
                  lambda: LlamaRetriever(atlas=victim, namespace="a\x00b"),
                  lambda: LlamaRetriever(atlas=victim, namespace="a", session_id="s\x1b")):
        with pytest.raises(InvalidInputError, match="control character"):
            build()
    with pytest.raises(InvalidInputError, match="control character"):
        AtlasRetriever(atlas=victim, namespace="a\x00b").invoke("vault")
    with pytest.raises(InvalidInputError, match="control character"):
        AtlasStore(atlas=victim).put(("a\x01b",), "k", {"text": "evil"})
    _intact(victim)
