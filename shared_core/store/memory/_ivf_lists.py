"""`ListRoom`: the room reserved in each inverted list of the approximate index (a faiss
``IndexIVFScalarQuantizer`` storing float16, 2 bytes a component, or an ``IndexIVFFlat``, 4:
``code_size``), grown by a sixteenth (float16) or a thirty-second (float32) instead of doubled;
`DirectMap`: the index's direct map (label -> list and offset) kept in faiss's 8-byte-a-label
array map instead of its hashtable.

faiss keeps a list's vectors in a ``std::vector<uint8_t>`` (inside a ``MaybeOwnedVector``) and
appends one vector at a time, so a full list doubles: over a namespace's growth about a third
of the bytes it holds for vectors is spare room. Here, before each add, a list that
would overflow gets a buffer of ``need + need // 16 + 2`` entries (float16; ``need // 32`` for
float32), without the 2 when the add gives it more than 2 (`room_for`; `reserve`: copied out,
emptied, resized to that room, which from size 0 allocates exactly that, and refilled); a list
that removals left under half full is given back its spare room with a new buffer swapped in
(`shrink`). A list's id column (8 bytes an entry) is grown alike when its codes are, and
otherwise left to ``std::vector``'s doubling and modelled (`ListRoom.ids`).

Hand-written because faiss's Python API has no call that sets a list's capacity: ``resize``
keeps the capacity, and a fresh ``ArrayInvertedLists`` per retrain is a full copy that starts
doubling again. The shrink's swap goes through faiss's own ``UInt8Vector.swap``; the
``MaybeOwnedVector`` around it caches the data pointer, which its ``resize`` refreshes.

>>> import faiss, numpy as np
>>> lists = faiss.ArrayInvertedLists(2, 4)
>>> room = ListRoom(2, code_size=4)
>>> room.reserve(lists, np.array([0, 0]), np.array([2, 0]))
>>> room.codes.tolist(), lists.list_size(0)
([4, 0], 0)
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["SHIFT", "DirectMap", "ListRoom", "place", "room_for"]

SHRINK_BELOW = 0.5  # a list filled below this fraction of its room gets the spare room back ...
SHRINK_MIN = 64  # ... once the spare room is at least this many entries


FEW = 2  # entries of spare room beyond a 16th or 32nd, for lists not written in large batches (`room_for`)
SHIFT = {2: 4, 4: 5}  # bytes a component -> `room_for`'s shift: the same spare bytes a vector at either width


def room_for(need: npt.NDArray[np.int64], added: npt.NDArray[np.int64] | None = None, *, shift: int = 5
             ) -> npt.NDArray[np.int64]:
    """Entries to reserve for a list that must hold ``need`` after ``added`` more came at once:
    ``2**-shift`` more (a thirty-second by default), plus `FEW` (2) unless ``added`` exceeds that
    spare room: ``spare = floor(need / 2**shift) + 2``; ``need + spare`` if ``added <= spare`` (or
    ``added`` is not given), else ``need + spare - 2``.

    The room is a trade of bytes for copies: a list grown by a factor ``g`` is copied about
    ``1 / (g - 1)`` times over its growth and holds ``(g - 1) / 2`` of it spare on average.
    Growing by an eighth, a sixteenth or a thirty-second trades fewer copies for more spare
    bytes; faiss's doubling holds several times the spare room. Float16 lists grow by a
    sixteenth (`SHIFT`), which holds about the bytes a thirty-second of float32 held, for fewer
    copies; float32 lists by a thirty-second.

    Why not the 2 for a list that took more at once than its spare room would hold: it is
    written in batches larger than that room, so the next such batch copies it whatever it has
    spare: a large batch regrows nearly every list either way, and the 2 entries would be most
    of the spare room; a list written one memory at a time keeps them.

    >>> room_for(np.array([1, 100, 1000])).tolist(), room_for(np.array([100, 100]), np.array([5, 6])).tolist()
    ([3, 105, 1033], [105, 103])
    >>> room_for(np.array([1, 100, 1000]), shift=4).tolist()
    [3, 108, 1064]
    """
    spare = (need >> shift) + FEW
    room: npt.NDArray[np.int64] = need + spare
    return room if added is None else room - FEW * (added > spare)


def _ids_room(room: npt.NDArray[np.int64], need: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """The capacity of faiss's id columns after one-at-a-time appends up to ``need`` entries from
    capacities ``room``: ``std::vector`` (libstdc++) doubles a full vector (0 goes to 1).

    >>> _ids_room(np.array([0, 4, 8]), np.array([3, 9, 8])).tolist()
    [4, 16, 8]
    """
    room = room.copy()
    while (short := room < need).any():
        room[short] = np.maximum(1, 2 * room[short])
    return room


class ListRoom:
    """Per inverted list, the entries its code buffer (``codes``) and id column (``ids``) have room for."""

    __slots__ = ("_code_size", "_shift", "codes", "ids")

    def __init__(self, lists: int, *, code_size: int, shift: int = 5) -> None:
        self._code_size = code_size
        self._shift = shift  # `room_for`'s
        self.codes = np.zeros(lists, dtype=np.int64)
        self.ids = np.zeros(lists, dtype=np.int64)

    def nbytes(self) -> int:
        """Bytes the lists hold for codes and ids, used or not."""
        return int(self.codes.sum()) * self._code_size + int(self.ids.sum()) * 8

    def reserve(self, invlists: Any, sizes: npt.NDArray[np.int64], need: npt.NDArray[np.int64]) -> None:
        """Room for ``need[l]`` entries in each list ``l`` of ``invlists`` (a faiss
        ``ArrayInvertedLists`` holding ``sizes[l]``), before faiss appends to them."""
        short = np.flatnonzero(need > self.codes)
        if short.size:  # (most single adds find room: no numpy call on an empty selection then)
            target = room_for(need[short], need[short] - sizes[short], shift=self._shift)
            moves = []
            for lst, size, want in zip(short.tolist(), sizes[short].tolist(), target.tolist(), strict=True):
                if size == 0:  # an empty list: resizing from nothing allocates exactly (ids too)
                    invlists.resize(lst, want)
                    invlists.resize(lst, 0)
                    self.ids[lst] = max(int(self.ids[lst]), want)
                    self.codes[lst] = want
                else:
                    moves.append((lst, size, want))
            self._grow(invlists, moves)
            for lst, _, want in moves:
                self.codes[lst] = want
                self.ids[lst] = max(int(self.ids[lst]), want)
        short = np.flatnonzero(need > self.ids)
        if short.size:
            self.ids[short] = _ids_room(self.ids[short], need[short])

    def reserve_one(self, invlists: Any, sizes: npt.NDArray[np.int64], lst: int) -> None:
        """`reserve` for one entry more in list ``lst``: nothing to do (and no numpy call over
        the lists) while the list has room for it in both columns, as most single adds find."""
        need = int(sizes[lst]) + 1
        if need > self.codes[lst] or need > self.ids[lst]:
            more = sizes.copy()
            more[lst] = need
            self.reserve(invlists, sizes, more)

    def _grow(self, invlists: Any, moves: list[tuple[int, int, int]]) -> None:
        """For each ``(list, size, room)``, the room above the list's capacity, through faiss's
        own ``resize``: the list is cut to ``keep = room // 2`` entries, then resized to
        ``room``, which makes ``std::vector`` allocate exactly ``keep + max(keep, room - keep)
        = room`` and move the kept entries itself; the entries past ``keep`` are copied out to a
        scratch buffer before the cut and back after.

        faiss's calls suffice here, unlike in `_move` (a shrink): a list resized within its
        capacity keeps its buffer. Against `_move` this permutes no lists: one
        ``permute_invlists`` rebuilds the table of all lists, and half of a grown list is moved by
        ``std::vector`` itself.
        If an allocation fails, the old buffers are still there, with room for ``size``: the
        list gets its entries back and the error goes on."""
        if not moves:
            return
        import faiss

        code_size, view = self._code_size, faiss.rev_swig_ptr
        largest = max(size - min(size, want // 2) for _, size, want in moves)
        codes = np.empty(largest * code_size, dtype=np.uint8)
        ids = np.empty(largest, dtype=np.int64)
        for lst, size, want in moves:
            keep = min(size, want // 2)
            rest = size - keep
            codes[:rest * code_size] = view(invlists.get_codes(lst), size * code_size)[keep * code_size:]
            ids[:rest] = view(invlists.get_ids(lst), size)[keep:]
            invlists.resize(lst, keep)
            try:
                invlists.resize(lst, want)
            finally:
                invlists.resize(lst, size)  # within the capacity: allocates nothing
                view(invlists.get_codes(lst), size * code_size)[keep * code_size:] = codes[:rest * code_size]
                view(invlists.get_ids(lst), size)[keep:] = ids[:rest]

    def shrink(self, invlists: Any, sizes: npt.NDArray[np.int64], lists: npt.NDArray[np.integer[Any]]) -> None:
        """Give back the spare room of those of ``lists`` that removals left under `SHRINK_BELOW` full."""
        lists = np.unique(lists)
        want = room_for(sizes[lists], shift=self._shift)
        loose = (sizes[lists] < SHRINK_BELOW * self.codes[lists]) & (self.codes[lists] - want >= SHRINK_MIN)
        self._move(invlists, list(zip(lists[loose].tolist(), sizes[lists][loose].tolist(), want[loose].tolist(),
                                      strict=True)))
        self.codes[lists[loose]] = want[loose]

    def _move(self, invlists: Any, moves: list[tuple[int, int, int]]) -> None:
        """For each ``(list, size, room)``: copy the list's ``size`` codes into a new buffer with
        the room and swap it in (the old buffer is freed with ``fresh``). Used to shrink a list
        (`_grow` grows one).

        faiss's Python API reaches a list's buffer only as the first element of the lists'
        vector (``codes.data()``; ``codes.at(l)`` returns a copy), so each list is first moved
        to the front with ``permute_invlists`` (which moves the buffers, copying nothing), and
        the order is restored at the end. The direct map (id -> list, offset) is not read in
        between, and after the last permutation every list is back under its number.
        """
        if not moves:
            return
        import faiss

        code_size = self._code_size
        identity = np.arange(len(self.codes), dtype=np.int64)
        front = 0  # the list at position 0 now; list 0 is at position `front` (one swap at most)
        try:
            for lst, size, want in moves:
                _permute(invlists, identity, front, lst)
                front = lst
                held = invlists.codes.data()  # the list now at the front (a pointer, not a copy)
                fresh = faiss.UInt8Vector()
                fresh.resize(want * code_size)  # from empty: exactly this capacity
                faiss.memcpy(fresh.data(), held.data(), size * code_size)
                fresh.resize(size * code_size)  # the size shrinks, the capacity stays
                held.owned_data.swap(fresh)
                held.resize(size * code_size)  # refreshes the cached data pointer and size
        finally:  # even if an allocation failed: every list back under its number
            _permute(invlists, identity, front, 0)


def _permute(invlists: Any, identity: npt.NDArray[np.int64], now: int, then: int) -> None:
    """Go from the lists' order with list ``now`` and list 0 swapped to the order with ``then``
    and 0 swapped. ``permute_invlists(map)`` puts at position ``i`` the list at ``map[i]``: here
    ``A(B(i))`` for the two swaps A (now) and B (then), which differs from ``i`` at 0, ``now``
    and ``then`` only.

    >>> import faiss
    >>> lists = faiss.ArrayInvertedLists(4, 1)
    >>> for lst in range(4):
    ...     _ = lists.add_entry(lst, lst, faiss.swig_ptr(np.zeros(1, dtype=np.uint8)))
    >>> _permute(lists, np.arange(4), 0, 2)
    >>> _permute(lists, np.arange(4), 2, 3)
    >>> [lists.get_single_id(i, 0) for i in range(4)]
    [3, 1, 2, 0]
    >>> _permute(lists, np.arange(4), 3, 0)
    >>> [lists.get_single_id(i, 0) for i in range(4)]
    [0, 1, 2, 3]
    """
    if now == then:
        return
    import faiss

    def swap(a: int, x: int) -> int:
        return a if x == 0 else 0 if x == a else x

    mapping = identity.copy()
    for i in {0, now, then}:
        mapping[i] = swap(now, swap(then, i))
    invlists.permute_invlists(faiss.swig_ptr(mapping))


# -- the direct map (label -> list, offset) ----------------------------------------------------
MAP_SPARE = 8  # the direct map's array grows by an eighth of itself (plus `MAP_MIN_GROWTH`) ...
MAP_MIN_GROWTH = 1024  # ... when a label past its end comes
FEW_ROWS = 16  # batches up to this many rows are placed by a Python loop (numpy's calls cost more)


def _faiss() -> Any:
    import faiss

    return faiss


def place(assign: npt.NDArray[np.int64], sizes: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Each new entry's ``list << 32 | offset`` when faiss appends the rows of a batch to the lists
    ``assign`` (in row order) that held ``sizes`` entries: a list's rows go to its end, in order.

    >>> place(np.array([1, 0, 1, 1]), np.array([5, 0])).tolist() == [1 << 32 | 0, 5, 1 << 32 | 1, 1 << 32 | 2]
    True
    """
    order = np.argsort(assign, kind="stable")
    ranked = assign[order]
    first = np.searchsorted(ranked, ranked)  # where each row's list starts among the sorted rows
    offsets = np.empty(len(assign), dtype=np.int64)
    offsets[order] = sizes[ranked] + np.arange(len(assign)) - first
    packed: npt.NDArray[np.int64] = (assign.astype(np.int64) << 32) | offsets
    return packed


