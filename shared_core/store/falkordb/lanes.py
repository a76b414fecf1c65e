"""The backend's own connections to a single FalkorDB server (`Lane`), in place of redis-py's
pool and pipeline, and the replies of writes not waited for (`Lane.behind`, `Lane.settle`)."""

from __future__ import annotations

import atexit
import logging
import os
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from .replies import reply_rows

__all__ = ["Lane"]

logger = logging.getLogger("shared_core")


class Lane:
    """Connections of the backend's own to a single server, which the statements use in place of
    redis-py's pool and pipeline: a recall sends a dozen statements in a few round trips, and
    the pool's bookkeeping on each (metrics, a readiness poll of the socket, retry wrappers)
    cost this process about as much as reading the replies.

    A round trip takes a free connection (or opens one with the pool's own settings: address,
    credentials, timeouts, decoding), writes every command in one send, reads every reply (a
    refusal as its `redis.ResponseError`, the others unaffected), and puts the connection back.
    Any other failure (a lost connection, a timeout) closes that connection and propagates, for
    `client.Connection._retrying` to retry the whole round trip on a new one: a connection half read is
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
        #: connections whose last replies are still to be read (`behind`): (connection, the
        #: statement of each reply owed, None for another command, what for the log)
        self._owed: list[tuple[Any, list[str | None], str]] = []
        self._settling = threading.Lock()
        # a process that exits right after a recall reads the reply first (closing a socket with a
        # reply unread resets the connection, which may drop the write the server has yet to run)
        atexit.register(_settle_at_exit, weakref.ref(self))

    def _forked(self) -> None:
        """Under ``_lock``: a forked child never shares its parent's sockets (nor their replies)."""
        if self._pid != os.getpid():
            self._free, self._owed, self._pid = [], [], os.getpid()

    def settle(self) -> None:
        """Read the replies still owed by `behind`'s writes (waiting for them), before any other
        command: every command sent after this returns runs after those writes, on any connection.
        A refused write, or a connection lost before its reply, is logged (``shared_core``
        logger, ERROR) with the graph's key, not raised: the call that sent it has returned, and
        the one that settles it is another (see `Connection.write_behind`)."""
        with self._settling:
            with self._lock:
                self._forked()
                owed, self._owed = self._owed, []
            for conn, queries, what in owed:
                try:
                    for query in queries:
                        try:
                            reply = conn.read_response()
                        except self._refused as exc:
                            reply = exc
                        if isinstance(reply, self._refused):
                            logger.error("FalkorDB refused a write sent behind a reply (%s): %s", what, reply)
                        elif query is not None:
                            reply_rows(query, reply)  # (a statement's rows: none of them used)
                except Exception as exc:  # the write may or may not have run: say so, keep going
                    conn.disconnect()
                    logger.error("FalkorDB: the connection was lost before the reply to a write sent behind "
                                 "(%s), which may or may not have run: %s", what, exc)
                    continue
                with self._lock:
                    self._free.append(conn)

    def behind(self, reads: Sequence[Sequence[Any]], writes: Sequence[Sequence[Any]], what: str,
               queries: Sequence[str | None]) -> list[Any]:
        """``reads`` then ``writes`` on one connection in one send; the reads' replies (a refused
        one as its error), the writes' left unread, owed until the next `settle` (which every
        other command of this lane runs first; ``queries``: each write's statement, None for a
        command that is not one). The server serves one connection's commands in order, so the
        writes run after the reads, and before anything sent after `settle`."""
        self.settle()
        with self._lock:
            self._forked()
            conn = self._free.pop() if self._free else None
        if conn is None:
            conn = self._open()
        try:
            conn.send_packed_command(conn.pack_commands([*reads, *writes]), check_health=False)
            replies: list[Any] = []
            for _ in reads:
                try:
                    replies.append(conn.read_response())
                except self._refused as exc:
                    replies.append(exc)
        except BaseException:
            conn.disconnect()
            raise
        with self._lock:
            self._owed.append((conn, list(queries), what))
        return replies

    def send(self, commands: Sequence[Sequence[Any]]) -> list[Any]:
        if self._owed or self._settling.locked():
            self.settle()
        with self._lock:
            self._forked()
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
        if self._owed or self._settling.locked():
            self.settle()
        with self._lock:
            self._forked()
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
        self.settle()
        with self._lock:
            free, self._free = self._free, []
        for conn in free:
            conn.disconnect()


def _settle_at_exit(lane: weakref.ref[Lane]) -> None:
    found = lane()
    if found is not None:
        found.settle()
