"""The connection to a FalkorDB server: URL parsing, timeouts, bounded retries, error mapping.

Every command goes through `Connection.run` or `Connection.command`. A connection or timeout
error (the server restarting, a network blip) is retried with exponential backoff (50 ms
doubling to 1 s) for at most ``retry_for`` seconds, then raised as `BackendError`; each
attempt is bounded by ``connect_timeout`` and ``timeout``, so nothing hangs. Commands are
retried whole: a write whose reply was lost may run twice, which the backend's statements
tolerate (they replace, they do not append, except that the write counter may skip turns and a
recall may be reinforced twice).
"""

from __future__ import annotations

import math
import re
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import parse_qsl, unquote, urlsplit

import numpy as np

from ...values import _validate as check
from ...values.errors import BackendError, InvalidInputError, MissingDependencyError
from .replication import Confirmations, refresh_slots, send_and_wait

__all__ = ["Connection", "GraphKey", "Literal", "Settings", "graph_key", "namespace_of", "parse_url"]

T = TypeVar("T")
FIRST_CONTACT = 3.0  # seconds of retries for the first connection
_SCHEMES = ("falkordb", "falkor", "redis")



INDEX_WAIT = 1.0  # seconds a read waits for a vector index that refuses a valid query (see `Connection.run`)


def _index_not_ready(message: str) -> bool:
    return "Invalid arguments for procedure 'db.idx.vector.queryNodes'" in message

class Literal(str):
    """A query parameter already written as Cypher (a vector literal), passed through verbatim."""

    __slots__ = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    """Where the server is and how patiently to talk to it.

    ``namespace_ttl`` (seconds) expires a namespace's graph that long after its last write;
    ``prefix`` starts every graph key (``atlas:alice``), so several atlases can share a server.
    ``replicas`` (N >= 1) makes every write wait until N replicas of its shard confirm it, for
    at most ``replica_timeout`` seconds (`shared_core.store.falkordb.replication`).
    A prefix is empty or ends with ``:`` and holds no control character: with the escaping of
    `graph_key`, that makes every (prefix, namespace) pair's key its own, however prefixes nest.
    """

    host: str = "127.0.0.1"
    port: int = 6379
    username: str | None = None
    password: str | None = None
    prefix: str = "atlas:"
    namespace_ttl: int | None = None
    timeout: float = 30.0
    connect_timeout: float = 2.0
    retry_for: float = 10.0
    replicas: int = 0
    replica_timeout: float = 2.0

    def __post_init__(self) -> None:
        if not isinstance(self.prefix, str) or (self.prefix and not self.prefix.endswith(":")):
            raise InvalidInputError(f"the graph key prefix must be empty or end with ':', got {self.prefix!r}")
        char = check.control_char(self.prefix)
        if char is not None:
            raise InvalidInputError(f"the graph key prefix must not contain a control character "
                                    f"(U+{ord(char):04X}), got {self.prefix!r}")
        if not self.host:
            raise InvalidInputError("the FalkorDB host is empty")
        if not 0 < self.port < 65536:
            raise InvalidInputError(f"the FalkorDB port must be in 1..65535, got {self.port!r}")
        if self.namespace_ttl is not None and self.namespace_ttl < 1:
            raise InvalidInputError(f"namespace_ttl must be None or an int >= 1, got {self.namespace_ttl!r}")
        for name in ("timeout", "connect_timeout"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and 0 < value < math.inf):
                raise InvalidInputError(f"{name} must be a positive number of seconds, got {value!r}")
        if not (isinstance(self.retry_for, (int, float)) and 0 <= self.retry_for < math.inf):
            raise InvalidInputError(f"retry_for must be >= 0 seconds, got {self.retry_for!r}")
        if isinstance(self.replicas, bool) or not isinstance(self.replicas, int) or not 0 <= self.replicas <= 64:
            raise InvalidInputError(f"replicas must be an int in 0..64 (0: writes wait for no replica), "
                                    f"got {self.replicas!r}")
        timeout = self.replica_timeout
        if isinstance(timeout, bool) or not (isinstance(timeout, (int, float)) and 0.001 <= timeout <= 3600):
            raise InvalidInputError(f"replica_timeout must be a number of seconds in 0.001..3600, got {timeout!r}")

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def url(self) -> str:
        """The server's URL as messages show it (no credentials, no options)."""
        return f"falkordb://{self.address}"


