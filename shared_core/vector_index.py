"""The `VectorIndex` seam and its exact default: one contiguous numpy matrix per namespace.

Vectors are unit length, so cosine similarity is a dot product. Rows live in one float32 matrix
that grows by half when full (amortised O(1) appends, at most a third of it unused); removal
moves the last row into the hole, so the matrix stays dense and a search is a single
matrix-vector product plus `argpartition`. `search_many` answers a batch of queries with one
matrix product, and `add_and_link` gives the write path each new row's neighbours among the
stored vectors and the batch's earlier rows (an index may do it natively, as the approximate
one does).

>>> import numpy as np
>>> index = NumpyVectorIndex(2)
>>> index.add(["a", "b"], np.array([[1, 0], [0.6, 0.8]], dtype=np.float32))
>>> index.search(np.array([1, 0], dtype=np.float32), 2)
[('a', 1.0), ('b', 0.6000000238418579)]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterator, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

__all__ = ["Links", "NumpyVectorIndex", "Ranked", "VectorIndex", "add_and_link", "batch_pairs", "dot_rows",
           "link_exactly", "merge_links", "search_many", "search_ranked", "top_k_rows", "vectors_of"]

Vector = npt.NDArray[np.float32]
Hits = list[tuple[str, float]]
Links = list[list[tuple[str | int, float]]]  # per row: (id, or row number of an earlier row, cosine)
#: A search's hits best first, as pairs built when read, and all their similarities (`search_ranked`).
Ranked = tuple[Iterator[tuple[str, float]], npt.NDArray[np.floating[Any]]]
_CHUNK_BYTES = 64 << 20  # a batch search holds at most ~64 MiB of similarities at once


@runtime_checkable
class VectorIndex(Protocol):
    """Unit vectors by memory id, searchable by cosine similarity.

    Adding an id that is already present replaces its vector.
    """

    @property
    def dim(self) -> int: ...

    def add(self, ids: Sequence[str], vectors: npt.NDArray[np.float32]) -> None: ...

    def remove(self, ids: Sequence[str]) -> None: ...

    def get(self, node_id: str) -> Vector | None: ...

    def search(self, query: Vector, k: int, *, subset: Collection[str] | None = None) -> Hits:
        """The k most similar ids (best first), optionally among ``subset`` only."""

    def similarities(self, query: Vector, ids: Sequence[str]) -> npt.NDArray[np.float32]:
        """Cosine of ``query`` with each id (0 for an unknown id)."""

    def __len__(self) -> int: ...


def search_many(index: VectorIndex, queries: npt.NDArray[np.float32], k: int, *,
                min_similarity: float | None = None) -> list[Hits]:
    """`VectorIndex.search` for each row of ``queries``, keeping hits at or above
    ``min_similarity``: one batched call when the index's class offers
    ``search_many(queries, k, *, min_similarity=None)``, one search per row otherwise (the seam
    stays small)."""
    batched = getattr(type(index), "search_many", None)
    if batched is not None:
        result: list[Hits] = batched(index, queries, k, min_similarity=min_similarity)
        return result
    floor = -math.inf if min_similarity is None else min_similarity
    return [[(i, s) for i, s in index.search(q, k) if s >= floor] for q in queries]


def search_ranked(index: VectorIndex, query: Vector, k: int, *, subset: Collection[str] | None = None) -> Ranked:
    """`VectorIndex.search` as (an iterator of its hits, their similarities as an array), best
    first: each (id, similarity) pair is built only when it is read, so a caller that reads a
    few hits but needs the k-th similarity (recall's scale floor) does not build the others,
    whose ids sit all over memory. One call when the index's class offers ``search_ranked``,
    `search` otherwise; either way the pairs are those `search` gives.

    >>> index = NumpyVectorIndex(2)
    >>> index.add(["a", "b"], np.array([[1, 0], [0.6, 0.8]], dtype=np.float32))
    >>> hits, sims = search_ranked(index, np.array([1, 0], dtype=np.float32), 2)
    >>> next(hits), float(sims[-1])
    (('a', 1.0), 0.6000000238418579)
    """
    method = getattr(type(index), "search_ranked", None)
    if method is not None:
        result: Ranked = method(index, query, k, subset=subset)
        return result
    hits = index.search(query, k, subset=subset)
    return iter(hits), np.array([s for _, s in hits], dtype=np.float64)  # float64 holds any float exactly


def vectors_of(index: VectorIndex, ids: Sequence[str]) -> list[Vector | None]:
    """`VectorIndex.get` of each id (None for an unknown one): one call when the index's class
    offers ``get_many(ids)``, one `get` per id otherwise. The rows may share one array.

    >>> index = NumpyVectorIndex(2)
    >>> index.add(["a"], np.array([[1, 0]], dtype=np.float32))
    >>> [None if v is None else v.tolist() for v in vectors_of(index, ["a", "b"])]
    [[1.0, 0.0], None]
    """
    method = getattr(type(index), "get_many", None)
    if method is not None:
        result: list[Vector | None] = method(index, ids)
        return result
    return [index.get(i) for i in ids]


def add_and_link(index: VectorIndex, ids: Sequence[str], vectors: npt.NDArray[np.float32], k: int, *,
                 min_similarity: float) -> Links:
    """Add ``vectors`` under new ``ids`` and give, for each row, its ``k`` most similar vectors
    at or above ``min_similarity`` among those present before the call (by id) and the call's
    earlier rows (by row number), best first: what adding the rows one at a time, each after a
    search, would give.

    One call when the index's class offers ``add_and_link`` (the approximate index quantizes the
    batch once for its search, its pairs and its add); `link_exactly` otherwise.
    """
    method = getattr(type(index), "add_and_link", None)
    if method is not None:
        result: Links = method(index, ids, vectors, k, min_similarity=min_similarity)
        return result
    return link_exactly(index, ids, vectors, k, min_similarity=min_similarity, add=index.add)


def link_exactly(index: VectorIndex, ids: Sequence[str], vectors: npt.NDArray[np.float32], k: int, *,
                 min_similarity: float, add: Callable[[Sequence[str], npt.NDArray[np.float32]], None]) -> Links:
    """`add_and_link` by `search_many` on ``index``, one product of the rows with themselves
    (`batch_pairs`), then ``add(ids, vectors)``."""
    found = search_many(index, vectors, k, min_similarity=min_similarity) if len(index) and k > 0 \
        else [[] for _ in range(len(ids))]
    add(ids, vectors)
    return merge_links(found, *batch_pairs(vectors, min_similarity), k)


def batch_pairs(vectors: npt.NDArray[np.float32], min_similarity: float
                ) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp], npt.NDArray[np.float32]]:
    """Every pair of rows ``(r, c)`` with ``c < r`` and ``vectors[r] . vectors[c] >=
    min_similarity``, as rows, columns and cosines (one matrix product).

    >>> v = np.array([[1, 0], [0.8, 0.6], [0, 1]], dtype=np.float32)
    >>> [a.tolist() for a in batch_pairs(v, 0.5)[:2]]
    [[1, 2], [0, 1]]
    """
    if len(vectors) < 2:
        empty = np.zeros(0, dtype=np.intp)
        return empty, empty, np.zeros(0, dtype=np.float32)
    sims = vectors @ vectors.T
    rows, cols = np.nonzero(sims >= min_similarity)
    lower = cols < rows
    rows, cols = rows[lower], cols[lower]
    return rows, cols, sims[rows, cols]


def merge_links(found: Sequence[Hits], rows: npt.NDArray[np.intp], cols: npt.NDArray[np.intp],
                sims: npt.NDArray[np.float32], k: int) -> Links:
    """Each row's hits (``found``) and its pairs with earlier rows (``rows``, ``cols``,
    ``sims``), merged: the best ``k``, best first."""
    out: Links = [[*hits] for hits in found]
    if rows.size == 0:
        return out
    for r, c, v in zip(rows.tolist(), cols.tolist(), sims.tolist(), strict=True):
        out[r].append((c, v))
    for r in set(rows.tolist()):
        out[r] = sorted(out[r], key=lambda pair: -pair[1])[:k]
    return out


def dot_rows(matrix: npt.NDArray[np.float32], query: Vector) -> npt.NDArray[np.float32]:
    """``matrix @ query`` for a C-contiguous float32 matrix, on one core.

    Uses faiss's SIMD inner-product kernel when faiss is installed, numpy otherwise. Why not
    numpy alone: OpenBLAS runs a matrix-vector product of a few thousand rows on every core,
    and on a busy two-core machine its threads wait for each other: 2,000 x 384 took 16 ms with
    two threads against 0.08 ms with one (measured here). A single query never has enough work
    to gain from threads, and a library must not change the process-wide BLAS thread count.
    """
    kernel = _inner_products()
    n = matrix.shape[0]
    if kernel is None or n == 0:
        result: npt.NDArray[np.float32] = matrix @ query
        return result
    rows = np.ascontiguousarray(matrix, dtype=np.float32)
    q = np.ascontiguousarray(query, dtype=np.float32)
    out = np.empty(n, dtype=np.float32)
    kernel(out, q, rows, q.shape[0], n)
    return out


_KERNEL: list[Any] = []


def _inner_products() -> Any:
    """faiss's ``fvec_inner_products_ny`` wrapped for numpy arrays, or None without faiss."""
    if not _KERNEL:
        try:
            import faiss
        except ImportError:  # pragma: no cover - faiss is a dependency; numpy still works
            _KERNEL.append(None)
        else:
            module: Any = faiss  # untyped SWIG bindings
            ptr, ny = module.swig_ptr, module.fvec_inner_products_ny
            _KERNEL.append(lambda out, q, rows, d, n: ny(ptr(out), ptr(q), ptr(rows), d, n))
    return _KERNEL[0]


