"""`TimeIndex`: memory ids sorted by (timestamp, id), for a partition's time-range queries.

Each entry costs two machine words: the timestamp in an ``array('d')`` and the id in a list, in
chunks of at most `CHUNK` entries (no tuple per entry). Chunks keep an insert in the middle to a
short move (a batch written at one time, or memories that happened in the past, land anywhere)
instead of a move of the whole column. Appends, the usual
case (a memory that happened now), go straight to the last chunk; a batch of one time goes in
chunk by chunk (`TimeIndex.add_many`). Hand-written because
``sortedcontainers.SortedList`` keeps one Python object per entry, the cost this avoids.

>>> t = TimeIndex()
>>> for ts, i in ((2.0, "b"), (1.0, "z"), (2.0, "a"), (3.0, "c")):
...     t.add(ts, i)
>>> t.between(1.5, 3.0), t.remove(2.0, "a"), t.between(0.0, 9.0), len(t)
(['a', 'b'], True, ['z', 'b', 'c'], 3)
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Sequence

__all__ = ["CHUNK", "TimeIndex"]

CHUNK = 1024  # entries per chunk at most; a fuller chunk splits in two


class TimeIndex:
    """Ids sorted by (timestamp, id); equal to another with the same entries."""

    __slots__ = ("_firsts", "_ids", "_size", "_stamps")

    def __init__(self) -> None:
        self._stamps: list[array[float]] = [array("d")]  # chunks, each sorted by (timestamp, id)
        self._ids: list[list[str]] = [[]]
        self._firsts: list[tuple[float, str]] = []  # (timestamp, id) of the first entry of chunks 1..
        self._size = 0

    def add(self, timestamp: float, node_id: str) -> None:
        stamps, ids = self._stamps[-1], self._ids[-1]
        if not stamps or timestamp > stamps[-1] or (timestamp == stamps[-1] and node_id >= ids[-1]):
            c = len(self._ids) - 1  # the usual case: after everything
            i = len(ids)
        else:
            c = bisect_right(self._firsts, (timestamp, node_id))
            stamps, ids = self._stamps[c], self._ids[c]
            if stamps and stamps[0] == timestamp == stamps[-1]:  # a chunk of one time (a batch's): by id alone
                lo, hi = 0, len(stamps)
            else:
                lo = bisect_left(stamps, timestamp)
                hi = bisect_right(stamps, timestamp, lo)
            i = bisect_left(ids, node_id, lo, hi)
        stamps.insert(i, timestamp)
        ids.insert(i, node_id)
        self._size += 1
        if len(ids) > CHUNK:
            self._split(c)

    def add_many(self, timestamps: Sequence[float], node_ids: Sequence[str]) -> None:
        """`add` of each entry; the entries end up the same (`_flat`), though chunks may split
        at other places (and of two entries alike in time and id, 0.0 and -0.0 may swap).

        A batch of one timestamp (what a write of many memories stamps "now") is sorted by id
        and merged chunk by chunk: each chunk it reaches is found once, by one `bisect_left` in
        the sorted batch, not once an entry by a bisect over the chunks' first entries (a
        tuple compare at each step), and a chunk splits once it is full of the batch's entries.
        Other batches go entry by entry.
        """
        n = len(node_ids)
        stamps = list(timestamps)
        if len(stamps) != n:
            raise ValueError(f"{len(stamps)} timestamps for {n} ids")
        t = stamps[0] if n else 0.0
        if n < 2 or t != t or stamps.count(t) != n:  # (count compares by ==: -0.0 and 0.0 alike)
            for timestamp, node_id in zip(stamps, node_ids, strict=True):
                self.add(timestamp, node_id)
            return
        order = sorted(range(n - 1, -1, -1), key=node_ids.__getitem__)  # equal ids: the later first, as `add` puts them
        new = [node_ids[j] for j in order]
        new_stamps = [stamps[j] for j in order]  # each entry keeps its own float (0.0 or -0.0)
        firsts = self._firsts
        c = bisect_right(firsts, (t, new[0]))  # the chunk of the smallest new entry
        j = 0
        while j < n:
            # the entries before the next chunk's first (all, if it starts after time t or is none)
            stop = bisect_left(new, firsts[c][1], j) if c < len(firsts) and firsts[c][0] == t else n
            if stop > j:
                c += self._insert_sorted(c, t, new[j:stop], new_stamps[j:stop])
            j = stop
            c += 1

    def _insert_sorted(self, c: int, t: float, ids: list[str], stamps: list[float]) -> int:
        """Insert entries of time ``t`` sorted by id into chunk ``c``, where `add` would put
        each; split the chunk while it is over `CHUNK`; return how many chunks the splits added."""
        chunk_stamps, chunk_ids = self._stamps[c], self._ids[c]
        if chunk_stamps and chunk_stamps[0] == t == chunk_stamps[-1]:  # as in `add`
            lo, hi = 0, len(chunk_stamps)
        else:
            lo = bisect_left(chunk_stamps, t)
            hi = bisect_right(chunk_stamps, t, lo)
        at = [bisect_left(chunk_ids, node_id, lo, hi) for node_id in ids]  # on the chunk before any insert
        if at[0] == at[-1]:  # all in one place (after the chunk's entries when time moves on): one move
            chunk_ids[at[0]:at[0]] = ids
            chunk_stamps[at[0]:at[0]] = array("d", stamps)
        else:
            for i, node_id, stamp in zip(reversed(at), reversed(ids), reversed(stamps), strict=True):
                chunk_ids.insert(i, node_id)  # from the last: the earlier places stay right
                chunk_stamps.insert(i, stamp)
        self._size += len(ids)
        added, k = 0, c
        while k <= c + added:  # halves until every piece is at most CHUNK
            if len(self._ids[k]) > CHUNK:
                self._split(k)
                added += 1
            else:
                k += 1
        return added

    def _split(self, c: int) -> None:
        """Split chunk ``c`` in halves (as `add` does when a chunk is over `CHUNK`)."""
        stamps, ids = self._stamps[c], self._ids[c]
        half = len(ids) // 2
        self._stamps.insert(c + 1, stamps[half:])
        self._ids.insert(c + 1, ids[half:])
        del stamps[half:], ids[half:]
        self._firsts.insert(c, (self._stamps[c + 1][0], self._ids[c + 1][0]))

    def remove(self, timestamp: float, node_id: str) -> bool:
        """Remove one entry; False if there was none."""
        c = bisect_right(self._firsts, (timestamp, node_id))
        stamps, ids = self._stamps[c], self._ids[c]
        lo = bisect_left(stamps, timestamp)
        i = bisect_left(ids, node_id, lo, bisect_right(stamps, timestamp, lo))
        if i == len(ids) or ids[i] != node_id or stamps[i] != timestamp:
            return False
        del stamps[i], ids[i]
        self._size -= 1
        if c and not ids:  # an empty chunk goes (the first one stays, so there is always one)
            del self._stamps[c], self._ids[c], self._firsts[c - 1]
        elif c and i == 0:
            self._firsts[c - 1] = (stamps[0], ids[0])
        return True

    def between(self, start: float, end: float) -> list[str]:
        """Ids whose timestamp lies in ``[start, end)``, oldest first."""
        out: list[str] = []
        c = bisect_left(self._firsts, (start, ""))  # the chunk holding the first entry >= start
        for stamps, ids in zip(self._stamps[c:], self._ids[c:], strict=True):
            if stamps and stamps[0] >= end:
                break
            out += ids[bisect_left(stamps, start):bisect_left(stamps, end)]
        return out

    def __len__(self) -> int:
        return self._size

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TimeIndex):
            return NotImplemented
        return self._flat() == other._flat()

    __hash__ = None  # type: ignore[assignment]

    def _flat(self) -> tuple[list[float], list[str]]:
        return [t for s in self._stamps for t in s], [i for ids in self._ids for i in ids]
