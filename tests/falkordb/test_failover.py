"""Failover on a FalkorDB cluster: a master is SIGKILLed, its replica is promoted, the client
follows it, and what was acknowledged survives.

The module starts its own cluster (three masters, a replica each, ``cluster-node-timeout`` 1 s)
with `start_cluster`, kills and restarts its nodes by pid, and stops every node at the end.
Every wait is bounded (`DEADLINE`); nothing here is timed.

- With ``?replicas=1`` every acknowledged write is present after the failover; writes the
  promoted replica (now a master without a replica) cannot confirm raise `ReplicationError`
  until the old master rejoins as its replica, and are acknowledged again after.
- Without it (the default), a failover loses every write the replica had not received: the
  test holds a replica back (SIGSTOP, its link cut), acknowledges writes on its master, kills
  the master, and finds exactly those writes gone after the promotion; ``replicas=1``
  acknowledges none of them.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator

import pytest
import redis

from shared_core import BackendError, ElasticMemoryAtlas, HashingEmbedder, ReplicationError
from shared_core.store.falkordb import FalkorDBBackend
from shared_core.store.falkordb.client import graph_key
from shared_core.store.falkordb.server import LocalCluster, LocalServer, start_cluster

DEADLINE = 25.0  # seconds any one wait (a promotion, a rejoin) may take before the test fails


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    started = start_cluster(tmp_path_factory.mktemp("failover"), masters=3, replicas=1, node_timeout_ms=1000)
    try:
        yield started
    finally:
        for server in started.servers:
            _resume(server)
        started.stop(kill=True)


def _client(server: LocalServer) -> redis.Redis:
    return redis.Redis(host="127.0.0.1", port=server.port, decode_responses=True, socket_timeout=5)


def _resume(server: LocalServer) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(server.pid, signal.SIGCONT)


def _until(what: str, done: Callable[[], bool]) -> None:
    deadline = time.monotonic() + DEADLINE
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {DEADLINE:g} s: {what}")
        time.sleep(0.1)


def _master_of(cluster: LocalCluster, key: str) -> tuple[LocalServer, LocalServer]:
    """The live master serving ``key`` and its replica (cluster-wide view from any live node)."""
    by_port = {s.port: s for s in cluster.servers}
    for server in cluster.servers:
        try:
            with _client(server) as c:
                slot = int(c.execute_command("CLUSTER KEYSLOT", key))
                for start, end, master, *replicas in c.execute_command("CLUSTER SLOTS"):
                    if start <= slot <= end and replicas:
                        return by_port[int(master[1])], by_port[int(replicas[0][1])]
        except redis.RedisError:
            continue
    raise AssertionError(f"no live node knows a master with a replica for {key!r}")


def _role(server: LocalServer) -> str:
    try:
        with _client(server) as c:
            return str(c.execute_command("ROLE")[0])
    except redis.RedisError:
        return "down"


def _namespaces(prefix: str, master: LocalServer, count: int) -> tuple[list[str], list[str]]:
    """``count`` namespaces whose graph is on ``master``'s shard, and ``count`` elsewhere."""
    with _client(master) as c:
        slots = [(int(a), int(b)) for a, b, m, *_ in c.execute_command("CLUSTER SLOTS") if int(m[1]) == master.port]
        on, off = [], []
        i = 0
        while len(on) < count or len(off) < count:
            ns = f"user{i}"
            slot = int(c.execute_command("CLUSTER KEYSLOT", graph_key(prefix, ns)))
            (on if any(a <= slot <= b for a, b in slots) else off).append(ns)
            i += 1
    return on[:count], off[:count]


