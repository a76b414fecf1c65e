"""Vector arithmetic shared by the stores, and the defaults of `VectorIndex`'s derived searches.

Vectors are unit length, so cosine similarity is a dot product.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterator, Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

__all__ = ["Hits", "Links", "Ranked", "Vector", "batch_pairs", "dot_rows", "link_exactly", "merge_links",
           "search_many", "search_ranked", "top_k_rows", "vectors_of"]

Vector = npt.NDArray[np.float32]
Hits = list[tuple[str, float]]
Links = list[list[tuple[str | int, float]]]  # per row: (id, or row number of an earlier row, cosine)
#: A search's hits best first, as pairs built when read, and all their similarities (`search_ranked`).
Ranked = tuple[Iterator[tuple[str, float]], npt.NDArray[np.floating[Any]]]


class _Searchable(Protocol):
    def __len__(self) -> int: ...

    def search(self, query: Vector, k: int, *, subset: Collection[str] | None = None) -> Hits: ...

    def search_many(self, queries: npt.NDArray[np.float32], k: int, *,
                    min_similarity: float | None = None) -> list[Hits]: ...


class _Gettable(Protocol):
    def get(self, node_id: str) -> Vector | None: ...


def search_many(index: _Searchable, queries: npt.NDArray[np.float32], k: int, *,
                min_similarity: float | None = None) -> list[Hits]:
    """The default `VectorIndex.search_many`: `search` for each row of ``queries``, keeping hits
    at or above ``min_similarity``."""
    floor = -math.inf if min_similarity is None else min_similarity
    return [[(i, s) for i, s in index.search(q, k) if s >= floor] for q in queries]


def search_ranked(index: _Searchable, query: Vector, k: int, *, subset: Collection[str] | None = None) -> Ranked:
    """The default `VectorIndex.search_ranked`: `search` as (an iterator of its hits, their
    similarities as an array), best first. An index that can should build each (id, similarity)
    pair only when it is read: a caller that reads a few hits but needs the k-th similarity
    (recall's scale floor) then does not build the others.

    >>> from shared_core.store.memory.vector_index import NumpyVectorIndex
    >>> index = NumpyVectorIndex(2)
    >>> index.add(["a", "b"], np.array([[1, 0], [0.6, 0.8]], dtype=np.float32))
    >>> hits, sims = search_ranked(index, np.array([1, 0], dtype=np.float32), 2)
    >>> next(hits), float(sims[-1])
    (('a', 1.0), 0.6000000238418579)
    """
    hits = index.search(query, k, subset=subset)
    return iter(hits), np.array([s for _, s in hits], dtype=np.float64)  # float64 holds any float exactly


def vectors_of(index: _Gettable, ids: Sequence[str]) -> list[Vector | None]:
    """The default `VectorIndex.get_many`: `get` of each id (None for an unknown one).

    >>> from shared_core.store.memory.vector_index import NumpyVectorIndex
    >>> index = NumpyVectorIndex(2)
    >>> index.add(["a"], np.array([[1, 0]], dtype=np.float32))
    >>> [None if v is None else v.tolist() for v in vectors_of(index, ["a", "b"])]
    [[1.0, 0.0], None]
    """
    return [index.get(i) for i in ids]


def link_exactly(index: _Searchable, ids: Sequence[str], vectors: npt.NDArray[np.float32], k: int, *,
                 min_similarity: float, add: Callable[[Sequence[str], npt.NDArray[np.float32]], None]) -> Links:
    """The default `VectorIndex.add_and_link`: ``index.search_many``, one product of the rows
    with themselves (`batch_pairs`), then ``add(ids, vectors)``."""
    found = index.search_many(vectors, k, min_similarity=min_similarity) if len(index) and k > 0 \
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
    and on a busy machine its threads wait for each other. A single query never has enough work
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
        except ImportError:  # faiss is the optional "ann" extra; numpy does the same product
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
