"""`IVFVectorIndex`: approximate cosine search for large namespaces, on faiss's inverted file.

Why an inverted file (IVF-Flat) rather than a graph index (HNSW)? A memory takes writes one at a
time and in batches, deletes, and must answer right after a write. An IVF insert is one nearest
centroid lookup, so batches go in at tens of thousands per second on two cores, where an HNSW
insert is a full graph search (about 1,000 to 4,000 per second measured here with usearch and
chromadb's hnswlib); a delete is O(1) through faiss's hashtable direct map; and vectors are
stored once, uncompressed, so distances are exact inside the lists that are searched and the
index needs no second copy of the embeddings. The coarse quantizer (``lists`` k-means centroids)
is trained on the vectors present when the index is built and retrained when the index has
grown four times since, so the lists stay balanced as a namespace grows.

Recall is set by ``probe_fraction``, the share of the lists scanned per query (at least
``min_probes``). The defaults (10%, at least 16) were chosen on MiniLM vectors, which are harder
than clustered synthetic data: on the 2,759 LoCoMo turns with their questions as queries, recall@10
was 0.93 with 8 of 70 lists probed and 0.96 with 14; on 10k and 100k vectors mixed from those turns
it was 0.977 (20 of 200 lists) and 0.998 (64 of 632). A thresholded batch search (the write path's
``similar_to`` links) probes an eighth as many lists, at least 4: it only wants near neighbours,
and scanning is bound by memory bandwidth (about 10,000 vectors per ms here). On the 100k mixed
vectors, 4 probes found 98% and 8 probes 99% of the exact top-3 neighbours above cosine 0.6. If the probed
lists hold fewer than ``k`` admissible vectors the search falls back to scanning every list, so a
query never comes back short. Searches restricted to a small
``subset`` of ids are exact (the subset's vectors are fetched and compared directly).

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
from collections.abc import Collection, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from .errors import MissingDependencyError
from .vector_index import Hits, Vector, dot_rows

__all__ = ["IVFVectorIndex", "ann_available"]

EXACT_SUBSET = 2048  # a subset this small is searched exactly: faster than probing, and exact
RETRAIN_GROWTH = 4  # retrain the centroids when the index has grown this many times since
POINTS_PER_LIST = 39  # faiss's minimum training points per centroid (fewer gives a warning)


def ann_available() -> bool:
    """Whether faiss can be imported (the approximate index needs it)."""
    try:
        _faiss()
    except MissingDependencyError:
        return False
    return True


def _faiss() -> Any:
    """The faiss module, set to one OpenMP thread for the calling thread.

    A query or a write here touches a few thousand vectors: far too little work to pay for an
    OpenMP barrier. On a busy two-core machine a parallel region waits for a descheduled worker,
    which was measured to turn a 0.01 ms insert into 4 to 15 ms. (The setting is per thread and
    only affects faiss's own OpenMP runtime.)
    """
    try:
        import faiss
    except ImportError as exc:
        raise MissingDependencyError(
            "the approximate vector index needs faiss: pip install faiss-cpu "
            "(a dependency of elastic-atlas; reinstall it)") from exc
    faiss.omp_set_num_threads(1)
    return faiss


def list_count(n: int) -> int:
    """How many inverted lists to train for ``n`` vectors: about ``2 sqrt(n)``, each with at
    least 39 training points.

    >>> list_count(4096), list_count(100_000)
    (105, 632)
    """
    return max(1, min(int(2 * math.sqrt(n)), n // POINTS_PER_LIST))


class IVFVectorIndex:
    """Approximate search: faiss ``IndexIVFFlat`` over inner product, ids mapped to int labels.

    Build it with `IVFVectorIndex.build` from the vectors it should start with (it trains on
    them). Labels are reused after deletes, so the id tables stay as large as the index.
    """

    def __init__(self, dim: int, *, probe_fraction: float = 0.1, min_probes: int = 16,
                 seed: int = 1234) -> None:
        if not 0 < probe_fraction <= 1:
            raise ValueError(f"probe_fraction must be in (0, 1], got {probe_fraction!r}")
        self._dim = dim
        self.probe_fraction = probe_fraction
        self.min_probes = max(1, min_probes)
        self._seed = seed
        self._labels: dict[str, int] = {}
        self._ids: list[str | None] = []  # label -> id (None: a free label)
        self._free: list[int] = []
        self._index: Any = None
        self._quantizer: Any = None
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
        n = len(ids)
        if vectors.shape != (n, self._dim):
            raise ValueError(f"expected {n} vectors of dimension {self._dim}, got {vectors.shape}")
        if len(set(ids)) != n:
            raise ValueError("duplicate ids in one add")
        if n == 0:
            return
        self.remove([i for i in ids if i in self._labels])  # an update replaces the vector
        labels = np.empty(n, dtype=np.int64)
        for j, node_id in enumerate(ids):
            label = self._free.pop() if self._free else len(self._ids)
            if label == len(self._ids):
                self._ids.append(node_id)
            else:
                self._ids[label] = node_id
            self._labels[node_id] = label
            labels[j] = label
        data = np.ascontiguousarray(vectors, dtype=np.float32)
        _faiss()
        try:
            if self._index is None or len(self._labels) > RETRAIN_GROWTH * self._trained_on:
                self._retrain(extra=(labels, data))
            else:
                self._index.add_with_ids(data, labels)
        except BaseException:
            self._forget_labels(ids)
            raise

    def remove(self, ids: Sequence[str]) -> None:
        labels = np.fromiter((self._labels[i] for i in ids if i in self._labels), dtype=np.int64)
        if labels.size == 0:
            return
        faiss = _faiss()
        self._index.remove_ids(faiss.IDSelectorArray(labels.size, faiss.swig_ptr(labels)))
        self._forget_labels(ids)

    def get(self, node_id: str) -> Vector | None:
        label = self._labels.get(node_id)
        if label is None:
            return None
        vector: Vector = self._index.reconstruct(label)
        return vector

    def similarities(self, query: Vector, ids: Sequence[str]) -> npt.NDArray[np.float32]:
        get = self._labels.get
        labels = np.fromiter((get(i, -1) for i in ids), dtype=np.int64, count=len(ids))
        sims = np.zeros(len(ids), dtype=np.float32)
        present = labels >= 0
        _faiss()
        if present.any():
            sims[present] = dot_rows(self._index.reconstruct_batch(labels[present]), query)
        return sims

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
        """Bytes held by the lists' vectors and labels plus the centroids (not the slack)."""
        return len(self._labels) * (4 * self._dim + 8) + self.lists * 4 * self._dim

    # -- internals ----------------------------------------------------------------------------
    def _search(self, queries: npt.NDArray[np.float32], k: int, labels: npt.NDArray[np.int64] | None,
                min_similarity: float | None = None) -> list[Hits]:
        faiss = _faiss()
        pool = len(self._labels) if labels is None else int(labels.size)
        want = min(k, pool)
        probes = self.probes
        if min_similarity is not None:  # near neighbours only (linking): they sit in the closest lists
            probes = max(4, probes // 8)
        if labels is not None:  # a sparse subset needs more lists to find k of its members
            probes = min(self.lists, math.ceil(probes * len(self._labels) / pool))
        selector = None if labels is None else faiss.IDSelectorBatch(labels)
        params = faiss.SearchParametersIVF(nprobe=probes, sel=selector)
        sims, found = self._index.search(queries, want, params=params)
        short = np.flatnonzero((found < 0).any(axis=1))
        if short.size and probes < self.lists:  # too few vectors in the probed lists: scan all
            params = faiss.SearchParametersIVF(nprobe=self.lists, sel=selector)
            sims[short], found[short] = self._index.search(queries[short], want, params=params)
        if min_similarity is not None:
            found[sims < min_similarity] = -1
        ids = self._ids
        return [[(ids[label], s) for label, s in zip(row, vals, strict=True) if label >= 0]
                for row, vals in zip(found.tolist(), sims.tolist(), strict=True)]

    def _retrain(self, *, extra: tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]) -> None:
        """Train fresh centroids on every vector (old and ``extra``) and rebuild the lists."""
        faiss = _faiss()
        new_labels, new_vectors = extra
        if self._index is not None and self._index.ntotal:
            fresh = set(new_labels.tolist())
            old_labels = np.fromiter((lab for lab in self._labels.values() if lab not in fresh), dtype=np.int64)
            old = self._index.reconstruct_batch(old_labels)
            labels = np.concatenate([old_labels, new_labels])
            data = np.concatenate([old, new_vectors])
        else:
            labels, data = new_labels, new_vectors
        quantizer = faiss.IndexFlatIP(self._dim)
        index = faiss.IndexIVFFlat(quantizer, self._dim, list_count(len(labels)), faiss.METRIC_INNER_PRODUCT)
        index.cp.niter = 10
        index.cp.seed = self._seed
        index.cp.max_points_per_centroid = 64  # train on a sample: enough for balanced lists
        index.cp.min_points_per_centroid = 1  # `list_count` keeps 39 per list where there are enough
        index.train(data)
        index.set_direct_map_type(faiss.DirectMap.Hashtable)  # O(1) remove and reconstruct by id
        index.add_with_ids(data, labels)
        self._index, self._quantizer = index, quantizer  # the index does not own its quantizer
        self._trained_on = len(labels)
        self.retrains += 1

    def _forget_labels(self, ids: Sequence[str]) -> None:
        for node_id in ids:
            label = self._labels.pop(node_id, None)
            if label is not None:
                self._ids[label] = None
                self._free.append(label)
