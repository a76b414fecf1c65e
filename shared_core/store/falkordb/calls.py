"""`CallLock`: the atlas's lock on a FalkorDB backend, which numbers the atlas's calls.

An atlas takes its lock around every call (`shared_core.store.contract.AtlasLock`) and asks the
backend for a namespace's partition several times within one call (a write asks before, during
and after storing). Each hand-out used to start a fresh view of the server: one more ``EXISTS``
and the call's reads again. With the call numbered, `FalkorDBBackend.partition` hands the same
partition out again within one call with the view it has (what the call read, and this
process's own writes), and starts a fresh one for the next call:

>>> lock = CallLock()
>>> lock.current() is None  # not held: no call
True
>>> with lock:
...     first = lock.current()
...     with lock:  # re-entered: the same call
...         assert lock.current() == first
>>> with lock:
...     assert lock.current() != first  # the next call
"""

from __future__ import annotations

import threading

__all__ = ["CallLock"]


class CallLock:
    """A re-entrant lock whose outermost hold is one atlas call, numbered (thread safe)."""

    def __init__(self) -> None:
        self._inner = threading.RLock()
        self._depth = 0
        self._call = 0
        self._owner: int | None = None

    def current(self) -> int | None:
        """The number of the call the current thread holds the lock for, or None."""
        return self._call if self._owner == threading.get_ident() else None

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        ok = self._inner.acquire(blocking, timeout)
        if ok:
            self._depth += 1
            if self._depth == 1:
                self._call += 1
                self._owner = threading.get_ident()
                self._entered()
        return ok

    def release(self, *, failed: bool = False) -> None:
        self._depth -= 1
        if self._depth:
            self._inner.release()
            return
        self._owner = None
        try:
            self._leaving(failed=failed)
        finally:
            self._inner.release()

    def _entered(self) -> None:
        """Called when a call begins (the outermost hold is taken)."""

    def _leaving(self, *, failed: bool) -> None:
        """Called when a call ends, before the lock is released (``failed``: it raised)."""

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, exc_type: type[BaseException] | None, *_: object) -> None:
        self.release(failed=exc_type is not None)
