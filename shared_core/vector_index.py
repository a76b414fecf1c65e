"""The `VectorIndex` seam and its exact default: one contiguous numpy matrix per namespace.

Vectors are unit length, so cosine similarity is a dot product. Rows live in one float32 matrix
that grows by half when full (amortised O(1) appends, at most a third of it unused); removal
moves the last row into the hole, so the matrix stays dense and a search is a single
matrix-vector product plus `argpartition`. `search_many` answers a batch of queries with one
matrix product (the write path links a batch of new memories that way).

>>> import numpy as np
>>> index = NumpyVectorIndex(2)
>>> index.add(["a", "b"], np.array([[1, 0], [0.6, 0.8]], dtype=np.float32))
>>> index.search(np.array([1, 0], dtype=np.float32), 2)
[('a', 1.0), ('b', 0.6000000238418579)]
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

__all__ = ["NumpyVectorIndex", "VectorIndex", "search_many", "top_k_rows"]

Vector = npt.NDArray[np.float32]
Hits = list[tuple[str, float]]
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


def search_many(index: VectorIndex, queries: npt.NDArray[np.float32], k: int) -> list[Hits]:
    """`VectorIndex.search` for each row of ``queries``: one batched call when the index's class
    offers ``search_many``, one search per row otherwise (the seam stays small)."""
    batched = getattr(type(index), "search_many", None)
    if batched is not None:
        result: list[Hits] = batched(index, queries, k)
        return result
    return [index.search(q, k) for q in queries]


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
    """Exact search over a dense float32 matrix."""

    def __init__(self, dim: int, *, capacity: int = 64) -> None:
        self._dim = dim
        self._matrix = np.zeros((max(capacity, 1), dim), dtype=np.float32)
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

    def similarities(self, query: Vector, ids: Sequence[str]) -> npt.NDArray[np.float32]:
        get = self._rows.get
        rows = np.fromiter((get(i, -1) for i in ids), dtype=np.int64, count=len(ids))
        missing = rows < 0
        sims: npt.NDArray[np.float32] = self._matrix[np.where(missing, 0, rows)] @ query
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
            sims = self._matrix[rows] @ query
            top = top_k_rows(sims[None, :], k)[0]
            return [(self._ids[int(rows[t])], float(sims[t])) for t in top]
        sims = self._matrix[:n] @ query
        top = top_k_rows(sims[None, :], k)[0]
        ids = self._ids
        return [(ids[t], float(sims[t])) for t in top.tolist()]

    def search_many(self, queries: npt.NDArray[np.float32], k: int) -> list[Hits]:
        """`search` for each row of ``queries`` with one matrix product per chunk of rows."""
        n = len(self._ids)
        if k <= 0 or n == 0:
            return [[] for _ in range(len(queries))]
        out: list[Hits] = []
        step = max(1, _CHUNK_BYTES // (4 * n))
        ids = self._ids
        for start in range(0, len(queries), step):
            sims = queries[start:start + step] @ self._matrix[:n].T
            top = top_k_rows(sims, k)
            values = np.take_along_axis(sims, top, axis=1).tolist()
            out.extend([(ids[t], v) for t, v in zip(row, vals, strict=True)]
                       for row, vals in zip(top.tolist(), values, strict=True))
        return out

    def nbytes(self) -> int:
        return int(self._matrix.nbytes)