_ESCAPES = {"%": "%25", ":": "%3A"}
_ESCAPED = re.compile("%(25|3A)")


def graph_key(prefix: str, namespace: str) -> str:
    """The graph key of ``namespace``: the prefix, then the namespace with ``%`` and ``:`` escaped.

    The escaped namespace holds no ``:`` and a prefix ends with one, so a key's prefix is
    everything up to its last ``:``: no two (prefix, namespace) pairs share a key, and an atlas
    on ``pp:`` never reaches one on ``pp:team2:``. A namespace without ``%`` or ``:`` keeps
    the key it always had.

    >>> graph_key("pp:", "team2:alice"), graph_key("pp:team2:", "alice"), graph_key("pp:", "50%")
    ('pp:team2%3Aalice', 'pp:team2:alice', 'pp:50%25')
    """
    if "%" in namespace or ":" in namespace:
        namespace = "".join(_ESCAPES.get(c, c) for c in namespace)
    return prefix + namespace


def namespace_of(prefix: str, key: str) -> str | None:
    """The namespace whose `graph_key` under ``prefix`` is ``key``, or None when there is none
    (another prefix's key, such as a nested prefix's, a key this scheme never writes, or a
    name the namespace rule refuses).

    >>> namespace_of("pp:", "pp:team2%3Aalice"), namespace_of("pp:", "pp:team2:alice")
    ('team2:alice', None)
    """
    if not key.startswith(prefix) or len(key) == len(prefix):
        return None
    namespace = _ESCAPED.sub(lambda m: "%" if m.group(1) == "25" else ":", key[len(prefix):])
    if graph_key(prefix, namespace) != key:
        return None
    try:
        return check.namespace(namespace)
    except InvalidInputError:
        return None


def parse_url(url: str) -> Settings:
    """``falkordb://[user:password@]host[:port][?ttl=S&prefix=P&timeout=S&connect_timeout=S&retry_for=S
    &replicas=N&replica_timeout=S]``.

    >>> s = parse_url("falkordb://127.0.0.1:6390?ttl=3600&prefix=team1:&replicas=1")
    >>> (s.host, s.port, s.namespace_ttl, s.prefix, s.replicas)
    ('127.0.0.1', 6390, 3600, 'team1:', 1)
    """
    if not isinstance(url, str):
        raise InvalidInputError(f"a FalkorDB URL must be a string, got {type(url).__name__}")
    shown = _redact(url)
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise InvalidInputError(f"bad FalkorDB URL {shown!r}: {exc}") from None
    if parts.scheme.lower() not in _SCHEMES:
        raise InvalidInputError(f"bad FalkorDB URL {shown!r}: the scheme must be one of {', '.join(_SCHEMES)}")
    if not parts.hostname:
        raise InvalidInputError(f"bad FalkorDB URL {shown!r}: no host (expected falkordb://host:port)")
    if parts.path not in ("", "/"):
        raise InvalidInputError(f"bad FalkorDB URL {shown!r}: unexpected path {parts.path!r}")
    options: dict[str, Any] = {}
    numbers = {"ttl": ("namespace_ttl", int), "timeout": ("timeout", float),
               "connect_timeout": ("connect_timeout", float), "retry_for": ("retry_for", float),
               "replicas": ("replicas", int), "replica_timeout": ("replica_timeout", float)}
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if key == "prefix":
            options["prefix"] = value
        elif key in numbers:
            name, kind = numbers[key]
            try:
                options[name] = kind(value)
            except ValueError:
                what = "an integer" if kind is int else "a number"
                raise InvalidInputError(f"bad FalkorDB URL {shown!r}: {key}={value!r} is not {what}") from None
        else:
            raise InvalidInputError(f"bad FalkorDB URL {shown!r}: unknown option {key!r} "
                                    f"(known: prefix, {', '.join(numbers)})")
    try:
        return Settings(host=parts.hostname, port=6379 if port is None else port,
                        username=unquote(parts.username) if parts.username else None,
                        password=unquote(parts.password) if parts.password else None, **options)
    except InvalidInputError as exc:
        raise InvalidInputError(f"bad FalkorDB URL {shown!r}: {exc}") from None