def top_k_rows(sims: npt.NDArray[np.float32], k: int) -> npt.NDArray[np.intp]:
    """Column indices of the ``k`` largest values of each row of ``sims``, best first.

    >>> top_k_rows(np.array([[0.1, 0.9, 0.5], [0.7, 0.2, 0.3]], dtype=np.float32), 2).tolist()
    [[1, 2], [0, 2]]
    """
    n = sims.shape[1]
    k = min(k, n)
    if k <= 0:
        return np.zeros((sims.shape[0], 0), dtype=np.intp)
    top = np.argpartition(-sims, k - 1, axis=1)[:, :k] if k < n else np.tile(np.arange(n), (sims.shape[0], 1))
    order = np.argsort(-np.take_along_axis(sims, top, axis=1), axis=1, kind="stable")
    return np.take_along_axis(top, order, axis=1)


class NumpyVectorIndex:
    """Exact search over a dense float32 matrix.

    The matrix starts with ``capacity`` rows (default none) and grows by half when full, so an
    index costs what it holds plus at most half as much again: a namespace of one memory holds
    one row, not a block of rows reserved up front.
    """

    def __init__(self, dim: int, *, capacity: int = 0) -> None:
        self._dim = dim
        self._matrix = np.zeros((max(capacity, 0), dim), dtype=np.float32)
        self._ids: list[str] = []
        self._rows: dict[str, int] = {}

    @property
    def dim(self) -> int:
        return self._dim

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._rows

    def ids(self) -> list[str]:
        """Every id, in row order."""
        return list(self._ids)

    def matrix(self) -> npt.NDArray[np.float32]:
        """The stored vectors in row order (a read-only view, no copy)."""
        view = self._matrix[: len(self._ids)]
        view.flags.writeable = False
        return view

    def add(self, ids: Sequence[str], vectors: npt.NDArray[np.float32]) -> None:
        n = len(ids)
        if vectors.shape != (n, self._dim):
            raise ValueError(f"expected {n} vectors of dimension {self._dim}, got {vectors.shape}")
        if len(set(ids)) != n:
            raise ValueError("duplicate ids in one add")
        rows = self._rows
        fresh = [i for i in ids if i not in rows]
        start = len(self._ids)
        needed = start + len(fresh)
        if needed > self._matrix.shape[0]:
            grown = np.zeros((max(needed, self._matrix.shape[0] * 3 // 2 + 1), self._dim), dtype=np.float32)
            grown[:start] = self._matrix[:start]
            self._matrix = grown
        if len(fresh) == n:  # the common case: all new, one block copy
            self._matrix[start:needed] = vectors
            rows.update(zip(ids, range(start, needed), strict=True))
            self._ids.extend(ids)
            return
        for node_id, vector in zip(ids, vectors, strict=True):
            row = rows.get(node_id)
            if row is None:
                row = len(self._ids)
                self._ids.append(node_id)
                rows[node_id] = row
            self._matrix[row] = vector

    def remove(self, ids: Sequence[str]) -> None:
        for node_id in ids:
            row = self._rows.pop(node_id, None)
            if row is None:
                continue
            last = len(self._ids) - 1
            if row != last:
                moved = self._ids[last]
                self._matrix[row] = self._matrix[last]
                self._ids[row] = moved
                self._rows[moved] = row
            self._ids.pop()
        if 64 < len(self._ids) * 4 < self._matrix.shape[0]:  # give memory back after mass deletes
            self._matrix = self._matrix[: 2 * len(self._ids)].copy()

    def get(self, node_id: str) -> Vector | None:
        row = self._rows.get(node_id)
        return None if row is None else self._matrix[row].copy()

    def get_many(self, ids: Sequence[str]) -> list[Vector | None]:
        """`get` of each id, the known ones copied out in one step (`vectors_of`)."""
        get = self._rows.get
        rows = [get(i, -1) for i in ids]
        if -1 in rows:
            return [self.get(i) for i in ids]
        return list(self._matrix[rows])

    def similarities(self, query: Vector, ids: Sequence[str]) -> npt.NDArray[np.float32]:
        get = self._rows.get
        found = [get(i, -1) for i in ids]
        if found and -1 not in found:  # the read path's case: a few known ids
            return dot_rows(self._matrix[found], query)
        rows = np.array(found, dtype=np.int64)
        missing = rows < 0
        sims = dot_rows(self._matrix[np.where(missing, 0, rows)], query)
        sims[missing] = 0.0
        return sims

    def search(self, query: Vector, k: int, *, subset: Collection[str] | None = None) -> Hits:
        n = len(self._ids)
        if k <= 0 or n == 0:
            return []
        if subset is not None:
            get = self._rows.get
            rows = np.fromiter((r for i in subset if (r := get(i)) is not None), dtype=np.int64)
            if rows.size == 0:
                return []
            sims = dot_rows(self._matrix[rows], query)
            top = top_k_rows(sims[None, :], k)[0]
            return [(self._ids[int(rows[t])], float(sims[t])) for t in top]
        sims = dot_rows(self._matrix[:n], query)
        top = top_k_rows(sims[None, :], k)[0]
        ids = self._ids
        return [(ids[t], float(sims[t])) for t in top.tolist()]

    def search_ranked(self, query: Vector, k: int, *, subset: Collection[str] | None = None) -> Ranked:
        """`shared_core.vector_index.search_ranked`: `search`'s hits, built when read."""
        n = len(self._ids)
        if subset is not None or k <= 0 or n == 0:
            hits = self.search(query, k, subset=subset)
            return iter(hits), np.array([s for _, s in hits], dtype=np.float32)
        sims = dot_rows(self._matrix[:n], query)
        top = top_k_rows(sims[None, :], k)[0]
        best = sims[top]
        return zip(map(self._ids.__getitem__, top.tolist()), best.tolist(), strict=True), best

    def search_many(self, queries: npt.NDArray[np.float32], k: int, *,
                    min_similarity: float | None = None) -> list[Hits]:
        """`search` for each row of ``queries`` with one matrix product per chunk of rows; with
        ``min_similarity``, only the hits at or above it (found with a mask, not a sort)."""
        n = len(self._ids)
        out: list[Hits] = [[] for _ in range(len(queries))]
        if k <= 0 or n == 0:
            return out
        step = max(1, _CHUNK_BYTES // (4 * n))
        ids = self._ids
        for start in range(0, len(queries), step):
            sims = queries[start:start + step] @ self._matrix[:n].T
            if min_similarity is not None:
                rows, cols = np.nonzero(sims >= min_similarity)
                if rows.size <= 4 * k * sims.shape[0]:  # few pairs pass: no need to rank whole rows
                    values = sims[rows, cols]
                    order = np.lexsort((-values, rows))
                    for r, c, v in zip(rows[order].tolist(), cols[order].tolist(), values[order].tolist(),
                                       strict=True):
                        hits = out[start + r]
                        if len(hits) < k:
                            hits.append((ids[c], v))
                    continue
            top = top_k_rows(sims, k)
            values = np.take_along_axis(sims, top, axis=1)
            if min_similarity is not None:
                top = np.where(values >= min_similarity, top, -1)
            for j, (row, vals) in enumerate(zip(top.tolist(), values.tolist(), strict=True)):
                out[start + j] = [(ids[t], v) for t, v in zip(row, vals, strict=True) if t >= 0]
        return out

    def nbytes(self) -> int:
        return int(self._matrix.nbytes)
