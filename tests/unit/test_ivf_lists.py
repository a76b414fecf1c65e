"""The approximate index's inverted lists: the room reserved in them (`shared_core.store.memory._ivf_lists`)
is what faiss really holds, and moving lists to new buffers keeps searches, removals and the
direct map (id -> list, offset) intact."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

faiss = pytest.importorskip("faiss")

from shared_core.store.memory._ivf_lists import ListRoom, room_for  # noqa: E402
from shared_core.store.memory.ann_index import IVFVectorIndex, VectorDtype  # noqa: E402

from ._fp16 import as_stored  # noqa: E402

DIM = 16


def unit_rows(n: int, seed: int) -> npt.NDArray[np.float32]:
    rng = np.random.default_rng(seed)
    rows = rng.standard_normal((n, DIM)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def capacity(invlists: object, lst: int, size: int, code_size: int, *, column: str = "codes") -> int:
    """Entries list ``lst``'s codes (or ids) hold before faiss moves them: appends until the
    buffer moves, then takes them back off."""
    code = np.zeros(code_size, dtype=np.uint8)
    where = getattr(invlists, f"get_{column}")
    first = int(where(lst))
    n = size
    while int(where(lst)) == first:
        invlists.add_entry(lst, -1, faiss.swig_ptr(code))  # type: ignore[attr-defined]
        n += 1
    invlists.resize(lst, size)  # type: ignore[attr-defined]
    return n - 1


def grown_lists(lists: int, code_size: int, shift: int = 5) -> tuple[object, ListRoom, npt.NDArray[np.int64],
                                                                     npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
    """900 entries filed into ``lists`` lists in batches of 150, room reserved before each."""
    invlists = faiss.ArrayInvertedLists(lists, code_size)
    room = ListRoom(lists, code_size=code_size, shift=shift)
    rng = np.random.default_rng(0)
    codes = rng.integers(0, 255, (900, code_size), dtype=np.uint8)
    assign = rng.integers(0, lists, 900)
    sizes = np.zeros(lists, dtype=np.int64)
    for start in range(0, 900, 150):
        need = sizes + np.bincount(assign[start:start + 150], minlength=lists)
        room.reserve(invlists, sizes, need)
        for i in range(start, start + 150):
            invlists.add_entry(int(assign[i]), i, faiss.swig_ptr(codes[i]))
        sizes = need
    return invlists, room, sizes, codes, assign


@pytest.mark.parametrize("shift", [4, 5])
def test_reserve_sets_the_real_capacity_of_codes_and_ids(shift: int) -> None:
    lists, code_size = 4, 8
    for column in ("codes", "ids"):  # measuring one moves the other: a fresh build each
        invlists, room, sizes, _, _ = grown_lists(lists, code_size, shift)
        for lst in range(lists):
            reserved = getattr(room, column)[lst]
            assert reserved == capacity(invlists, lst, int(sizes[lst]), code_size, column=column)
    assert (room.codes < 2 * sizes).all()


@pytest.mark.parametrize("shift", [4, 5])
def test_reserve_and_shrink_keep_the_contents(shift: int) -> None:
    lists, code_size = 4, 8
    invlists, room, sizes, codes, assign = grown_lists(lists, code_size, shift)
    for lst in range(lists):
        held = faiss.rev_swig_ptr(invlists.get_codes(lst), int(sizes[lst]) * code_size).reshape(-1, code_size)
        assert np.array_equal(held, codes[assign == lst])
        assert faiss.rev_swig_ptr(invlists.get_ids(lst), int(sizes[lst])).tolist() == \
            np.flatnonzero(assign == lst).tolist()
    kept = sizes // 4
    for lst in range(lists):
        invlists.resize(lst, int(kept[lst]))
    room.shrink(invlists, kept, np.arange(lists))
    assert room.codes.tolist() == room_for(kept, shift=shift).tolist()
    for lst in range(lists):
        held = faiss.rev_swig_ptr(invlists.get_codes(lst), int(kept[lst]) * code_size).reshape(-1, code_size)
        assert np.array_equal(held, codes[assign == lst][:kept[lst]])
        assert capacity(invlists, lst, int(kept[lst]), code_size) == room.codes[lst]


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_an_index_grown_and_thinned_answers_as_one_built_at_once(dtype: VectorDtype) -> None:
    given = unit_rows(6000, seed=1)
    # the index is exact about the vectors it holds: rounded to float16 by a float16 index
    vectors = as_stored(given, dtype)
    ids = [f"m{i}" for i in range(6000)]
    grown = IVFVectorIndex(DIM, probe_fraction=1.0, vector_dtype=dtype)
    for start in range(0, 3000, 250):  # trains on the first batch, then files batch by batch
        grown.add(ids[start:start + 250], given[start:start + 250])
    grown.add(ids[3000:3400], given[3000:3400])
    gone = ids[:3000:2]
    grown.remove(gone)
    for i in range(3400, 3600):  # one by one: lists grow a vector at a time
        grown.add([ids[i]], given[i:i + 1])
    live = [i for i in ids[:3600] if i not in set(gone)]
    assert len(grown) == len(live) == int(grown._sizes.sum())
    for lst in range(grown.lists):  # every list is back under its own number, with its room
        assert grown._invlists.list_size(lst) == grown._sizes[lst] <= grown._room.codes[lst]
    rows = {i: vectors[int(i[1:])] for i in live}
    for node_id in live[::97]:  # the direct map still finds each vector where it is
        assert np.array_equal(grown.get(node_id), rows[node_id])
    assert grown.get(gone[0]) is None
    matrix = np.stack([rows[i] for i in live])
    for q in unit_rows(20, seed=2):
        exact = np.argsort(-(matrix @ q), kind="stable")[:10]
        assert [h for h, _ in grown.search(q, 10)] == [live[t] for t in exact]  # all lists probed: exact


class FailingLists:
    """A stand-in for faiss's lists whose allocations fail on demand, as ``std::vector`` behaves:
    ``resize`` past the capacity allocates (or raises, the vector unchanged), and entries a
    resize adds are zeros."""

    def __init__(self, codes: npt.NDArray[np.uint8], ids: npt.NDArray[np.int64]) -> None:
        self.codes, self.ids, self.size, self.fail = codes.copy(), ids.copy(), len(ids), False

    def get_codes(self, lst: int) -> object:
        return faiss.swig_ptr(self.codes)

    def get_ids(self, lst: int) -> object:
        return faiss.swig_ptr(self.ids)

    def resize(self, lst: int, n: int) -> None:
        if n > len(self.ids):
            if self.fail:
                raise MemoryError("no room")
            self.codes = np.concatenate([self.codes, np.zeros((n - len(self.ids)) * 8, dtype=np.uint8)])
            self.ids = np.concatenate([self.ids, np.zeros(n - len(self.ids), dtype=np.int64)])
        self.codes[self.size * 8:n * 8] = 0
        self.ids[self.size:n] = 0
        self.size = n


def test_a_failed_grow_gives_the_list_its_entries_back() -> None:
    rng = np.random.default_rng(1)
    codes, ids = rng.integers(1, 255, 5 * 8, dtype=np.uint8), np.arange(10, 15, dtype=np.int64)
    room = ListRoom(1, code_size=8)
    for fail in (False, True):
        lists = FailingLists(codes, ids)
        lists.fail = fail
        if fail:
            with pytest.raises(MemoryError):
                room._grow(lists, [(0, 5, 9)])
        else:
            room._grow(lists, [(0, 5, 9)])
            assert len(lists.ids) == 9
        assert lists.size == 5 and lists.codes[:40].tolist() == codes.tolist()
        assert lists.ids[:5].tolist() == ids.tolist()


def test_the_kept_direct_map_matches_faiss_hashtable_map_through_adds_and_removals() -> None:
    """`DirectMap` against faiss's own ``Hashtable`` map doing the same
    operations on an index with the same centroids: the same entries in every list, in the same
    order, and ``reconstruct`` finds every live label (random batches, reused labels, labels
    removed twice in one call)."""
    from shared_core.store.memory._ivf_lists import DirectMap

    rng = np.random.default_rng(7)
    lists, code_size = 12, 4 * DIM
    quantizer = faiss.IndexFlatIP(DIM)
    quantizer.add(unit_rows(lists, seed=3))
    indexes = []
    for _ in range(2):
        indexes.append(faiss.IndexIVFFlat(quantizer, DIM, lists, faiss.METRIC_INNER_PRODUCT))
    ref, ours = indexes
    ref.set_direct_map_type(faiss.DirectMap.Hashtable)
    direct = DirectMap(ours)
    invlists = faiss.downcast_InvertedLists(ours.invlists)
    sizes = np.zeros(lists, dtype=np.int64)
    live: dict[int, npt.NDArray[np.float32]] = {}
    free: list[int] = []
    top = 0
    for step in range(40):
        n = int(rng.integers(1, 60))
        rows = unit_rows(n, seed=100 + step)
        reused = [free.pop() for _ in range(min(len(free), int(rng.integers(0, n + 1))))]
        labels = np.array(reused + list(range(top, top + n - len(reused))), dtype=np.int64)
        top += n - len(reused)
        assign = np.ascontiguousarray(quantizer.search(rows, 1)[1][:, 0])
        ref.add_core(n, faiss.swig_ptr(rows), faiss.swig_ptr(labels), faiss.swig_ptr(assign))
        direct.add(sizes, rows, labels, assign)
        np.add.at(sizes, assign, 1)
        live.update(zip(labels.tolist(), rows, strict=True))
        if step % 3 == 2:
            gone = rng.choice(sorted(live), size=min(len(live), int(rng.integers(1, 30))), replace=False)
            twice = np.concatenate([gone, gone[:2]]).astype(np.int64)
            ref.remove_ids(faiss.IDSelectorArray(twice.size, faiss.swig_ptr(twice)))
            removed = direct.remove(invlists, twice)
            assert len(removed) == len(gone)
            np.subtract.at(sizes, removed, 1)
            for label in gone.tolist():
                del live[label]
                free.append(label)
        assert ours.ntotal == ref.ntotal == len(live) == int(sizes.sum())
        for lst in range(lists):
            held = [faiss.rev_swig_ptr(index.invlists.get_ids(lst), index.invlists.list_size(lst)).tolist()
                    for index in indexes]
            assert held[0] == held[1]
            codes = [faiss.rev_swig_ptr(index.invlists.get_codes(lst), len(held[0]) * code_size).tobytes()
                     for index in indexes]
            assert codes[0] == codes[1]
        labels_live = np.array(sorted(live), dtype=np.int64)
        assert np.array_equal(ours.reconstruct_batch(labels_live), np.stack([live[i] for i in labels_live.tolist()]))
    table = faiss.rev_swig_ptr(ours.direct_map.array.data(), ours.direct_map.array.size())
    assert np.array_equal(table, direct.table) and (table[free] == -1).all()


@pytest.mark.parametrize(("dtype", "shift"), [("float16", 4), ("float32", 5)])
def test_lists_grow_by_a_sixteenth_of_float16_entries_and_a_thirty_second_of_float32(dtype: VectorDtype,
                                                                                      shift: int) -> None:
    """About the same spare bytes a vector either way; the room is what faiss holds."""
    index = IVFVectorIndex(DIM, vector_dtype=dtype)
    vectors = unit_rows(4000, seed=5)
    index.add([f"m{i}" for i in range(3000)], vectors[:3000])  # trains
    for start in range(3000, 4000, 100):
        index.add([f"m{i}" for i in range(start, start + 100)], vectors[start:start + 100])
    room, sizes = index._room, index._sizes
    assert room._shift == shift
    assert (sizes <= room.codes).all() and (room.codes <= room_for(sizes, shift=shift)).all()
    for lst in np.flatnonzero(sizes).tolist():
        assert capacity(index._invlists, lst, int(sizes[lst]), index._code_size) == room.codes[lst]


def test_a_list_that_takes_more_than_its_spare_at_once_gets_no_fixed_spare() -> None:
    """`room_for`: 2 spare entries beyond a 32nd (by default) for a list grown a few entries at a time (one
    write after another), none for one that took more at once than that spare would hold; and
    `ListRoom.reserve` applies it (the capacity faiss really has)."""
    need = np.array([60, 60, 60, 200, 200])
    added = np.array([1, 3, 4, 8, 9])
    assert room_for(need, added).tolist() == [63, 63, 61, 208, 206]
    invlists = faiss.ArrayInvertedLists(2, 8)
    room = ListRoom(2, code_size=8)
    room.reserve(invlists, np.array([0, 0]), np.array([60, 1]))  # empty lists: no entries to keep
    assert room.codes.tolist() == [61, 3]
    code = np.zeros(8, dtype=np.uint8)
    for _ in range(60):
        invlists.add_entry(0, 0, faiss.swig_ptr(code))
    room.reserve(invlists, np.array([60, 0]), np.array([62, 1]))  # 2 more: grown with the fixed spare
    assert room.codes.tolist() == [62 + 1 + 2, 3] and capacity(invlists, 0, 60, 8) == 65


def test_reserve_one_leaves_the_room_reserve_would() -> None:
    """Single entries filed with `ListRoom.reserve_one` before each: the same room (codes and ids)
    and the same list contents as with `ListRoom.reserve` of the one-entry need."""
    lists, code_size = 5, 4
    rng = np.random.default_rng(3)
    codes = rng.integers(0, 255, (400, code_size), dtype=np.uint8)
    assign = rng.integers(0, lists, 400)
    made = []
    for one in (True, False):
        invlists = faiss.ArrayInvertedLists(lists, code_size)
        room = ListRoom(lists, code_size=code_size)
        sizes = np.zeros(lists, dtype=np.int64)
        rooms = []
        for i in range(400):
            lst = int(assign[i])
            if one:
                room.reserve_one(invlists, sizes, lst)
            else:
                room.reserve(invlists, sizes, sizes + np.bincount(assign[i:i + 1], minlength=lists))
            invlists.add_entry(lst, i, faiss.swig_ptr(codes[i]))
            sizes[lst] += 1
            rooms.append((room.codes.tolist(), room.ids.tolist()))
        for lst in range(lists):  # the room is what faiss holds
            assert capacity(invlists, lst, int(sizes[lst]), code_size) == room.codes[lst]
        contents = [(faiss.rev_swig_ptr(invlists.get_ids(lst), int(sizes[lst])).tolist(),
                     faiss.rev_swig_ptr(invlists.get_codes(lst), int(sizes[lst]) * code_size).tobytes())
                    for lst in range(lists)]
        made.append((rooms, contents))
    assert made[0] == made[1]
    assert len({tuple(r[0]) for r in made[0][0]}) > lists  # lists grew many times over the run
