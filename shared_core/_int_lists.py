"""`IntLists`: a growable list of ints per slot, all in one ``array('i')`` (the graph store's
adjacency lists).

Each slot's list sits in a block of one of `CAPACITIES` (4, 6, 9, 13, 19, ... each about 1.5
times the one before); a full block moves to a block of the next capacity, and freed blocks are
reused by the next list that needs their capacity. Written by hand because the alternative, one
``array`` object per slot, costs a 64-byte header plus allocator rounding per slot: about half
of what a memory's edge lists take. (Numpy's ragged-array idioms rebuild on every insert.)

>>> lists = IntLists()
>>> lists.add_slots(2)
>>> for v in range(7):
...     lists.append(0, v)
>>> lists.append(1, 42)
>>> lists.remove(0, 3)
>>> lists.get(0).tolist(), lists.get(1).tolist(), lists.length(0)
([0, 1, 2, 4, 5, 6], [42], 6)
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable

__all__ = ["CAPACITIES", "IntLists"]

CAPACITIES: tuple[int, ...] = tuple(int(4 * 1.5 ** k + 0.5) for k in range(48))
_ZEROS: tuple[array[int], ...] = tuple(array("i", [0]) * c for c in CAPACITIES[:16])  # new blocks, to copy


class IntLists:
    """Per slot (numbered from 0, added with `add_slots`), an ordered list of ints."""

    __slots__ = ("_free", "classes", "data", "lengths", "starts")

    def __init__(self) -> None:
        self.data: array[int] = array("i")
        self.starts: array[int] = array("i")  # slot -> start of its block in `data`
        self.lengths: array[int] = array("i")  # slot -> list length (0: no block)
        self.classes: array[int] = array("b")  # slot -> capacity class of its block (-1: none)
        self._free: list[array[int]] = [array("i") for _ in CAPACITIES]  # class -> free block starts

    def add_slots(self, count: int) -> None:
        """Make room for ``count`` more slots (empty lists)."""
        self.starts.frombytes(bytes(self.starts.itemsize * count))
        self.lengths.frombytes(bytes(self.lengths.itemsize * count))
        self.classes.extend(array("b", [-1]) * count)

    def get(self, s: int) -> array[int]:
        """A copy of slot ``s``'s list."""
        a = self.starts[s]
        return self.data[a:a + self.lengths[s]]

    def length(self, s: int) -> int:
        return self.lengths[s]

    def append(self, s: int, value: int) -> None:
        n = self.lengths[s]
        k = self.classes[s]
        data = self.data
        if k < 0 or n == CAPACITIES[k]:  # a block of the next capacity (the move is inlined: hot)
            k += 1
            free = self._free[k]
            if free:
                b = free.pop()
            else:
                b = len(data)
                data.extend(_ZEROS[k] if k < len(_ZEROS) else array("i", [0]) * CAPACITIES[k])
            if n:
                a = self.starts[s]
                data[b:b + n] = data[a:a + n]
                self._free[k - 1].append(a)
            self.starts[s] = b
            self.classes[s] = k
        else:
            b = self.starts[s]
        data[b + n] = value
        self.lengths[s] = n + 1

    def append_each(self, slots: Iterable[int], values: Iterable[int]) -> None:
        """`append` of each value to its slot, in order (the case with room in the block inlined:
        a call per value costs more than the append)."""
        lengths, starts, classes, data, capacities, append = (self.lengths, self.starts, self.classes, self.data,
                                                               CAPACITIES, self.append)
        for s, value in zip(slots, values, strict=True):
            n = lengths[s]
            if n and n < capacities[classes[s]]:
                data[starts[s] + n] = value  # `append` extends `data` in place: this stays the same array
                lengths[s] = n + 1
            else:
                append(s, value)

    def remove(self, s: int, value: int) -> None:
        """Remove the first ``value`` from slot ``s``'s list (ValueError if it has none)."""
        a, n, data = self.starts[s], self.lengths[s], self.data
        i = data[a:a + n].index(value)
        data[a + i:a + n - 1] = data[a + i + 1:a + n]
        self.lengths[s] = n - 1
        if n == 1:
            self.clear(s)

    def clear(self, s: int) -> None:
        k = self.classes[s]
        if k >= 0:
            self._free[k].append(self.starts[s])
        self.lengths[s], self.classes[s] = 0, -1