def _place_few(assign: list[int], sizes: npt.NDArray[np.int64]) -> list[int]:
    """`place` for a few rows, as a loop.

    >>> _place_few([1, 0, 1, 1], np.array([5, 0])) == place(np.array([1, 0, 1, 1]), np.array([5, 0])).tolist()
    True
    """
    taken: dict[int, int] = {}
    packed = []
    for lst in assign:
        offset = taken.get(lst)
        if offset is None:
            offset = int(sizes[lst])
        taken[lst] = offset + 1
        packed.append(lst << 32 | offset)
    return packed


class DirectMap:
    """An IVF index's direct map (label -> list and offset) kept in faiss's ``Array`` map:
    ``table[label]`` is the label's ``list << 32 | offset``, -1 for a free label.

    Why not faiss's own maps: its ``Hashtable`` map (the one that allows labels of our choosing
    and removals) is a ``std::unordered_map`` node plus a bucket per vector, about 48 bytes; its
    ``Array`` map is 8 bytes a label, and faiss reads it the same way (``reconstruct``, which the
    read path calls for every candidate's cosine), but it takes only labels ``ntotal, ntotal + 1,
    ...`` and no removals. So faiss adds with no map (the type is ``NoMap`` during ``add_core``,
    whose map check refuses labels with ``Array``), the entries are written here (`add`), and
    removals move entries as faiss's hashtable removal does (`remove`). The array grows by an
    eighth (`MAP_SPARE`): a ``std::vector`` resized from empty allocates exactly. The caller
    holds the atlas's lock, so no reader sees the map while its type is switched.
    """

    __slots__ = ("_array", "_index", "_map", "_types", "table")

    def __init__(self, index: Any) -> None:
        """Take over the map of ``index`` (empty), setting its type to ``Array``."""
        faiss = _faiss()
        index.set_direct_map_type(faiss.DirectMap.Array)
        self._index = index
        self._map = index.direct_map  # proxies of the index's own members, fetched once
        self._array = self._map.array
        self._types = (int(faiss.DirectMap.NoMap), int(faiss.DirectMap.Array))
        self.table: npt.NDArray[np.int64] = np.empty(0, dtype=np.int64)

    def add(self, sizes: npt.NDArray[np.int64], data: npt.NDArray[np.float32], labels: npt.NDArray[np.int64],
            assign: npt.NDArray[np.int64]) -> None:
        """``add_core`` of ``data`` under ``labels`` into the lists ``assign`` (which held
        ``sizes``), and their entries in the map. A few rows (`FEW_ROWS`, such as one
        ``add_memory``'s) go through Python loops: numpy's calls on one row cost more."""
        faiss = _faiss()
        n = len(labels)
        few = labels.tolist() if n <= FEW_ROWS else None
        top = max(few, default=-1) if few is not None else int(labels.max())
        if top >= len(self.table):
            self._grow(top + 1)
        direct, (no_map, array_map) = self._map, self._types
        direct.type = no_map
        try:
            self._index.add_core(n, faiss.swig_ptr(data), faiss.swig_ptr(labels), faiss.swig_ptr(assign))
        finally:
            direct.type = array_map
        if few is None:
            self.table[labels] = place(assign, sizes)
        else:
            table = self.table
            for label, packed in zip(few, _place_few(assign.tolist(), sizes), strict=True):
                table[label] = packed

    def _grow(self, top: int) -> None:
        faiss = _faiss()
        old = len(self.table)
        fresh = faiss.Int64Vector()
        fresh.resize(max(top, old + old // MAP_SPARE + MAP_MIN_GROWTH))
        table = faiss.rev_swig_ptr(fresh.data(), fresh.size())
        table[old:] = -1
        table[:old] = self.table
        self._array.swap(fresh)  # the old buffer goes with `fresh`
        self.table = table

    def remove(self, invlists: Any, labels: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """Remove the entries of ``labels`` from the index's lists ``invlists``, each as faiss's
        ``Hashtable`` map removes one: the list's last entry moves into its place and the list is
        cut by one (so the lists hold what faiss's own removal would leave, in the same order).
        Returns the list of each label removed (a label given twice is removed once)."""
        faiss = _faiss()
        table, view = self.table, faiss.rev_swig_ptr
        code_size = int(invlists.code_size)
        lists: list[int] = []
        for label in labels.tolist():
            packed = int(table[label])
            if packed < 0:  # a label given twice: gone already (faiss's removal skips it too)
                continue
            lst, offset = packed >> 32, packed & 0xFFFFFFFF
            lists.append(lst)
            last = invlists.list_size(lst) - 1
            table[label] = -1
            if offset < last:
                ids = view(invlists.get_ids(lst), last + 1)
                codes = view(invlists.get_codes(lst), (last + 1) * code_size)
                moved = int(ids[last])
                ids[offset] = moved
                codes[offset * code_size:(offset + 1) * code_size] = codes[last * code_size:]
                table[moved] = lst << 32 | offset
            invlists.resize(lst, last)  # smaller: the buffer stays
        self._index.ntotal = self._index.ntotal - len(lists)
        return np.array(lists, dtype=np.int64)

    def nbytes(self) -> int:
        return 8 * len(self.table)
