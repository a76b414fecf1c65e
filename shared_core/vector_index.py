"""The `VectorIndex` seam and its exact default: one contiguous numpy matrix per namespace.

Vectors are unit length, so cosine similarity is a dot product. Rows live in one float32 matrix
that doubles when full; removal moves the last row into the hole, so the matrix stays dense and a
search is a single matrix-vector product plus `argpartition`.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

__all__ = ["NumpyVectorIndex", "VectorIndex"]

Vector = npt.NDArray[np.float32]


@runtime_checkable
class VectorIndex(Protocol):
    """Unit vectors by memory id, searchable by cosine similarity."""

    @property
    def dim(self) -> int: ...

    def add(self, ids: Sequence[str], vectors: npt.NDArray[np.float32]) -> None: ...

    def remove(self, ids: Sequence[str]) -> None: ...

    def get(self, node_id: str) -> Vector | None: ...

    def search(self, query: Vector, k: int, *, subset: Collection[str] | None = None
               ) -> list[tuple[str, float]]:
        """The k most similar ids (best first), optionally among ``subset`` only."""

    def similarities(self, query: Vector, ids: Sequence[str]) -> npt.NDArray[np.float32]:
        """Cosine of ``query`` with each id (0 for an unknown id)."""

    def __len__(self) -> int: ...


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

    def add(self, ids: Sequence[str], vectors: npt.NDArray[np.float32]) -> None:
        n = len(ids)
        if vectors.shape != (n, self._dim):
            raise ValueError(f"expected {n} vectors of dimension {self._dim}, got {vectors.shape}")
        fresh = [i for i in ids if i not in self._rows]
        if len(set(fresh)) != len(fresh):
            raise ValueError("duplicate ids in one add")
        needed = len(self._ids) + len(fresh)
        if needed > self._matrix.shape[0]:
            size = max(needed, 2 * self._matrix.shape[0])
            grown = np.zeros((size, self._dim), dtype=np.float32)
            grown[: len(self._ids)] = self._matrix[: len(self._ids)]
            self._matrix = grown
        for node_id, vector in zip(ids, vectors, strict=True):
            row = self._rows.get(node_id)
            if row is None:
                row = len(self._ids)
                self._ids.append(node_id)
                self._rows[node_id] = row
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
        rows = [self._rows.get(i, -1) for i in ids]
        idx = np.array([r if r >= 0 else 0 for r in rows], dtype=np.int64)
        sims = self._matrix[idx] @ query if len(idx) else np.zeros(0, dtype=np.float32)
        missing = np.array([r < 0 for r in rows], dtype=bool)
        if missing.any():
            sims[missing] = 0.0
        return sims.astype(np.float32, copy=False)

    def search(self, query: Vector, k: int, *, subset: Collection[str] | None = None
               ) -> list[tuple[str, float]]:
        n = len(self._ids)
        if k <= 0 or n == 0:
            return []
        if subset is not None:
            rows = np.fromiter((self._rows[i] for i in subset if i in self._rows), dtype=np.int64)
            if rows.size == 0:
                return []
            sims = self._matrix[rows] @ query
        else:
            rows = None
            sims = self._matrix[:n] @ query
        k = min(k, sims.shape[0])
        top = np.argpartition(-sims, k - 1)[:k] if k < sims.shape[0] else np.arange(sims.shape[0])
        top = top[np.argsort(-sims[top], kind="stable")]
        if rows is not None:
            return [(self._ids[int(rows[t])], float(sims[t])) for t in top]
        return [(self._ids[int(t)], float(sims[t])) for t in top]

    def nbytes(self) -> int:
        return int(self._matrix.nbytes)