def _redact(url: str) -> str:
    """The URL as error messages show it: without its password.

    >>> _redact("falkordb://bob:secret@db:6379")
    'falkordb://bob:***@db:6379'
    """
    return re.sub(r"(//[^/@:]*:)[^/@]*@", r"\1***@", url)


def _client() -> Any:
    try:
        import falkordb
    except ImportError:
        raise MissingDependencyError.for_extra("falkordb", "falkordb") from None
    return falkordb


def _params_header(params: Mapping[str, Any]) -> str:
    from falkordb.helpers import stringify_param_value

    if not params:
        return ""
    items = " ".join(f"{k}={v if isinstance(v, Literal) else stringify_param_value(v)}" for k, v in params.items())
    return f"CYPHER {items} "


def _value(kind: int, value: Any) -> Any:
    """One value of a compact result set, of type ``kind`` (scalars, arrays, maps, float32 vectors)."""
    if kind == 2:
        return value
    if kind == 5:
        return float(value)
    if kind == 3:
        return int(value)
    if kind == 1:
        return None
    if kind == 4:
        return value == "true"
    if kind == 6:
        return _cells(value)
    if kind == 12:  # a vector's elements as decimal strings: read as doubles, as float() would
        return np.array(value, dtype=np.bytes_).astype(np.float64).astype(np.float32)
    if kind == 10:
        return {str(value[i]): _value(*value[i + 1]) for i in range(0, len(value), 2)}
    raise BackendError(f"unexpected value of type {kind} in a FalkorDB result (the backend reads no graph objects)")


def _cells(cells: Sequence[Sequence[Any]]) -> list[Any]:
    """The values of ``[type, value]`` cells: the common scalars (string, double, integer, null)
    inline, the rest through `_value` (a recall reads thousands of cells: a call per cell shows)."""
    return [v if k == 2 else float(v) if k == 5 else int(v) if k == 3 else None if k == 1 else _value(k, v)
            for k, v in cells]


