"""`NumpyVectorIndex`, the exact `VectorIndex`: one contiguous numpy matrix per namespace.

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

from collections.abc import Collection, Sequence

import numpy as np
import numpy.typing as npt

from ..base import VectorIndexBase
from ..contract import Hits, Ranked, Vector
from ..vector_math import dot_rows, top_k_rows

__all__ = ["NumpyVectorIndex"]

_CHUNK_BYTES = 64 << 20  # a batch search holds at most ~64 MiB of similarities at once


class NumpyVectorIndex(VectorIndexBase):
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

    def similarities(self, query: Vector, ids: Sequence[str], *, ahead: Sequence[str] = ()) -> npt.NDArray[np.float32]:
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
        """`shared_core.store.memory.vector_index.search_ranked`: `search`'s hits, built when read."""
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
