"""A client that creates namespaces without end (issue 20, item 3), on every backend.

In process, the byte cap must bound the memory whatever the number of namespaces, and a
namespace whose memories are all forgotten must go. On FalkorDB the byte cap does not apply (the
memory is the server's) and a namespace's graph key stays when it empties (another process may be
writing to it), but an empty namespace is no namespace: it is not listed and frees its place
under ``max_namespaces``, which applies on both.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from mcp import Client

from shared_core import ElasticMemoryAtlas, NamespaceLimitError
from shared_core.apps.mcp import MemoryService, build_server

from ..mcp._helpers import error, ok

Make = Callable[..., ElasticMemoryAtlas]


def test_a_flood_of_namespaces_stays_under_the_byte_cap(make_atlas: Make, backend_name: str) -> None:
    """2,000 namespaces of two writes under a 2 MB cap: the count stays under the cap, matches the
    memories kept, and no empty partition is left behind (before: each namespace was charged its
    reserved vector rows and the cap evicted everything but the newest memory)."""
    if backend_name != "memory":
        pytest.skip("max_bytes bounds this process's memory; on FalkorDB the memories live in the server")
    cap = 2_000_000
    atlas = make_atlas(max_bytes=cap)
    for w in range(2):
        for i in range(2000):
            atlas.add_memory(f"tenant {i} write {w}: the invoice is due", namespace=f"t{i}", session_id="s")
    stats = atlas.stats()
    assert stats.bytes_used <= cap and stats.evictions > 0
    parts = list(atlas.backend.namespaces())
    assert len(parts) == len(atlas.namespaces()) and len(atlas) >= 150  # about 200 tenants kept (before: 1), none empty


def test_forgetting_a_whole_namespace_removes_it(make_atlas: Make, backend_name: str) -> None:
    atlas = make_atlas(max_namespaces=2)
    victim = [atlas.add_memory(f"secret {i}", namespace="victim", session_id="s") for i in range(3)]
    atlas.add_memory("other", namespace="other")
    for node in victim:
        atlas.forget(node.id)
    assert atlas.namespaces() == ["other"] and atlas.count(namespace="victim") == 0
    if backend_name == "memory":
        assert atlas.backend.partition("victim") is None and atlas.stats().bytes_used < 20_000
    atlas.add_memory("newcomer", namespace="new")  # the victim's place under the limit is free
    with pytest.raises(NamespaceLimitError):
        atlas.add_memory("one too many", namespace="victim")
    assert sorted(atlas.namespaces()) == ["new", "other"] and len(atlas) == 2


def test_namespaces_past_the_limit_store_nothing(make_atlas: Make) -> None:
    atlas = make_atlas(max_namespaces=5)
    refused = 0
    for i in range(20):
        try:
            atlas.add_memory(f"hello from tenant {i}", namespace=f"tenant-{i}")
        except NamespaceLimitError as exc:
            assert f"'tenant-{i}'" in str(exc) and "max_namespaces is 5" in str(exc)
            refused += 1
    assert refused == 15 and len(atlas) == 5
    assert sorted(atlas.namespaces()) == [f"tenant-{i}" for i in range(5)]


def test_threads_racing_for_new_namespaces_never_pass_the_limit(make_atlas: Make) -> None:
    atlas = make_atlas(max_namespaces=10)
    stored: list[str] = []
    failures: list[BaseException] = []

    def worker(k: int) -> None:
        for i in range(5):
            try:
                stored.append(atlas.add_memory(f"worker {k} tenant {i}", namespace=f"w{k}-{i}").namespace)
            except NamespaceLimitError:
                pass
            except BaseException as exc:
                failures.append(exc)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures
    assert len(stored) == 10 and sorted(atlas.namespaces()) == sorted(stored)


async def test_an_mcp_client_past_the_limit_gets_a_clear_tool_error(make_atlas: Make) -> None:
    atlas = make_atlas(max_namespaces=1)
    async with Client(build_server(MemoryService(atlas))) as client:
        ok(await client.call_tool("memory_write", {"content": "first", "namespace": "alice"}))
        message = error(await client.call_tool("memory_write", {"content": "second", "namespace": "mallory"}))
    assert "'mallory'" in message and "max_namespaces is 1" in message
    assert atlas.namespaces() == ["alice"] and len(atlas) == 1