def _rows(response: list[Any]) -> list[list[Any]]:
    """The rows of a compact ``GRAPH.QUERY`` reply (``[header, rows, stats]``, or ``[stats]``).

    Parsed here rather than by the client's `QueryResult`, which builds an object per value: the
    backend only ever returns scalars, and a recall reads thousands of them.

    >>> _rows([[[1, "a"], [1, "b"]], [[[2, "x"], [5, "0.5"]], [[1, None], [6, [[3, 7], [4, "true"]]]]], ["stats"]])
    [['x', 0.5], [None, [7, True]]]
    """
    if len(response) < 3:
        return []
    return [_cells(row) for row in response[1]]


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

    def _retrying(self, call: Callable[[], T], what: str, *, budget: float | None = None) -> T:
        budget = self.settings.retry_for if budget is None else budget
        deadline = time.monotonic() + budget
        delay = 0.05
        while True:
            try:
                return call()
            except self._transient as exc:
                if time.monotonic() + delay > deadline:
                    raise BackendError(f"cannot reach FalkorDB at {self.settings.url} ({what}): {exc}; "
                                       f"gave up after {budget:g} s of retries") from None
                time.sleep(delay)
                delay = min(1.0, delay * 2)
            except self._response_error as exc:
                raise BackendError(f"FalkorDB at {self.settings.url} refused {what}: {exc}") from None

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

    def command(self, *args: Any, budget: float | None = None) -> Any:
        """A plain server command (EXISTS, GRAPH.LIST ...), with retries."""
        return self._retrying(lambda: self._db.connection.execute_command(*args), str(args[0]), budget=budget)

    def run(self, key: str, query: str, params: Mapping[str, Any] | None = None, *,
            write: bool = False) -> list[list[Any]]:
        """Run one Cypher statement on graph ``key``; returns the rows. A read of a graph that does
        not exist gives no rows. After a write, ``namespace_ttl`` is applied again (same round trip).

        A read refused with "Invalid arguments for procedure 'db.idx.vector.queryNodes'" is tried
        again for up to `INDEX_WAIT` seconds: the server has been seen (rarely, right after a
        graph's indexes were made) to refuse a valid vector query once and answer it next."""
        waited = 0.0
        while True:
            try:
                return self._run_once(key, query, params, write=write)
            except BackendError as exc:
                if write or waited >= INDEX_WAIT or not _index_not_ready(str(exc)):
                    raise
                time.sleep(0.05)
                waited += 0.05

    def _run_once(self, key: str, query: str, params: Mapping[str, Any] | None, *,
                  write: bool) -> list[list[Any]]:
        command = ["GRAPH.QUERY" if write else "GRAPH.RO_QUERY", key, _params_header(params or {}) + query,
                   "--compact"]
        ttl = self.settings.namespace_ttl

        def call() -> Any:
            if write and self.confirmations is not None:
                return self._confirmed(key, [command, *([["EXPIRE", key, ttl]] if ttl is not None else [])])
            if write and ttl is not None:
                pipe = self._db.connection.pipeline(transaction=False)
                pipe.execute_command(*command)
                pipe.expire(key, ttl)
                return self._unless_transient(pipe.execute(raise_on_error=False))[0]
            return self._db.connection.execute_command(*command)

        try:
            response = self._retrying(call, "a query")
        except BackendError as exc:
            if not write and "empty key" in str(exc):
                return []
            raise
        errors = [response, *response] if isinstance(response, list) else [response]
        for item in errors:
            if isinstance(item, self._response_error):
                raise BackendError(f"FalkorDB at {self.settings.url} refused a query: {item}")
        return _rows(response)

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
                 retried: bool = False, write: bool = False) -> list[list[list[Any]]]:
        """Several statements on graph ``key`` in one round trip (a pipeline), in order; the rows
        of each. Reads of a graph that does not exist give no rows. With ``write``, each is a
        write (and ``namespace_ttl`` is applied again after them); a refused one raises after
        the pipeline ran (the statements before it stay written, each atomic)."""
        commands = [["GRAPH.QUERY" if write else "GRAPH.RO_QUERY", key, _params_header(params) + query, "--compact"]
                    for query, params in statements]
        ttl = self.settings.namespace_ttl

        def call() -> Any:
            expire: list[list[Any]] = [["EXPIRE", key, ttl]] if write and ttl is not None else []
            if write and self.confirmations is not None:  # ``?replicas=N``: one WAIT after the batch
                return self._confirmed_all(key, [*commands, *expire])[:len(commands)]
            pipe = self._db.connection.pipeline(transaction=False)
            for command in [*commands, *expire]:
                pipe.execute_command(*command)
            replies = self._unless_transient(pipe.execute(raise_on_error=False))
            return replies[:len(commands)]

        responses = self._retrying(call, "a query")
        out: list[list[list[Any]]] = []
        for response in responses:
            if isinstance(response, self._response_error):
                if "empty key" in str(response) and not write:
                    out.append([])
                    continue
                if _index_not_ready(str(response)) and not retried and not write:
                    time.sleep(INDEX_WAIT / 4)  # see `run`: asked again once, as a whole
                    return self.run_many(key, statements, retried=True)
                raise BackendError(f"FalkorDB at {self.settings.url} refused a query: {response}")
            out.append(_rows(response))
        return out

    def exists_and_read(self, key: str, statements: Sequence[tuple[str, Mapping[str, Any]]]
                        ) -> tuple[bool, list[list[list[Any]]]]:
        """Whether graph ``key`` exists, and the rows of read-only ``statements`` on it (none if it
        does not), in one round trip."""
        commands = [["GRAPH.RO_QUERY", key, _params_header(params) + query, "--compact"]
                    for query, params in statements]

        def call() -> Any:
            pipe = self._db.connection.pipeline(transaction=False)
            pipe.execute_command("EXISTS", key)
            for command in commands:
                pipe.execute_command(*command)
            return self._unless_transient(pipe.execute(raise_on_error=False))

        exists, *responses = self._retrying(call, "EXISTS")
        if isinstance(exists, self._response_error):
            raise BackendError(f"FalkorDB at {self.settings.url} refused EXISTS: {exists}")
        if not exists:
            return False, [[] for _ in statements]
        out: list[list[list[Any]]] = []
        for response in responses:
            if isinstance(response, self._response_error):
                if "empty key" in str(response):  # deleted between the two commands
                    out.append([])
                    continue
                raise BackendError(f"FalkorDB at {self.settings.url} refused a query: {response}")
            out.append(_rows(response))
        return True, out

    @property
    def cluster(self) -> bool:
        """Whether the server is a node of a Redis Cluster (the client then routes each graph key
        to its shard)."""
        import redis

        return isinstance(self._db.connection, redis.RedisCluster)

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
