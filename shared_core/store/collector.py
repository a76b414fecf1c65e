"""`collector_paused`: Python's cyclic garbage collector off around bulk work that allocates many
objects in no cycle (a write's insert in the engine, a namespace's load in the durable store).

>>> import gc
>>> with collector_paused():
...     gc.isenabled()
False
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["collector_paused"]


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for the duration (back on after, if it was on).

    An insert allocates a few objects per memory (node, edges, hits), none in cycles, and every 700
    allocations CPython scans the young objects, every tenth scan the older ones, and now and then
    every object the process holds: in a large bulk build those scans find nothing and cost a large
    share of the time. Nothing is lost: a deferred scan runs at the next allocation after the
    insert. The atlas pauses it for a whole write (validation, insert, events and the returned
    copies), so no full scan runs inside a batch. The embedding model's call is left out: the
    switch is process-wide, and that call can be long.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
