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
from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["CAPACITIES", "IntLists"]

CAPACITIES: tuple[int, ...] = tuple(int(4 * 1.5 ** k + 0.5) for k in range(48))
_CAPACITY: npt.NDArray[np.int64] = np.array(CAPACITIES, dtype=np.int64)
BULK = 2048  # `IntLists.append_each` takes this many values or more with numpy (fewer: one by one is faster)
_INT_MIN, _INT_MAX = -(1 << 31), (1 << 31) - 1  # what an array('i') holds
_ZEROS: tuple[array[int], ...] = tuple(array("i", [0]) * c for c in CAPACITIES[:16])  # new blocks, to copy


def _lists(slots: Sequence[int] | npt.NDArray[np.int64], values: Sequence[int] | npt.NDArray[np.int64]
           ) -> tuple[list[int], list[int]]:
    return (slots.tolist() if isinstance(slots, np.ndarray) else list(slots),
            values.tolist() if isinstance(values, np.ndarray) else list(values))


class IntLists:
    """Per slot (numbered from 0, added with `add_slots`), an ordered list of ints."""

    __slots__ = ("_free", "classes", "data", "lengths", "starts")

    def __init__(self) -> None:
        self.data: array[int] = array("i")
        self.starts: array[int] = array("i")  # slot -> start of its block in `data`
        self.lengths: array[int] = array("i")  # slot -> list length (0: no block)
        self.classes: array[int] = array("b")  # slot -> capacity class of its block (-1: none)
        # class -> free block starts; a class's list is made when a block of it is first freed
        # (not all up front: an empty namespace must cost what it holds)
        self._free: list[array[int]] = [array("i")]

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
            free = self._free[k] if k < len(self._free) else None
            if free:
                b = free.pop()
            else:
                b = len(data)
                data.extend(_ZEROS[k] if k < len(_ZEROS) else array("i", [0]) * CAPACITIES[k])
            if n:
                a = self.starts[s]
                data[b:b + n] = data[a:a + n]
                self._freed(k - 1, a)
            self.starts[s] = b
            self.classes[s] = k
        else:
            b = self.starts[s]
        data[b + n] = value
        self.lengths[s] = n + 1

    def append_each(self, slots: Sequence[int] | npt.NDArray[np.int64],
                    values: Sequence[int] | npt.NDArray[np.int64]) -> None:
        """`append` of each value to its slot, in order; the same lists and blocks as that.

        From `BULK` values on, only the values that take a block (a list's first, or one that
        finds its block full) go one by one, in order, so blocks are taken and freed in the
        same order as one by one; the others are written with numpy: those before their list's
        first block change into the block it has, and, for a list whose block changes once,
        those after the change into the new block (a list whose block changes twice goes one
        by one from the first change). In a write of 1,000 memories about two thirds of the
        8,000 values go with numpy: a new memory's lists take a block for their first value and
        then have room for three more. The values must come as int64 arrays (converting lists
        costs what numpy saves); below `BULK` values one by one is faster.
        """
        m = len(slots)
        if m != len(values):
            raise ValueError(f"{m} slots for {len(values)} values")
        if m < max(BULK, 1):
            self._append_loop(*_lists(slots, values))
            return
        s = np.asarray(slots, dtype=np.int64)
        v = np.asarray(values, dtype=np.int64)
        if (int(s.min()) < 0 or int(s.max()) >= len(self.lengths) or int(v.min()) < _INT_MIN
                or int(v.max()) > _INT_MAX):
            self._append_loop(*_lists(slots, values))  # raises as `append` would (or wraps a negative slot alike)
            return
        order = np.argsort(s, kind="stable")
        grouped = s[order]
        first = np.empty(m, dtype=bool)
        first[0] = True
        np.not_equal(grouped[1:], grouped[:-1], out=first[1:])
        run = np.flatnonzero(first)
        counts = np.diff(np.append(run, m))
        rank = np.empty(m, dtype=np.int64)
        rank[order] = np.arange(m) - np.repeat(run, counts)  # the value's place among its slot's values
        count = np.empty(m, dtype=np.int64)
        count[order] = np.repeat(counts, counts)  # its slot's values in all
        lengths = np.frombuffer(self.lengths, dtype=np.int32)
        starts = np.frombuffer(self.starts, dtype=np.int32)
        classes = np.frombuffer(self.classes, dtype=np.int8)
        n0 = lengths[s].astype(np.int64)
        k0 = classes[s].astype(np.int64)
        full = _CAPACITY[np.maximum(k0, 0)]
        # the rank of each slot's first block change (a list's first value, or its block full),
        # and of its second (the new block full)
        change = np.where(n0 == 0, 0, full - n0)
        second = np.where(n0 == 0, CAPACITIES[0], change + _CAPACITY[np.minimum(k0 + 1, len(CAPACITIES) - 1)] - full)
        before = rank < change
        once = count <= second
        after = (rank > change) & once
        at = np.flatnonzero(~(before | after))  # one by one, in order
        data = np.frombuffer(self.data, dtype=np.int32)
        data[starts[s[before]] + n0[before] + rank[before]] = v[before]
        del data  # `_append_loop` may extend the array: no view may be held then
        ahead = np.minimum(count, change)
        lengths[s] = n0 + ahead  # (a slot's every entry writes the same length)
        self._append_loop(s[at].tolist(), v[at].tolist())
        data = np.frombuffer(self.data, dtype=np.int32)
        data[starts[s[after]] + n0[after] + rank[after]] = v[after]
        del data
        done = once & (count > change)
        lengths[s[done]] = (n0 + count)[done]

    def _append_loop(self, slots: Iterable[int], values: Iterable[int]) -> None:
        """`append` of each value to its slot, in order (the case with room in the block inlined:
        a call per value costs more than the append)."""
        lengths, starts, classes, data, capacities, append = (self.lengths, self.starts, self.classes, self.data,
                                                               CAPACITIES, self.append)
        smallest, zeros = self._free[0], _ZEROS[0]
        for s, value in zip(slots, values, strict=True):
            n = lengths[s]
            if n and n < capacities[classes[s]]:
                data[starts[s] + n] = value  # `append` extends `data` in place: this stays the same array
                lengths[s] = n + 1
            elif not n:  # an empty list's first value (a new memory's): a block of the smallest capacity
                if smallest:
                    b = smallest.pop()
                else:
                    b = len(data)
                    data.extend(zeros)
                starts[s], classes[s], data[b], lengths[s] = b, 0, value, 1
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
            self._freed(k, self.starts[s])
        self.lengths[s], self.classes[s] = 0, -1

    def _freed(self, k: int, start: int) -> None:
        """Put the block of class ``k`` at ``start`` on its free list (made if it is the first)."""
        free = self._free
        while len(free) <= k:
            free.append(array("i"))
        free[k].append(start)
