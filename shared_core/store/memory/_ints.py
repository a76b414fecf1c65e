"""One shared ``int`` object per row or slot number, for the id -> number dicts of the stores.

CPython caches only the ints from -5 to 256: every other int a store keeps as a dict value is an
object of its own. The graph store (id -> slot), the keyword index (id -> row) and the vector
index (id -> label) each number a namespace's memories from 0, so without sharing a memory
costs three such objects for three equal-ranged numbers. Taking them from one table costs one
object and its place in the table a number, paid once for every store and namespace of the
process. The table only grows, to the largest number asked for.

>>> numbers(1000, 1003) == [1000, 1001, 1002] and numbers(1000, 1001)[0] is numbers(1000, 1001)[0]
True
"""

from __future__ import annotations

import threading

__all__ = ["number", "numbers", "shared"]

_table: list[int] = list(range(1024))
_grow_lock = threading.Lock()


def _grow(stop: int) -> None:
    with _grow_lock:  # two threads extending at once would number the table wrongly
        size = len(_table)
        if stop > size:
            _table.extend(range(size, max(stop, size + size // 8)))


def number(i: int) -> int:
    """The shared object for ``i >= 0``."""
    if i >= len(_table):
        _grow(i + 1)
    return _table[i]


def numbers(start: int, stop: int) -> list[int]:
    """The shared objects for ``range(start, stop)`` (``0 <= start``)."""
    if stop > len(_table):
        _grow(stop)
    return _table[start:stop]


def shared(i: int) -> int:
    """The shared object for ``i`` if the table holds it, else ``i`` itself (the table never grows
    for it).

    >>> shared(1000) is number(1000), shared(-1), shared(1 << 40) == 1 << 40
    (True, -1, True)
    """
    return _table[i] if 0 <= i < len(_table) else i
