"""Writes confirmed on replicas: ``falkordb://host:port?replicas=N&replica_timeout=S``.

Redis replication is asynchronous: a master acknowledges a write before its replicas have it,
so a failover can lose the last writes it acknowledged. With ``replicas=N`` the backend sends
each write statement with ``WAIT N timeout`` behind it, in one pipeline on one connection to the
graph's shard (``WAIT`` counts the replicas that hold everything *that connection* wrote, so it
must follow the write on the same connection; on a cluster that is the connection to the master
of the graph's slot, not redis-py's cluster pipeline, which would send ``WAIT`` to every node).

The contract, per atlas call (``add_memory``, ``add_memories``, ``forget``, a recall's
reinforcement …):

- it returns normally only when every write statement it made was confirmed by N replicas of
  the graph's shard: then a failover (a replica promoted) keeps it;
- if a statement is confirmed by fewer than N within ``replica_timeout``, the call completes (its
  later statements skip the wait: one timeout per call, not one per statement) and then raises
  `ReplicationError`: the write is whole on the master, nothing is undone, and it survives unless
  the master fails before a replica has it.

The check happens when the atlas's lock is released (`ConfirmingLock`, handed to the atlas by
`FalkorDBBackend.attach`); code that writes through partitions directly calls
`Confirmations.check` itself. With ``replicas=0`` (the default) nothing here runs.

>>> confirmations = Confirmations(wanted=1, timeout=2.0)
>>> confirmations.record("atlas:alice", 0)
>>> try:
...     confirmations.check()
... except ReplicationError as exc:
...     print(exc.key, exc.confirmed, exc.wanted)
atlas:alice 0 1
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Sequence
from typing import Any

from ...values.errors import ReplicationError
from .calls import CallLock

__all__ = ["Confirmations", "ConfirmingLock", "refresh_slots", "send_and_wait"]


class Confirmations:
    """Each thread's first unconfirmed write since its atlas call began (thread safe: the state is
    per thread)."""

    def __init__(self, *, wanted: int, timeout: float) -> None:
        self.wanted = wanted
        self.timeout = timeout
        self._local = threading.local()

    @property
    def pending(self) -> tuple[str, int] | None:
        """(graph key, replicas that confirmed) of this thread's first unconfirmed write, or None."""
        found: tuple[str, int] | None = getattr(self._local, "first", None)
        return found

    def record(self, key: str, confirmed: int) -> None:
        """A write to ``key`` that ``confirmed`` replicas acknowledged (kept if short of ``wanted``)."""
        if confirmed < self.wanted and self.pending is None:
            self._local.first = (key, confirmed)

    def clear(self) -> None:
        self._local.first = None

    def check(self) -> None:
        """Raise `ReplicationError` for this thread's first unconfirmed write (and forget it)."""
        found = self.pending
        self.clear()
        if found is not None:
            key, confirmed = found
            raise ReplicationError(
                f"a write to graph {key!r} is on the master but {confirmed} of {self.wanted} replica(s) confirmed "
                f"it within {self.timeout:g} s; it is not undone, and a failover before a replica has it would "
                f"lose it", key=key, confirmed=confirmed, wanted=self.wanted)


def send_and_wait(client: Any, key: str, commands: Sequence[Sequence[Any]], *, cluster: bool,
                  wanted: int, timeout: float) -> tuple[list[Any], int | None]:
    """Send ``commands`` (on graph ``key``) and, unless ``wanted`` is 0, ``WAIT wanted timeout``
    in one pipeline on one connection to the key's master; (the commands' replies, errors
    included, and the number of replicas that confirmed them, or None without a wait).

    On a cluster a connection error, ``MOVED`` or ``CLUSTERDOWN`` first refreshes the client's map of
    the slots (a replica promoted after a failover), then raises for the caller's bounded retry.
    """
    import redis
    from redis.exceptions import AskError, ClusterDownError, MovedError, TryAgainError

    target = client.get_redis_connection(client.get_node_from_key(key)) if cluster else client
    pipe = target.pipeline(transaction=False)
    for command in commands:
        pipe.execute_command(*command)
    if wanted:
        pipe.execute_command("WAIT", wanted, max(1, round(timeout * 1000)))
    try:
        replies: list[Any] = pipe.execute(raise_on_error=False)
    except (redis.ConnectionError, redis.TimeoutError):
        if cluster:
            refresh_slots(client)
        raise
    if cluster:
        for reply in replies:
            if isinstance(reply, (MovedError, AskError, ClusterDownError, TryAgainError)):
                refresh_slots(client)
                raise reply
    if not wanted:
        return replies, None
    confirmed = replies[-1]
    return replies[:-1], confirmed if isinstance(confirmed, int) else 0


def refresh_slots(client: Any) -> None:
    """Ask the cluster for its map of the slots again (best effort: a node that cannot answer now
    is asked again at the caller's next attempt)."""
    from redis.exceptions import RedisClusterException, RedisError

    with contextlib.suppress(RedisError, RedisClusterException):
        client.nodes_manager.initialize()


class ConfirmingLock(CallLock):
    """The atlas's re-entrant lock (a `CallLock`): when its outermost hold is released after a
    call that succeeded, `Confirmations.check` raises for an unconfirmed write; a call that failed
    keeps its own error (its writes were undone, or their outcome is the error's to tell)."""

    def __init__(self, confirmations: Confirmations) -> None:
        super().__init__()
        self._confirmations = confirmations

    def _entered(self) -> None:
        self._confirmations.clear()

    def _leaving(self, *, failed: bool) -> None:
        if failed:
            self._confirmations.clear()
        else:
            self._confirmations.check()
