"""The connection to a FalkorDB server: timeouts, bounded retries, error mapping.

Every command goes through `Connection.run` or `Connection.command`. A connection or timeout
error (the server restarting, a network blip) is retried with exponential backoff (50 ms
doubling to 1 s) for at most ``retry_for`` seconds, then raised as `BackendError`; each
attempt is bounded by ``connect_timeout`` and ``timeout``, so nothing hangs. Commands are
retried whole: a write whose reply was lost may run twice, which the backend's statements
tolerate (they replace, they do not append, except that the write counter may skip turns and a
recall may be reinforced twice). On a single server the statements travel on connections of the
backend's own (`_Lane`), a request's reads dealt over one connection per server thread, so
that the server runs them side by side; where the server is and how patiently to talk to it is `settings`, how
a statement and its reply are written and read is `replies`.
"""

from __future__ import annotations

import os
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from ...values.errors import BackendError, MissingDependencyError
from . import cypher as q
from .replication import Confirmations, refresh_slots, send_and_wait
from .replies import Literal, query_command, reply_rows
from .settings import Settings, graph_key, namespace_of, parse_url

__all__ = ["Connection", "GraphKey", "Literal", "Settings", "graph_key", "namespace_of", "paced", "parse_url"]

T = TypeVar("T")
FIRST_CONTACT = 3.0  # seconds of retries for the first connection


def paced(budget: float, *, first: float = 0.01, cap: float = 0.2) -> Iterator[None]:
    """Yield at once, then again after each pause (``first`` seconds, doubling up to ``cap``)
    that ends within ``budget`` seconds of the call: the attempts of a retry loop, which
    carries on after the loop when every attempt failed.

    >>> len(list(paced(0.0)))
    1
    """
    deadline, delay = time.monotonic() + budget, first
    yield
    while time.monotonic() + delay <= deadline:
        time.sleep(delay)
        delay = min(cap, delay * 2)
        yield


def _index_not_ready(message: str) -> bool:
    """Whether a refusal is the one FalkorDB gives a vector query while the graph's vector index
    is being built; it gives the same to a query whose arguments are wrong (`Connection.built`
    tells them apart)."""
    return "Invalid arguments for procedure 'db.idx.vector.queryNodes'" in message


#: what a refused vector query on a graph whose vector index is built is (`Connection.built`)
INVALID_VECTOR_QUERY = ("the graph's vector index is built, so the vector query itself is invalid (its k, "
                        "index, or query vector)")


def _vector_index_built(rows: Sequence[Sequence[Any]]) -> bool:
    """Whether `cypher.INDEX_STATES` ``rows`` (label, options, status) show the memories' vector
    index (an ``Embedding`` index with a dimension) built ("OPERATIONAL").

    >>> _vector_index_built([["Embedding", {"id": {}, "embedding": {"dimension": 4}}, "OPERATIONAL"]])
    True
    >>> _vector_index_built([["Embedding", {"id": {}, "embedding": {"dimension": 4}}, "UNDER CONSTRUCTION"]])
    False
    """
    return any(str(label) == "Embedding" and status == "OPERATIONAL" and isinstance(options, dict)
               and any(isinstance(o, dict) and "dimension" in o for o in options.values())
               for label, options, status in rows)


def _client() -> Any:
    try:
        import falkordb
    except ImportError:
        raise MissingDependencyError.for_extra("falkordb", "falkordb") from None
    return falkordb


