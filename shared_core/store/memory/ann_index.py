"""`IVFVectorIndex`: approximate cosine search for large namespaces, on faiss's inverted file.

Why an inverted file (IVF) rather than a graph index (HNSW): a memory takes writes one at a time
and in batches, deletes, and must answer right after a write. An IVF insert is one nearest
centroid lookup (one matrix product for a batch) and a delete is O(1) through a direct map
(label -> list and offset, `shared_core.store.memory._ivf_lists.DirectMap`); an HNSW insert is a
graph search and faiss's HNSW cannot delete. Compressed scans (PCA sketches, 4-bit PQ fast-scan)
lose too many of the write path's exact neighbours and fast-scan cannot delete.

Vectors are stored as float16 by default (``vector_dtype``, ``AtlasConfig.ann_vector_dtype``):
faiss ``IndexIVFScalarQuantizer`` with ``QT_fp16``, not by residual, so a list holds 2 bytes a
component and a scan reads half the memory; "float32" keeps ``IndexIVFFlat``. The stored vectors
are the given ones rounded to nearest float16 (faiss rounds ties away from zero): everything read
back (`get`, `get_many`, `vectors`, `similarities`, the exact search of a small subset) is the
rounded vector, and the scans compare the float32 query with it. Links within one
``add_memories`` batch compare the new row with the earlier one as stored, as a one-by-one
insert would (`_link_search.pairs_in_lists`).

``lists`` (k-means centroids) is about ``2 sqrt(n)`` (`list_count`), trained on a sample
(`training_size`) when the index is built and retrained when it has grown four times since
(`RETRAIN_GROWTH`; twice after the first, small training: `retrain_due`), so over a
namespace's growth retraining costs a fraction of quantizing its inserts. A search scans
``probes`` lists: ``probe_fraction`` of them, at least ``min_probes``; the defaults keep
recall@10 at or above 0.95 on MiniLM vectors (``benchmarks/latency.py --real-recall``). If the
probed lists hold fewer than ``k`` admissible vectors the search falls back to scanning every
list, so a query never comes back short. Searches restricted to a small ``subset`` of ids are
exact.

`add_and_link` is the write path's call: it quantizes a batch once, looks for each new vector's
near neighbours in up to ``link_probes`` closest lists (those within ``link_margin`` of the
closest centroid's similarity), pairs the batch's rows filed in those lists, then files the
batch with the same quantization. For a batch the search runs list by list (each (row, list)
pair a one-list query, sorted by list) so a list is read from memory once for all the rows
probing it (`shared_core.store.memory._link_search`).

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> vectors = rng.standard_normal((500, 16)).astype(np.float32)
>>> vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
>>> index = IVFVectorIndex.build([f"m{i}" for i in range(500)], vectors, probe_fraction=1.0)
>>> index.search(vectors[7], 1)[0][0]
'm7'
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Sequence
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from ...values.errors import InvalidInputError
from ..base import VectorIndexBase
from ..vector_math import Hits, Links, Ranked, Vector, batch_pairs, dot_rows, merge_links
from ._ints import numbers
from ._ivf_lists import SHIFT, DirectMap, ListRoom
from ._ivf_training import (
    ann_available,
    list_count,
    retrain_due,
    train_centroids,
    training_size,
)
from ._ivf_training import faiss_module as _faiss
from ._link_search import best_links, pairs_in_lists, scan_lists

__all__ = ["IVFVectorIndex", "VectorDtype", "ann_available", "list_count", "retrain_due", "train_centroids",
           "training_size"]

EXACT_SUBSET = 2048  # a subset this small is searched exactly: faster than probing, and exact
ROW_BY_ROW = 16  # add_and_link searches up to this many rows one by one, more list by list

VectorDtype = Literal["float16", "float32"]  # how the lists store a vector (`IVFVectorIndex`)
BYTES_PER_COMPONENT: dict[str, int] = {"float16": 2, "float32": 4}


class IVFVectorIndex(VectorIndexBase):
    """Approximate search: a faiss inverted file over inner product, ids mapped to int labels.

    ``vector_dtype`` "float16" (the default) stores each vector as float16 in an
    ``IndexIVFScalarQuantizer`` (``QT_fp16``, not by residual), "float32" as is in an
    ``IndexIVFFlat``. With "float16" every vector read back (`get`, `get_many`, `vectors`,
    `similarities`, the exact searches of a small ``subset``) is the stored one, rounded to
    float16 (a relative error below 2**-11 a component), and the scans compare the float32
    query with the rounded vectors. Build it with `IVFVectorIndex.build` from the vectors it
    should start with (it trains on them). Labels are reused after deletes, so the id tables
    stay as large as the index.
    """

    def __init__(self, dim: int, *, probe_fraction: float = 0.08, min_probes: int = 24, link_probes: int = 4,
                 link_margin: float = 0.1, seed: int = 1234, vector_dtype: VectorDtype = "float16") -> None:
        if not 0 < probe_fraction <= 1:
            raise ValueError(f"probe_fraction must be in (0, 1], got {probe_fraction!r}")
        if vector_dtype not in BYTES_PER_COMPONENT:
            raise InvalidInputError(f"vector_dtype must be 'float16' or 'float32', got {vector_dtype!r}")
        self.vector_dtype: VectorDtype = vector_dtype
        self._code_size = BYTES_PER_COMPONENT[vector_dtype] * dim  # bytes a stored vector takes in a list
        self._shift = SHIFT[BYTES_PER_COMPONENT[vector_dtype]]  # how much room a full list gets (`room_for`)
        self._codec: Any = None  # a faiss fp16 ScalarQuantizer (`_stored`), made when first needed
        self._dim = dim
        self.probe_fraction = probe_fraction
        self.min_probes = max(1, min_probes)
        self.link_probes = max(1, link_probes)
        self.link_margin = link_margin
        self._seed = seed
        self._labels: dict[str, int] = {}
        self._ids: list[str | None] = []  # label -> id (None: a free label)
        self._free: list[int] = []
        self._sizes = np.zeros(0, dtype=np.int64)  # entries per list now
        self._room = ListRoom(0, code_size=self._code_size, shift=self._shift)  # entries each list has room for
        self._index: Any = None
        self._map: DirectMap | None = None  # the index's direct map (label -> list, offset)
        self._invlists: Any = None  # the index's ArrayInvertedLists (owned by the index)
        self._quantizer: Any = None
        self._params: dict[int, Any] = {}  # nprobe -> reusable search parameters (no selector)
        self._trained_on = 0
        self.retrains = 0

    @classmethod
    def build(cls, ids: Sequence[str], vectors: npt.NDArray[np.float32], **params: Any) -> IVFVectorIndex:
        """A trained index holding ``vectors`` (unit rows) under ``ids``."""
        index = cls(vectors.shape[1], **params)
        index.add(ids, vectors)
        return index

    # -- the VectorIndex seam -----------------------------------------------------------------
    @property
    def dim(self) -> int:
        return self._dim

    def __len__(self) -> int:
        return len(self._labels)

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._labels

    @property
    def lists(self) -> int:
        return 0 if self._index is None else int(self._index.nlist)

    @property
    def probes(self) -> int:
        """Lists scanned per query."""
        return min(self.lists, max(self.min_probes, math.ceil(self.lists * self.probe_fraction)))

    def add(self, ids: Sequence[str], vectors: npt.NDArray[np.float32]) -> None:
        data = self._check(ids, vectors)
        if not ids:
            return
        self.remove([i for i in ids if i in self._labels])  # an update replaces the vector
        if self._index is None:
            self._insert(ids, data, None)
            return
        _, assign = self._quantizer.search(data, 1)
        self._insert(ids, data, assign[:, 0])

    def add_and_link(self, ids: Sequence[str], vectors: npt.NDArray[np.float32], k: int, *,
                     min_similarity: float) -> Links:
        """`shared_core.store.memory.vector_index.add_and_link`, approximately: each row's neighbours are
        looked for in its ``link_probes`` closest lists, among the vectors already there and
        the earlier rows filed there, as inserting the rows one by one would find them; one
        quantization of the batch serves the search, the pairs and the add."""
        data = self._check(ids, vectors)
        if not ids:
            return []
        if self._index is None or k <= 0:  # the first rows train the index: their pairs are exact
            self.add(ids, data)
            empty: list[Hits] = [[] for _ in ids]
            return merge_links(empty, *batch_pairs(data, min_similarity), k) if k > 0 else [[] for _ in ids]
        if any(i in self._labels for i in ids):
            raise ValueError("add_and_link takes new ids only")
        faiss = _faiss()
        probes = min(self.link_probes, self.lists)
        dist = np.empty((len(ids), probes), dtype=np.float32)
        assign = np.empty((len(ids), probes), dtype=np.int64)
        # the raw call: faiss's Python `search` wrapper only allocates these two and checks shapes,
        # which cost about as much as the search itself for the one row of an `add_memory`
        self._quantizer.search_c(len(ids), faiss.swig_ptr(data), probes, faiss.swig_ptr(dist), faiss.swig_ptr(assign))
        home = assign[:, 0].copy()
        assign[dist < dist[:, :1] - self.link_margin] = -1  # lists much farther than the closest: skipped
        if len(ids) > ROW_BY_ROW and self._labels:  # list by list, merged as flat arrays (see _link_search)
            want = min(k, len(self._labels))
            candidates = scan_lists(faiss, self._index, self._search_params(1), data, assign, dist, want,
                                    min_similarity)
            pairs = pairs_in_lists(data, assign, min_similarity, stored=self._rounding())
            links = best_links(len(ids), k, candidates, self._ids, pairs)
            self._insert(ids, data, home)
            return links
        found = self._search_rows(data, assign, dist, k, min_similarity) if self._labels else [[] for _ in ids]
        self._insert(ids, data, home)
        if len(ids) == 1:
            return [[*found[0]]]
        return merge_links(found, *pairs_in_lists(data, assign, min_similarity, stored=self._rounding()), k)

    def remove(self, ids: Sequence[str]) -> None:
        labels = np.fromiter((self._labels[i] for i in ids if i in self._labels), dtype=np.int64)
        if labels.size == 0:
            return
        _faiss()
        lists = self._direct().remove(self._invlists, labels)
        np.subtract.at(self._sizes, lists, 1)
        self._room.shrink(self._invlists, self._sizes, lists)
        self._forget_labels(ids)

    def get(self, node_id: str) -> Vector | None:
        label = self._labels.get(node_id)
        if label is None:
            return None
        vector: Vector = self._index.reconstruct(label)
        return vector

    def get_many(self, ids: Sequence[str]) -> list[Vector | None]:
        """`get` of each id, the known ones in one faiss call (`vector_index.vectors_of`)."""
        vectors = self._reconstruct(ids)
        return [self.get(i) for i in ids] if vectors is None else list(vectors)

    def similarities(self, query: Vector, ids: Sequence[str], *, ahead: Sequence[str] = ()) -> npt.NDArray[np.float32]:
        vectors = self._reconstruct(ids)
        if vectors is not None:  # the read path's case: a few known ids
            return dot_rows(vectors, query)
        get = self._labels.get
        labels = np.fromiter((get(i, -1) for i in ids), dtype=np.int64, count=len(ids))
        sims = np.zeros(len(ids), dtype=np.float32)
        present = labels >= 0
        _faiss()
        if present.any():
            sims[present] = dot_rows(self._index.reconstruct_batch(labels[present]), query)
        return sims

    def _reconstruct(self, ids: Sequence[str]) -> npt.NDArray[np.float32] | None:
        """The vectors of ``ids`` in one faiss call; None when one of them is unknown (or none
        asked)."""
        get = self._labels.get
        labels = [get(i, -1) for i in ids]
        if not labels or -1 in labels:
            return None
        faiss = _faiss()
        known = np.array(labels, dtype=np.int64)
        vectors = np.empty((len(labels), self._dim), dtype=np.float32)
        self._index.reconstruct_batch_c(len(labels), faiss.swig_ptr(known), faiss.swig_ptr(vectors))
        return vectors

    def search(self, query: Vector, k: int, *, subset: Collection[str] | None = None) -> Hits:
        if k <= 0 or not self._labels:
            return []
        q = np.ascontiguousarray(query, dtype=np.float32)[None, :]
        if subset is None:
            return self._search(q, k, None)[0]
        get = self._labels.get
        labels = np.fromiter((r for i in subset if (r := get(i)) is not None), dtype=np.int64)
        if labels.size == 0:
            return []
        if labels.size <= EXACT_SUBSET:
            _faiss()
            sims = dot_rows(self._index.reconstruct_batch(labels), q[0])
            top = np.argsort(-sims, kind="stable")[:k]
            ids = self._ids
            return [(ids[int(labels[t])], float(sims[t])) for t in top]  # type: ignore[misc]
        return self._search(q, k, labels)[0]

    def search_ranked(self, query: Vector, k: int, *, subset: Collection[str] | None = None) -> Ranked:
        """`shared_core.store.memory.vector_index.search_ranked`: `search`'s hits, built when read."""
        if subset is not None or k <= 0 or not self._labels:
            hits = self.search(query, k, subset=subset)
            return iter(hits), np.array([s for _, s in hits], dtype=np.float32)
        sims, found = self._search_arrays(np.ascontiguousarray(query, dtype=np.float32)[None, :], k, None)
        labels, best = found[0], sims[0]
        if labels.size and labels[-1] < 0:  # fewer hits than asked (faiss pads with -1)
            kept = labels >= 0
            labels, best = labels[kept], best[kept]
        return zip(map(self._ids.__getitem__, labels.tolist()), best.tolist(), strict=True), best  # type: ignore[arg-type]

    def search_many(self, queries: npt.NDArray[np.float32], k: int, *,
                    min_similarity: float | None = None) -> list[Hits]:
        """`search` for each row of ``queries`` in one faiss call (hits below ``min_similarity``
        dropped)."""
        if k <= 0 or not self._labels:
            return [[] for _ in range(len(queries))]
        return self._search(np.ascontiguousarray(queries, dtype=np.float32), k, None, min_similarity)

    def vectors(self) -> tuple[list[str], npt.NDArray[np.float32]]:
        """Every id and its vector (a copy), to rebuild another index from."""
        labels = np.fromiter(self._labels.values(), dtype=np.int64, count=len(self._labels))
        matrix = self._index.reconstruct_batch(labels) if labels.size else np.zeros((0, self._dim), np.float32)
        return list(self._labels), np.asarray(matrix, dtype=np.float32)

    def nbytes(self) -> int:
        """Bytes held besides the id tables (which every index keeps, see
        `shared_core.engine.lifecycle.capacity`): the lists' reserved room for vectors and labels (see
        `shared_core.store.memory._ivf_lists`: 2 or 4 bytes a component, by ``vector_dtype``), faiss's direct
        map and the centroids (float32)."""
        mapped = 0 if self._map is None else self._map.nbytes()
        return self._room.nbytes() + mapped + self.lists * 4 * self._dim

    # -- internals ----------------------------------------------------------------------------
    def _check(self, ids: Sequence[str], vectors: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        n = len(ids)
        if vectors.shape != (n, self._dim):
            raise ValueError(f"expected {n} vectors of dimension {self._dim}, got {vectors.shape}")
        if len(set(ids)) != n:
            raise ValueError("duplicate ids in one add")
        return np.ascontiguousarray(vectors, dtype=np.float32)

    def _rounding(self) -> Callable[[npt.NDArray[np.float32]], npt.NDArray[np.float32]] | None:
        """What `_link_search.pairs_in_lists` maps rows with to their stored form (None: as given)."""
        return None if self.vector_dtype == "float32" else self._stored

    def _stored(self, rows: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """``rows`` as a float16 index stores and reads them back, through faiss's own fp16 codec
        (it rounds ties away from zero where numpy's ``astype(np.float16)`` rounds them to even,
        about 1 component in 10,000)."""
        if self._codec is None:
            quantizer = _faiss().ScalarQuantizer
            self._codec = quantizer(self._dim, quantizer.QT_fp16)
        decoded: npt.NDArray[np.float32] = self._codec.decode(self._codec.compute_codes(rows))
        return decoded

    def _new_index(self, quantizer: Any, lists: int) -> Any:
        """An empty faiss inverted file over ``quantizer``'s ``lists`` centroids, storing vectors
        as ``vector_dtype``."""
        faiss = _faiss()
        if self.vector_dtype == "float32":
            return faiss.IndexIVFFlat(quantizer, self._dim, lists, faiss.METRIC_INNER_PRODUCT)
        index = faiss.IndexIVFScalarQuantizer(quantizer, self._dim, lists, faiss.ScalarQuantizer.QT_fp16,
                                              faiss.METRIC_INNER_PRODUCT, False)
        # the quantizer is trained (so faiss leaves it be) and fp16 codes need no training, but
        # faiss's constructor marks the index untrained: its train() on a few rows sets the flag
        index.train(np.ascontiguousarray(quantizer.reconstruct_n(0, min(lists, 16)), dtype=np.float32))
        return index

    def _insert(self, ids: Sequence[str], data: npt.NDArray[np.float32],
                assign: npt.NDArray[np.int64] | None) -> None:
        """File new ids into the lists ``assign`` (None: train first); retrain when grown."""
        labels = self._take_labels(ids)
        _faiss()
        try:
            if assign is None or retrain_due(len(self._labels), self._trained_on):
                self._retrain(extra=(labels, data))
                return
            assign = np.ascontiguousarray(assign, dtype=np.int64)
            if len(assign) == 1:  # one add_memory's row: Python ints, no array over the lists
                self._room.reserve_one(self._invlists, self._sizes, int(assign[0]))
            else:
                self._room.reserve(self._invlists, self._sizes, self._sizes + np.bincount(assign, minlength=self.lists))
            self._direct().add(self._sizes, data, labels, assign)
        except BaseException:
            self._forget_labels(ids)
            raise
        self._file(assign)

    def _direct(self) -> DirectMap:
        """The direct map of the trained index."""
        if self._map is None:
            raise RuntimeError("the index is not trained yet")
        return self._map

    def _file(self, assign: npt.NDArray[np.int64]) -> None:
        """Count the vectors filed into the lists ``assign``."""
        if len(assign) == 1:  # (``np.add.at`` costs a few us on one row)
            self._sizes[assign[0]] += 1
        else:
            np.add.at(self._sizes, assign, 1)

    def _take_labels(self, ids: Sequence[str]) -> npt.NDArray[np.int64]:
        """Labels for new ids: freed ones first, then new ones at the end of the tables."""
        reused = [self._free.pop() for _ in range(min(len(self._free), len(ids)))]
        first = len(self._ids)
        fresh = numbers(first, first + len(ids) - len(reused))  # shared int objects (see `_ints`)
        labels = np.asarray(reused + fresh, dtype=np.int64)
        for label, node_id in zip(reused, ids, strict=False):
            self._ids[label] = node_id
        self._ids.extend(ids[len(reused):])
        self._labels.update(zip(ids, reused + fresh, strict=True))
        return labels

    def _search_params(self, probes: int, selector: Any = None) -> Any:
        if selector is not None:
            return _faiss().SearchParametersIVF(nprobe=probes, sel=selector)
        params = self._params.get(probes)
        if params is None:
            params = self._params[probes] = _faiss().SearchParametersIVF(nprobe=probes)
        return params

    def _search(self, queries: npt.NDArray[np.float32], k: int, labels: npt.NDArray[np.int64] | None,
                min_similarity: float | None = None) -> list[Hits]:
        sims, found = self._search_arrays(queries, k, labels)
        if min_similarity is not None:
            found[sims < min_similarity] = -1
        return self._hits(found, sims)

    def _search_arrays(self, queries: npt.NDArray[np.float32], k: int, labels: npt.NDArray[np.int64] | None
                       ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]:
        """Similarities and labels (-1: none) of each query's best ``k`` (among ``labels``)."""
        faiss = _faiss()
        pool = len(self._labels) if labels is None else int(labels.size)
        want = min(k, pool)
        probes = self.probes
        if labels is not None:  # a sparse subset needs more lists to find k of its members
            probes = min(self.lists, math.ceil(probes * len(self._labels) / pool))
        selector = None if labels is None else faiss.IDSelectorBatch(labels)
        sims, found = self._index.search(queries, want, params=self._search_params(probes, selector))
        short = np.flatnonzero(found[:, -1:] < 0)  # faiss puts missing hits (-1) last
        if short.size and probes < self.lists:  # too few vectors in the probed lists: scan all
            params = self._search_params(self.lists, selector)
            sims[short], found[short] = self._index.search(queries[short], want, params=params)
        return sims, found

    def _search_rows(self, data: npt.NDArray[np.float32], assign: npt.NDArray[np.int64],
                     dist: npt.NDArray[np.float32], k: int, min_similarity: float) -> list[Hits]:
        """`_link_search.scan_lists` for a few rows: one faiss search over each row's lists (faiss
        skips the lists numbered -1)."""
        faiss = _faiss()
        want = min(k, len(self._labels))
        n, probes = assign.shape
        assign = np.ascontiguousarray(assign)
        dist = np.ascontiguousarray(dist)
        sims = np.empty((n, want), dtype=np.float32)
        found = np.empty((n, want), dtype=np.int64)
        self._index.search_preassigned_c(n, faiss.swig_ptr(data), want, faiss.swig_ptr(assign),
                                         faiss.swig_ptr(dist), faiss.swig_ptr(sims), faiss.swig_ptr(found),
                                         False, self._search_params(probes))
        found[sims < min_similarity] = -1
        return self._hits(found, sims)

    def _hits(self, found: npt.NDArray[np.int64], sims: npt.NDArray[np.float32]) -> list[Hits]:
        ids = self._ids
        return [[(ids[label], s) for label, s in zip(row, vals, strict=True) if label >= 0]
                for row, vals in zip(found.tolist(), sims.tolist(), strict=True)]

    def _retrain(self, *, extra: tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]) -> None:
        """Train fresh centroids on a sample of every vector (old and ``extra``) and rebuild the
        lists."""
        faiss = _faiss()
        new_labels, new_vectors = extra
        if self._index is not None and self._index.ntotal:
            fresh = set(new_labels.tolist())
            old_labels = np.fromiter((lab for lab in self._labels.values() if lab not in fresh), dtype=np.int64)
            labels = np.concatenate([old_labels, new_labels])
            data = np.empty((len(labels), self._dim), dtype=np.float32)  # the old rows read straight in:
            self._index.reconstruct_batch(old_labels, data[:len(old_labels)])  # no copy of the whole index
            data[len(old_labels):] = new_vectors
        else:
            labels, data = new_labels, new_vectors
        lists = list_count(len(labels))
        sample = data
        size = training_size(len(data), lists)
        if size < len(data):
            rng = np.random.default_rng(self._seed + self.retrains)
            sample = data[np.sort(rng.choice(len(data), size, replace=False))]
        centroids = train_centroids(sample, lists, seed=self._seed)
        quantizer = faiss.IndexFlatIP(self._dim)
        quantizer.add(centroids)
        index = self._new_index(quantizer, len(centroids))
        direct = DirectMap(index)  # label -> (list, offset)
        _, assign = quantizer.search(data, 1)
        assign = np.ascontiguousarray(assign[:, 0])
        invlists = faiss.downcast_InvertedLists(index.invlists)
        room = ListRoom(lists, code_size=self._code_size, shift=self._shift)  # each list's room, reserved first
        empty = np.zeros(lists, dtype=np.int64)
        room.reserve(invlists, empty, np.bincount(assign, minlength=lists))
        direct.add(empty, data, labels, assign)
        self._index, self._quantizer, self._map = index, quantizer, direct  # the index does not own its quantizer
        self._invlists = invlists
        self._params = {}
        self._sizes = np.zeros(lists, dtype=np.int64)
        self._room = room
        self._file(assign)
        self._trained_on = len(labels)
        self.retrains += 1

    def _forget_labels(self, ids: Sequence[str]) -> None:
        for node_id in ids:
            label = self._labels.pop(node_id, None)
            if label is not None:
                self._ids[label] = None
                self._free.append(label)
