"""``?replicas=N``: every write waits until N replicas of its shard confirm it (``WAIT``), and an
atlas call whose writes too few replicas confirmed raises `ReplicationError` once it is complete.

The cluster is ``make test``'s (three masters, a replica each) or one started for the module.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from shared_core import ElasticMemoryAtlas, HashingEmbedder, InvalidInputError, ReplicationError
from shared_core.store.falkordb import FalkorDBBackend, parse_url
from shared_core.store.falkordb.calls import CallLock
from shared_core.store.falkordb.client import graph_key

from ._server import drop_all, fresh_prefix, session_cluster


@pytest.fixture(scope="module")
def cluster_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from session_cluster(tmp_path_factory.mktemp("cluster"))


@pytest.mark.parametrize("query, message", [
    ("replicas=-1", "replicas must be an int in 0..64"),
    ("replicas=65", "replicas must be an int in 0..64"),
    ("replicas=1.5", "replicas='1.5' is not an integer"),
    ("replicas=one", "replicas='one' is not an integer"),
    ("replica_timeout=0", "replica_timeout must be a number of seconds"),
    ("replica_timeout=nan", "replica_timeout must be a number of seconds"),
    ("replica_timeout=inf", "replica_timeout must be a number of seconds"),
    ("replica_timeout=soon", "replica_timeout='soon' is not a number"),
])
def test_bad_replica_options_are_refused_before_connecting(query: str, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        parse_url(f"falkordb://127.0.0.1:1?{query}")  # port 1: nothing listens; never reached


@pytest.mark.parametrize("kwargs", [{"replicas": True}, {"replicas": -2}, {"replicas": "1"},
                                    {"replica_timeout": -1.0}, {"replica_timeout": False}])
def test_bad_replica_keywords_are_refused_before_connecting(kwargs: dict[str, object]) -> None:
    with pytest.raises(InvalidInputError, match="replica"):
        FalkorDBBackend.from_url("falkordb://127.0.0.1:1", dim=8, **kwargs)  # type: ignore[arg-type]


def test_the_keyword_replaces_the_urls_option(falkordb_url: str) -> None:
    backend = FalkorDBBackend.from_url(f"{falkordb_url}?replicas=3&replica_timeout=9", dim=8, replicas=0)
    try:
        assert (backend.settings.replicas, backend.settings.replica_timeout) == (0, 9.0)
        assert backend.conn.confirmations is None
        lock = backend.attach(dim=8, config=None)  # no replicas asked: a lock that confirms nothing
        assert type(lock) is CallLock and backend.attach(dim=8, config=None) is lock
    finally:
        backend.close()


def test_a_write_no_replica_confirms_is_kept_on_the_master_and_raises(falkordb_url: str) -> None:
    """One server, no replica: ``replicas=1`` can never be met. The call completes, raises
    `ReplicationError` (also a `BackendError`) naming the shortfall, and undoes nothing."""
    url = f"{falkordb_url}?prefix={fresh_prefix()}&replicas=1&replica_timeout=0.05"
    atlas = ElasticMemoryAtlas(embedder=HashingEmbedder(dim=64), backend=url)
    try:
        with pytest.raises(ReplicationError, match=r"on the master but 0 of 1 replica\(s\) confirmed it") as info:
            atlas.add_memory("oat milk, not cow's milk", namespace="alice")
        assert (info.value.confirmed, info.value.wanted) == (0, 1)
        assert info.value.key == graph_key(atlas.backend.settings.prefix, "alice")  # type: ignore[attr-defined]
        plain = ElasticMemoryAtlas(embedder=HashingEmbedder(dim=64), backend=url.replace("&replicas=1", ""))
        hits = plain.retrieve("milk", namespace="alice", top_k=3)
        assert [h.node.content for h in hits] == ["oat milk, not cow's milk"]
        assert plain.backend.partition("alice").graph.node_count() == 1  # type: ignore[union-attr]
        plain.backend.close()  # type: ignore[attr-defined]
    finally:
        assert isinstance(atlas.backend, FalkorDBBackend)
        drop_all(atlas.backend)


def _shard(url: str, key: str) -> tuple[redis.Redis, list[redis.Redis]]:
    """The master holding ``key`` and its replicas, as plain clients."""
    settings = parse_url(url)
    seed = redis.Redis(host=settings.host, port=settings.port, decode_responses=True)
    try:
        slot = int(seed.execute_command("CLUSTER KEYSLOT", key))
        for start, end, master, *replicas in seed.execute_command("CLUSTER SLOTS"):
            if start <= slot <= end:
                return (redis.Redis(host=master[0], port=master[1], decode_responses=True),
                        [redis.Redis(host=r[0], port=r[1], decode_responses=True) for r in replicas])
    finally:
        seed.close()
    raise AssertionError(f"no shard serves slot {slot}")


def _waits(node: redis.Redis) -> int:
    return int(node.info("commandstats").get("cmdstat_wait", {}).get("calls", 0))


def test_on_a_cluster_an_acknowledged_write_is_on_the_replica(cluster_url: str) -> None:
    prefix = fresh_prefix()
    atlas = ElasticMemoryAtlas(embedder=HashingEmbedder(dim=64), backend=f"{cluster_url}?prefix={prefix}&replicas=1")
    try:
        master, replicas = _shard(cluster_url, graph_key(prefix, "bob"))
        assert replicas, "the cluster needs a replica per master (make test's has one)"
        before = _waits(master)
        node = atlas.add_memory("Bob's flight lands at 9", namespace="bob")
        assert _waits(master) > before  # the writes waited on the graph's own shard
        replica = replicas[0]
        replica.execute_command("READONLY")
        rows = replica.execute_command("GRAPH.RO_QUERY", graph_key(prefix, "bob"),
                                       f"MATCH (m:Memory {{id: '{node.id}'}}) RETURN m.content")
        assert rows[1] == [["Bob's flight lands at 9"]]
        for client in (master, *replicas):
            client.close()
    finally:
        assert isinstance(atlas.backend, FalkorDBBackend)
        drop_all(atlas.backend)


def test_on_a_cluster_more_replicas_than_a_shard_has_raise_after_one_wait(cluster_url: str) -> None:
    """Each shard has one replica: ``replicas=2`` falls short. The first short ``WAIT`` of a call
    ends the waiting for that call (its later statements do not wait again), the call completes
    and raises; the next call waits again."""
    prefix = fresh_prefix()
    url = f"{cluster_url}?prefix={prefix}&replica_timeout=0.05"
    atlas = ElasticMemoryAtlas(embedder=HashingEmbedder(dim=64), backend=url, )
    strict = ElasticMemoryAtlas(embedder=HashingEmbedder(dim=64), backend=FalkorDBBackend.from_url(
        url, dim=64, replicas=2))
    try:
        atlas.add_memory("a first note, so the graph and its indexes exist", namespace="carol")
        master, replicas = _shard(cluster_url, graph_key(prefix, "carol"))
        for attempt in range(2):
            before = _waits(master)
            with pytest.raises(ReplicationError, match=r"1 of 2 replica\(s\)") as info:
                strict.add_memory(f"Carol moved to Lisbon ({attempt})", namespace="carol")
            assert (info.value.confirmed, info.value.wanted) == (1, 2)
            assert _waits(master) == before + 1
        contents = {h.node.content for h in atlas.retrieve("Carol Lisbon", namespace="carol", top_k=5)}
        assert {"Carol moved to Lisbon (0)", "Carol moved to Lisbon (1)"} <= contents  # kept, not undone
        for client in (master, *replicas):
            client.close()
    finally:
        strict.backend.close()  # type: ignore[attr-defined]
        assert isinstance(atlas.backend, FalkorDBBackend)
        drop_all(atlas.backend)


def test_a_failed_call_keeps_its_own_error(falkordb_url: str) -> None:
    """A call that fails for its own reason raises that error, not the replicas' shortfall, and
    the next call starts afresh."""
    url = f"{falkordb_url}?prefix={fresh_prefix()}&replicas=1&replica_timeout=0.05"
    atlas = ElasticMemoryAtlas(embedder=HashingEmbedder(dim=64), backend=url)
    try:
        with pytest.raises(ReplicationError):
            atlas.add_memory("first", namespace="dan")
        with pytest.raises(InvalidInputError), atlas._lock:  # a write, then a failure, in one call
            atlas.backend.partition("dan").graph_key.write("CREATE (:Scratch)")  # type: ignore[union-attr]
            raise InvalidInputError("the call's own error")
        with pytest.raises(ReplicationError):
            atlas.add_memory("second", namespace="dan")
    finally:
        assert isinstance(atlas.backend, FalkorDBBackend)
        drop_all(atlas.backend)
