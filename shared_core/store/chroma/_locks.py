"""The two locks of a chroma directory: the atlas's commit lock, and the OS lock of one writer.

`CommitLock` is the re-entrant lock the atlas takes for its writes (`ChromaBackend.attach`
returns it): when a write's outermost hold is released, the backend seals the changes it made
into one log record (`shared_core.store.chroma.backend`), so a memory and its edges are
committed together or not at all. `lock_directory` takes an exclusive ``fcntl.flock`` on
``elastic_atlas.lock`` so that a second process opening the directory for writing fails with
`BackendError` (the OS releases it when the process dies).

>>> import tempfile
>>> from pathlib import Path
>>> path = Path(tempfile.mkdtemp())
>>> fd = lock_directory(path, read_only=False)
>>> lock_directory(path, read_only=False)
Traceback (most recent call last):
...
shared_core.values.errors.BackendError: ... is open for writing in another process; ...
>>> os.close(fd)
"""

from __future__ import annotations

import errno
import fcntl
import os
import threading
from pathlib import Path
from typing import Protocol

from ...values.errors import BackendError

__all__ = ["LOCK_NAME", "CommitLock", "lock_directory"]

LOCK_NAME = "elastic_atlas.lock"


class _Sealer(Protocol):
    """What `CommitLock` calls on its backend (`shared_core.store.chroma.backend.ChromaBackend`)."""

    def _seal(self) -> int | None: ...

    def _recover(self) -> None: ...

    def _after_seal(self, seq: int | None) -> None: ...


class CommitLock:
    """A re-entrant lock that seals a write's changes into a log record when its outermost
    hold is released (see `ChromaBackend`); under ``sync`` it then waits for the commit."""

    def __init__(self, backend: _Sealer) -> None:
        self._inner = threading.RLock()
        self._depth = 0
        self._backend = backend

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        ok = self._inner.acquire(blocking, timeout)
        if ok:
            self._depth += 1
        return ok

    def release(self) -> None:
        if self._depth > 1:
            self._depth -= 1
            self._inner.release()
            return
        failure: Exception | None = None
        try:
            seq = self._backend._seal()
        except Exception as exc:  # whatever it is, the write is not in the log
            seq, failure = None, exc
        finally:
            self._depth = 0
            self._inner.release()
        if failure is not None:
            self._backend._recover()
            raise BackendError(f"a write could not be recorded ({failure!r}); it is undone") from failure
        self._backend._after_seal(seq)

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def lock_directory(path: Path, *, read_only: bool) -> int:
    """Take the directory's writer lock; returns its file descriptor (close it to release), or -1
    for a read-only directory whose lock file cannot be opened (nothing will be written)."""
    lock_path = path / LOCK_NAME
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        if read_only:
            return -1  # nothing will be written: no lock needed
        raise
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
            raise BackendError(f"{str(path)!r} is open for writing in another process; one process "
                               "writes a chroma directory (for many, use the FalkorDB backend)") from None
        raise
    return fd