class _Lane:
    """Connections of the backend's own to a single server, which the statements use in place of
    redis-py's pool and pipeline: a recall sends a dozen statements in a few round trips, and
    the pool's bookkeeping on each (metrics, a readiness poll of the socket, retry wrappers)
    cost this process about as much as reading the replies.

    A round trip takes a free connection (or opens one with the pool's own settings: address,
    credentials, timeouts, decoding), writes every command in one send, reads every reply (a
    refusal as its `redis.ResponseError`, the others unaffected), and puts the connection back.
    Any other failure (a lost connection, a timeout) closes that connection and propagates, for
    `Connection._retrying` to retry the whole round trip on a new one: a connection half read is
    never reused. Thread safe (each round trip holds its connection alone); after a fork the
    child opens its own.
    """

    def __init__(self, pool: Any, lanes: int = 1) -> None:
        from redis.exceptions import ResponseError

        #: the connections a request's reads are dealt over (`spread`): the server's threads
        self.lanes = lanes

        self._open: Callable[[], Any] = lambda: pool.connection_class(**pool.connection_kwargs)
        self._refused = ResponseError
        self._free: list[Any] = []
        self._lock = threading.Lock()
        self._pid = os.getpid()

    def send(self, commands: Sequence[Sequence[Any]]) -> list[Any]:
        with self._lock:
            if self._pid != os.getpid():  # a forked child never shares its parent's sockets
                self._free, self._pid = [], os.getpid()
            conn = self._free.pop() if self._free else None
        if conn is None:
            conn = self._open()
        try:
            conn.send_packed_command(conn.pack_commands(commands), check_health=False)
            replies: list[Any] = []
            for _ in commands:
                try:
                    replies.append(conn.read_response())
                except self._refused as exc:
                    replies.append(exc)
        except BaseException:
            conn.disconnect()
            raise
        with self._lock:
            self._free.append(conn)
        return replies

    def spread(self, commands: Sequence[Sequence[Any]]) -> list[Any]:
        """`send`, the commands dealt over up to `lanes` connections (the i-th on connection
        ``i % lanes``), every one sent before any reply is read: the server runs read queries on
        a pool of threads but serves the commands of one connection one after another, so reads
        sent this way run side by side. The replies in the order of ``commands``; a failure
        closes each connection not read to the end (those read to the end are put back)."""
        lanes = min(self.lanes, len(commands))
        if lanes < 2:
            return self.send(commands)
        with self._lock:
            if self._pid != os.getpid():
                self._free, self._pid = [], os.getpid()
            taken = [self._free.pop() for _ in range(min(lanes, len(self._free)))]
        done = 0
        try:
            taken += [self._open() for _ in range(lanes - len(taken))]
            for lane, conn in enumerate(taken):
                conn.send_packed_command(conn.pack_commands(commands[lane::lanes]), check_health=False)
            replies: list[Any] = [None] * len(commands)
            for lane, conn in enumerate(taken):
                for at in range(lane, len(commands), lanes):
                    try:
                        replies[at] = conn.read_response()
                    except self._refused as exc:
                        replies[at] = exc
                done += 1
        except BaseException:
            for conn in taken[done:]:
                conn.disconnect()
            with self._lock:
                self._free.extend(taken[:done])
            raise
        with self._lock:
            self._free.extend(taken)
        return replies

    def close(self) -> None:
        with self._lock:
            free, self._free = self._free, []
        for conn in free:
            conn.disconnect()


