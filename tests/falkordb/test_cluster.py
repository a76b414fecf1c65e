"""The backend on a FalkorDB cluster: namespaces spread over the shards, every shard listed.

The contract suite runs whole on a cluster too (``tests/contract/conftest.py``); these tests
check what only a cluster has: several masters, each holding some of the namespaces' graphs.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from shared_core import ElasticMemoryAtlas, HashingEmbedder
from shared_core.store.falkordb import FalkorDBBackend, parse_url

from ._server import drop_all, fresh_prefix, session_cluster


@pytest.fixture(scope="module")
def cluster_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from session_cluster(tmp_path_factory.mktemp("cluster"))


def _masters(url: str) -> list[redis.Redis]:
    settings = parse_url(url)
    seed = redis.Redis(host=settings.host, port=settings.port, decode_responses=True)
    try:
        slots = seed.execute_command("CLUSTER SLOTS")
    finally:
        seed.close()
    return [redis.Redis(host=str(entry[2][0]), port=int(entry[2][1]), decode_responses=True) for entry in slots]


def test_namespaces_spread_over_the_shards_and_every_shard_is_listed(cluster_url: str) -> None:
    prefix = fresh_prefix()
    atlas = ElasticMemoryAtlas(embedder=HashingEmbedder(dim=64), backend=f"{cluster_url}?prefix={prefix}")
    names = [f"user{i}" for i in range(12)]
    try:
        assert atlas.backend.conn.cluster
        for ns in names:
            atlas.add_memories([f"{ns} keeps note {j}" for j in range(3)], namespace=ns)
        holders = []
        for master in _masters(cluster_url):
            try:
                held = [k for k in master.execute_command("GRAPH.LIST") if str(k).startswith(prefix)]
            finally:
                master.close()
            holders.append(len(held))
        assert sum(holders) == len(names)
        assert sum(1 for h in holders if h) >= 2, holders  # 12 keys on one of 3 shards: about 1 in 3^11
        assert sorted(atlas.backend.namespaces()) == sorted(names)
        for ns in names:  # each namespace answers with its own memories only
            hits = atlas.retrieve("keeps note", namespace=ns, top_k=5)
            assert {h.node.namespace for h in hits} == {ns}
            assert all(h.node.content.startswith(f"{ns} ") for h in hits)
    finally:
        assert isinstance(atlas.backend, FalkorDBBackend)
        drop_all(atlas.backend)