def _present(url: str, written: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The (namespace, id) pairs of ``written`` that the cluster holds now."""
    backend = FalkorDBBackend.from_url(url, dim=64)
    try:
        found = []
        for ns, node_id in written:
            part = backend.partition(ns)
            if part is not None and part.graph.has(node_id):
                found.append((ns, node_id))
        return found
    finally:
        backend.close()


class _Writer(threading.Thread):
    """Streams ``add_memory`` into ``namespaces`` round robin until stopped; sorts each write into
    acknowledged, unconfirmed (`ReplicationError`) or failed (another `BackendError`)."""

    def __init__(self, atlas: ElasticMemoryAtlas, namespaces: list[str]) -> None:
        super().__init__(daemon=True)
        self.atlas, self.namespaces = atlas, namespaces
        self.acknowledged: list[tuple[str, str]] = []
        self.unconfirmed: list[str] = []
        self.failed: list[BaseException] = []
        self.stop = threading.Event()

    def run(self) -> None:
        i = 0
        while not self.stop.is_set():
            ns = self.namespaces[i % len(self.namespaces)]
            try:
                node = self.atlas.add_memory(f"{ns} note {i}", namespace=ns)
                self.acknowledged.append((ns, node.id))
            except ReplicationError:
                self.unconfirmed.append(ns)
            except BackendError as exc:
                self.failed.append(exc)
            i += 1

    def acknowledged_in(self, namespaces: list[str]) -> int:
        return sum(ns in namespaces for ns, _ in self.acknowledged)


def test_with_replicas_1_no_acknowledged_write_is_lost_when_a_master_is_killed(cluster: LocalCluster) -> None:
    prefix = "failover:"
    url = f"{cluster.url}?prefix={prefix}&replicas=1&replica_timeout=1&retry_for=20"
    probe_key = graph_key(prefix, "user0")
    victim, replica = _master_of(cluster, probe_key)
    on_victim, elsewhere = _namespaces(prefix, victim, 2)
    atlas = ElasticMemoryAtlas(embedder=HashingEmbedder(dim=64), backend=url)
    writer = _Writer(atlas, on_victim + elsewhere)
    writer.start()
    try:
        _until("20 acknowledged writes", lambda: len(writer.acknowledged) >= 20)
        killed = time.monotonic()
        victim.stop(kill=True)  # SIGKILL mid-stream
        _until("the replica promoted", lambda: _role(replica) == "master")
        promoted = time.monotonic() - killed
        # the client follows it: a write reaches the new master, which has no replica to confirm it
        _until("a write on the promoted replica", lambda: any(ns in on_victim for ns in writer.unconfirmed))
        followed = time.monotonic() - killed
        rejoined = cluster.restart(victim)  # the old master comes back as the new master's replica
        _until("the old master rejoined as a replica", lambda: _role(rejoined) == "slave")
        after = writer.acknowledged_in(on_victim)
        _until("writes acknowledged again on the failed-over shard",
               lambda: writer.acknowledged_in(on_victim) >= after + 4)
    finally:
        writer.stop.set()
        writer.join(timeout=DEADLINE)
    assert not writer.is_alive()
    assert writer.failed == [], writer.failed[:3]  # nothing gave up: every error was the replicas' shortfall
    assert writer.acknowledged_in(elsewhere) >= 10
    present = _present(f"{cluster.url}?prefix={prefix}", writer.acknowledged)
    assert present == writer.acknowledged  # every acknowledged write, in every namespace
    print(f"\nreplicas=1: {len(writer.acknowledged)} acknowledged writes, all present after the failover; "
          f"{len(writer.unconfirmed)} raised ReplicationError while the shard had no replica; replica promoted "
          f"{promoted:.1f} s after the kill, a write reached it {followed:.1f} s after")


def test_without_replicas_a_failover_loses_what_the_replica_had_not_received(cluster: LocalCluster) -> None:
    """The default acknowledges a write once the master has it. A replica that is behind (here:
    stopped, and its link cut) and then promoted does not have it: it is lost, acknowledged."""
    prefix = "lossy:"
    victim, replica = _master_of(cluster, graph_key(prefix, "user0"))
    on_victim, _ = _namespaces(prefix, victim, 3)
    url = f"{cluster.url}?prefix={prefix}"
    default = ElasticMemoryAtlas(embedder=HashingEmbedder(dim=64), backend=f"{url}&retry_for=20")
    confirmed = ElasticMemoryAtlas(embedder=HashingEmbedder(dim=64), backend=FalkorDBBackend.from_url(
        f"{cluster.url}?prefix={prefix}&retry_for=20", dim=64, replicas=1, replica_timeout=0.2))
    kept = [(ns, default.add_memory(f"{ns} kept {i}", namespace=ns).id) for i, ns in enumerate(on_victim)]
    with _client(victim) as c:  # the replica has everything so far
        assert int(c.execute_command("WAIT", 1, 5000)) == 1
        os.kill(replica.pid, signal.SIGSTOP)
        c.execute_command("CLIENT KILL", "TYPE", "replica")
    try:
        lost = [(ns, default.add_memory(f"{ns} acknowledged {i}", namespace=ns).id) for i, ns in enumerate(on_victim)]
        for ns in on_victim:  # replicas=1 acknowledges none of them
            with pytest.raises(ReplicationError, match=r"0 of 1 replica"):
                confirmed.add_memory(f"{ns} not acknowledged", namespace=ns)
        victim.stop(kill=True)
    finally:
        _resume(replica)
    _until("the lagging replica promoted", lambda: _role(replica) == "master")
    _until("the promoted replica serving", lambda: _readable(url, kept[0][0]))
    assert _present(url, kept) == kept
    assert _present(url, lost) == []  # acknowledged, and gone
    after = default.add_memory(f"{on_victim[0]} after the failover", namespace=on_victim[0])  # the old client follows
    assert after.id in {h.node.id for h in default.retrieve("after the failover", namespace=on_victim[0], top_k=10)}
    print(f"\ndefault: {len(lost)} of {len(lost)} writes acknowledged after the replica's last sync were lost")
    for atlas in (default, confirmed):
        atlas.backend.close()  # type: ignore[attr-defined]


def _readable(url: str, namespace: str) -> bool:
    try:
        backend = FalkorDBBackend.from_url(url + "&retry_for=1", dim=64)
    except BackendError:
        return False
    try:
        return backend.partition(namespace) is not None
    except BackendError:
        return False
    finally:
        backend.close()