class Connection:
    """One client (a redis connection pool) to one server."""

    def __init__(self, settings: Settings) -> None:
        falkordb = _client()
        import redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        self.settings = settings
        from redis.exceptions import AskError, ClusterDownError, MovedError, TryAgainError

        # a cluster failing over answers CLUSTERDOWN / TRYAGAIN until a replica is promoted; MOVED
        # and ASK reach here only from `send_and_wait`, which has refreshed the map of the slots
        self._transient = (redis.ConnectionError, redis.TimeoutError, ClusterDownError, TryAgainError, MovedError,
                           AskError)
        #: ``?replicas=N``: each write waits for N replicas (`shared_core.store.falkordb.replication`)
        self.confirmations = Confirmations(wanted=settings.replicas, timeout=settings.replica_timeout) \
            if settings.replicas else None
        self._response_error = redis.ResponseError

        def connect() -> Any:
            # the client asks the server about itself (sentinel? cluster?) while it is built; on a
            # cluster it passes redis-py arguments that redis-py deprecates (its concern, not ours)
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message=".*deprecated usage of input argument",
                                        category=DeprecationWarning)
                return falkordb.FalkorDB(
                    host=settings.host, port=settings.port, username=settings.username, password=settings.password,
                    socket_timeout=settings.timeout, socket_connect_timeout=settings.connect_timeout,
                    retry=Retry(NoBackoff(), 0))  # retries are ours: bounded in time

        self._db = self._retrying(connect, "connecting", budget=min(settings.retry_for, FIRST_CONTACT))
        self._cluster = isinstance(self._db.connection, redis.RedisCluster)
        pool = None if self._cluster else self._db.connection.connection_pool
        #: the statements' own connections to a single server (`_Lane`); None on a cluster
        self._lane = _Lane(pool, self._threads()) if type(pool) is redis.ConnectionPool else None

    def _threads(self) -> int:
        """The server's threads for queries (``GRAPH.CONFIG GET THREAD_COUNT``; 1 if it does not
        say: `ping` then reports a server without the FalkorDB module)."""
        try:
            reply = self._retrying(lambda: self._db.connection.execute_command("GRAPH.CONFIG", "GET", "THREAD_COUNT"),
                                   "GRAPH.CONFIG", budget=min(self.settings.retry_for, FIRST_CONTACT))
            return max(1, int(reply[1]))
        except (BackendError, TypeError, ValueError, IndexError):
            return 1

    def _retrying(self, call: Callable[[], T], what: str, *, budget: float | None = None) -> T:
        budget = self.settings.retry_for if budget is None else budget
        failure: BaseException | None = None
        for _ in paced(budget, first=0.05, cap=1.0):
            try:
                return call()
            except self._transient as exc:
                failure = exc
            except self._response_error as exc:
                raise BackendError(f"FalkorDB at {self.settings.url} refused {what}: {exc}") from None
        raise BackendError(f"cannot reach FalkorDB at {self.settings.url} ({what}): {failure}; "
                           f"gave up after {budget:g} s of retries") from None

    def _unless_transient(self, replies: list[Any]) -> list[Any]:
        """A pipeline's replies, or the first transient failure among them raised (after a fresh
        map of a cluster's slots) for `_retrying`: a pipeline run with ``raise_on_error=False``
        returns a lost connection in place of its reply, as during a failover."""
        for reply in replies:
            if isinstance(reply, self._transient):
                if self.cluster:
                    refresh_slots(self._db.connection)
                raise reply
        return replies

    def _send(self, commands: Sequence[Sequence[Any]]) -> list[Any]:
        """``commands`` in one round trip (a pipeline), in order; each reply, a refused command's
        as its `redis.ResponseError`."""
        if self._lane is not None:
            return self._unless_transient(self._lane.send(commands))
        pipe = self._db.connection.pipeline(transaction=False)
        for command in commands:
            pipe.execute_command(*command)
        return self._unless_transient(pipe.execute(raise_on_error=False))

    def command(self, *args: Any, budget: float | None = None) -> Any:
        """A plain server command (EXISTS, GRAPH.LIST ...), with retries."""
        return self._retrying(lambda: self._db.connection.execute_command(*args), str(args[0]), budget=budget)

    def run(self, key: str, query: str, params: Mapping[str, Any] | None = None, *,
            write: bool = False) -> list[list[Any]]:
        """Run one Cypher statement on graph ``key``; returns the rows. A read of a graph that does
        not exist gives no rows. After a write, ``namespace_ttl`` is applied again (same round trip).

        A read refused with "Invalid arguments for procedure 'db.idx.vector.queryNodes'" is tried
        again (10 ms doubling to 200 ms) for up to the settings' ``timeout``: the server refuses
        a valid vector query while it builds the graph's vector index, as it does for seconds
        after a restart (`tests/falkordb/test_restart_indexes.py`), and answers it once built.
        The same refusal once the graph's vector index is seen built is the query's own fault (a
        k below 1, say), and is raised at once: a refusal asks whether the index is built
        (`built`: one more statement, only on a refusal), and a query refused again after the
        index was seen built is raised with the reason (the one more try covers a status that
        says built a moment before the index answers). A vector of the wrong dimension is refused
        in other words, at once. Only a refused read waits: an answered read costs nothing more."""
        refused: BackendError | None = None
        seen_built = False
        for _ in paced(self.settings.timeout):
            try:
                return self._run_once(key, query, params, write=write)
            except BackendError as exc:
                if write or not _index_not_ready(str(exc)):
                    raise
                if seen_built:
                    raise BackendError(f"{exc}: {INVALID_VECTOR_QUERY}") from None
                seen_built = self.built(key)
                refused = exc
        assert refused is not None
        raise refused

    def built(self, key: str) -> bool:
        """Whether graph ``key``'s vector index is built (`cypher.INDEX_STATES`): a vector query
        refused then is invalid, not early (see `run`)."""
        try:
            return _vector_index_built(self._run_once(key, q.INDEX_STATES, None, write=False))
        except BackendError:
            return False

    def _run_once(self, key: str, query: str, params: Mapping[str, Any] | None, *,
                  write: bool) -> list[list[Any]]:
        sent = query_command(key, query, params or {}, write=write)
        ttl = self.settings.namespace_ttl

        def call() -> Any:
            expire = [["EXPIRE", key, ttl]] if write and ttl is not None else []
            if write and self.confirmations is not None:
                return self._confirmed(key, [sent, *expire])
            if self._lane is not None:  # a refusal comes back as its error (below), not raised
                return self._unless_transient(self._lane.send([sent, *expire]))[0]
            if write and ttl is not None:
                pipe = self._db.connection.pipeline(transaction=False)
                pipe.execute_command(*sent)
                pipe.expire(key, ttl)
                return self._unless_transient(pipe.execute(raise_on_error=False))[0]
            return self._db.connection.execute_command(*sent)

        try:
            response = self._retrying(call, "a query")
        except BackendError as exc:
            if not write and "empty key" in str(exc):
                return []
            raise
        if not write and isinstance(response, self._response_error) and "empty key" in str(response):
            return []
        errors = [response, *response] if isinstance(response, list) else [response]
        for item in errors:
            if isinstance(item, self._response_error):
                raise BackendError(f"FalkorDB at {self.settings.url} refused a query: {item}")
        return reply_rows(query, response)

    def _confirmed(self, key: str, commands: list[list[Any]]) -> Any:
        """The first command's reply of `_confirmed_all`."""
        return self._confirmed_all(key, commands)[0]

    def _confirmed_all(self, key: str, commands: list[list[Any]]) -> list[Any]:
        """The write hook of ``?replicas=N``: ``commands`` on graph ``key``, then ``WAIT`` on the same
        connection (skipped once this thread's atlas call has an unconfirmed write); the commands'
        replies. A shortfall is recorded, and raised when the atlas call ends."""
        confirmations = self.confirmations
        assert confirmations is not None
        wanted = 0 if confirmations.pending is not None else confirmations.wanted
        replies, confirmed = send_and_wait(self._db.connection, key, commands, cluster=self.cluster, wanted=wanted,
                                           timeout=confirmations.timeout)
        if confirmed is not None:
            confirmations.record(key, confirmed)
        return replies

    def delete(self, key: str) -> None:
        """Delete graph ``key`` (a write: confirmed on the replicas as any other)."""
        if self.confirmations is None:
            self.command("DEL", key)
        else:
            self._retrying(lambda: self._confirmed(key, [["DEL", key]]), "DEL")

    def run_many(self, key: str, statements: Sequence[tuple[str, Mapping[str, Any]]], *,
                 write: bool = False) -> list[list[list[Any]]]:
        """Several statements on graph ``key`` in one round trip, in order; the rows of each.
        Reads of a graph that does not exist give no rows. On a single server reads are dealt
        over a connection per server thread (`_Lane.spread`: the server runs them side by side;
        they are no more one snapshot than a pipeline's, whose statements other clients' writes
        may come between); on a cluster they are one pipeline. With ``write``, the statements are writes in one
        pipeline, in order (and ``namespace_ttl`` is applied again after them); a refused one
        raises after the pipeline ran (the statements before it stay written, each atomic)."""
        commands = [query_command(key, query, params, write=write) for query, params in statements]
        ttl = self.settings.namespace_ttl

        def call() -> Any:
            expire: list[list[Any]] = [["EXPIRE", key, ttl]] if write and ttl is not None else []
            if write and self.confirmations is not None:  # ``?replicas=N``: one WAIT after the batch
                return self._confirmed_all(key, [*commands, *expire])[:len(commands)]
            if not write and self._lane is not None:  # reads side by side (`_Lane.spread`)
                return self._unless_transient(self._lane.spread(commands))
            return self._send([*commands, *expire])[:len(commands)]

        responses = self._retrying(call, "a query") if write else self._until_indexed(key, call, "a query")
        out: list[list[list[Any]]] = []
        for (query, _), response in zip(statements, responses, strict=True):
            if isinstance(response, self._response_error):
                if "empty key" in str(response) and not write:
                    out.append([])
                    continue
                raise BackendError(f"FalkorDB at {self.settings.url} refused a query: {response}")
            out.append(reply_rows(query, response))
        return out

    def _until_indexed(self, key: str, call: Callable[[], list[Any]], what: str) -> list[Any]:
        """The replies of a read request ``call`` on graph ``key`` (with `_retrying`), asked again
        as a whole while one of them is a vector query refused as not ready, as `run` does (at
        most the settings' ``timeout``; refused again once the index was seen `built`, the
        refusals come back with the reason, as in `run`)."""
        responses: list[Any] = []
        seen_built = False
        for _ in paced(self.settings.timeout):
            responses = self._retrying(call, what)
            early = [isinstance(r, self._response_error) and _index_not_ready(str(r)) for r in responses]
            if not any(early):
                break
            if seen_built:
                return [self._response_error(f"{r}: {INVALID_VECTOR_QUERY}") if e else r
                        for r, e in zip(responses, early, strict=True)]
            seen_built = self.built(key)
        return responses

    def exists_and_read(self, key: str, statements: Sequence[tuple[str, Mapping[str, Any]]]
                        ) -> tuple[bool, list[list[list[Any]]]]:
        """Whether graph ``key`` exists, and the rows of read-only ``statements`` on it (none if it
        does not), in one round trip (on a single server dealt over its threads as `run_many`'s
        reads)."""
        commands = [["EXISTS", key], *(query_command(key, query, params) for query, params in statements)]

        def call() -> Any:
            if self._lane is not None and len(commands) > 2:
                return self._unless_transient(self._lane.spread(commands))
            return self._send(commands)

        exists, *responses = self._until_indexed(key, call, "EXISTS")
        if isinstance(exists, self._response_error):
            raise BackendError(f"FalkorDB at {self.settings.url} refused EXISTS: {exists}")
        if not exists:
            return False, [[] for _ in statements]
        out: list[list[list[Any]]] = []
        for (query, _), response in zip(statements, responses, strict=True):
            if isinstance(response, self._response_error):
                if "empty key" in str(response):  # deleted between the two commands
                    out.append([])
                    continue
                raise BackendError(f"FalkorDB at {self.settings.url} refused a query: {response}")
            out.append(reply_rows(query, response))
        return True, out

    @property
    def cluster(self) -> bool:
        """Whether the server is a node of a Redis Cluster (the client then routes each graph key
        to its shard)."""
        return self._cluster

    def graphs(self) -> list[str]:
        """Every graph key on the server (on a cluster: on every master)."""
        if self.cluster:  # the nodes themselves: redis-py 8 does not route a flag for a module command
            cluster = self._db.connection
            found = self._retrying(lambda: cluster.execute_command(
                "GRAPH.LIST", target_nodes=cluster.get_primaries()), "GRAPH.LIST")
            keys = [k for ks in found.values() for k in ks] if isinstance(found, dict) else list(found)
        else:
            keys = self.command("GRAPH.LIST")
        return sorted({k.decode() if isinstance(k, bytes) else str(k) for k in keys})

    def ping(self) -> None:
        """Check that the server answers and has the FalkorDB module (a clear error otherwise).

        A first connection retries for at most ``FIRST_CONTACT`` seconds: a wrong address is
        reported quickly, a server lost later is waited for up to ``retry_for``."""
        self.command("PING", budget=min(self.settings.retry_for, FIRST_CONTACT))
        try:
            self.graphs()
        except BackendError as exc:
            if "unknown command" in str(exc).lower():
                raise BackendError(f"the server at {self.settings.url} answers but has no FalkorDB module "
                                   "(GRAPH.LIST is unknown)") from None
            raise

    def close(self) -> None:
        if self._lane is not None:
            self._lane.close()
        self._db.connection.close()


@dataclass(frozen=True, slots=True)
class GraphKey:
    """One namespace's graph on the server."""

    conn: Connection
    key: str

    def read(self, query: str, params: Mapping[str, Any] | None = None) -> list[list[Any]]:
        return self.conn.run(self.key, query, params)

    def write(self, query: str, params: Mapping[str, Any] | None = None) -> list[list[Any]]:
        return self.conn.run(self.key, query, params, write=True)

    def read_many(self, statements: Sequence[tuple[str, Mapping[str, Any]]]) -> list[list[list[Any]]]:
        """Several read-only statements in one round trip."""
        return self.conn.run_many(self.key, statements)

    def write_many(self, statements: Sequence[tuple[str, Mapping[str, Any]]]) -> list[list[list[Any]]]:
        """Several writes in one round trip, in order (see `Connection.run_many`)."""
        return self.conn.run_many(self.key, statements, write=True)
