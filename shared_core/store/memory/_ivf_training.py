"""The approximate index's training schedule: how many inverted lists (`list_count`), when to
retrain (`retrain_due`), on how many vectors (`training_size`), and the k-means itself
(`train_centroids`); and the one place faiss is imported (`faiss_module`). Split from
`shared_core.store.memory.ann_index`, which uses them, to keep that module to the index itself.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from ...values.errors import MissingDependencyError

__all__ = ["FIRST_RETRAIN_GROWTH", "POINTS_PER_LIST", "RETRAIN_GROWTH", "TRAIN_ITERATIONS", "ann_available",
           "faiss_module", "list_count", "retrain_due", "train_centroids", "training_size"]

RETRAIN_GROWTH = 4  # retrain the centroids when the index has grown this many times since
FIRST_RETRAIN_GROWTH = 2  # ... or this many times, after a training too small for its lists (`retrain_due`)
POINTS_PER_LIST = 39  # lists are trained with at least this many vectors each (faiss's advice)
TRAIN_ITERATIONS = 3  # k-means iterations (see `training_size`)


def ann_available() -> bool:
    """Whether faiss can be imported (the approximate index needs it)."""
    try:
        faiss_module()
    except MissingDependencyError:
        return False
    return True


def faiss_module() -> Any:
    """The faiss module, set to one OpenMP thread for the calling thread.

    A query or a write here touches a few thousand vectors: far too little work to pay for an
    OpenMP barrier. On a busy machine a parallel region waits for a descheduled worker, which turns
    a short insert into a long one. (The setting is per thread and
    only affects faiss's own OpenMP runtime.)
    """
    try:
        import faiss
    except ImportError as exc:
        raise MissingDependencyError(
            "the approximate vector index needs faiss: install the 'ann' extra "
            "(pip install \".[ann]\" from a checkout, or pip install faiss-cpu)") from exc
    faiss.omp_set_num_threads(1)
    return faiss


def list_count(n: int) -> int:
    """How many inverted lists to train for ``n`` vectors: ``min(2 sqrt(n), n / 39)``, at least 1.

    >>> list_count(4096), list_count(65_536), list_count(100_000)
    (105, 512, 632)
    """
    return max(1, min(int(2 * math.sqrt(n)), n // POINTS_PER_LIST))


def retrain_due(n: int, trained_on: int) -> bool:
    """Whether an index trained on ``trained_on`` vectors and holding ``n`` now retrains:
    ``n > growth * trained_on``, with ``growth`` = `FIRST_RETRAIN_GROWTH` (2) while the training
    had too few vectors for ``2 sqrt(n)`` lists (``n / 39`` lists instead: below 6,084 vectors,
    which is the first training, at the exact index's threshold) and `RETRAIN_GROWTH` (4) after.

    Why sooner the first time: the first index, trained on the few thousand vectors of the
    exact index's threshold, has few lists, and a search probes at least `min_probes` of them:
    kept to four times its size, a search would scan a third of the vectors. Retrained at twice
    its size, a search scans about half as many vectors at a slightly better recall, for one
    extra training on the write path; the later retrains then come at the same growth.

    >>> retrain_due(6001, 3000), retrain_due(12_001, 7000), retrain_due(28_001, 7000)
    (True, False, True)
    """
    growth = FIRST_RETRAIN_GROWTH if list_count(trained_on) < int(2 * math.sqrt(trained_on)) else RETRAIN_GROWTH
    return n > growth * trained_on


def training_size(n: int, lists: int) -> int:
    """How many of ``n`` vectors k-means trains ``lists`` centroids on:
    ``min(n, max(8192, 16 lists))``.

    A sample keeps retraining cheap (k-means costs ``sample x lists x dim`` per iteration): on
    100k MiniLM vectors mixed from LoCoMo turns (632 lists), 16 vectors per list and 6
    iterations gave recall@10 within 0.01 of 64 per list and 10 iterations, in an eighth of the
    time; 3 iterations (`TRAIN_ITERATIONS`, half the time again) gave the same recall on indexes
    grown like an atlas (0.970 against 0.967 at 10k, mean of 10 seeds; 0.980 against 0.981 at
    100k, 3 seeds), while training on fewer vectors did not (a sample of 16 per list for the
    retrain at 6,000: 0.951 at 10k; 4,096 vectors: 0.951). A k-means in two levels
    (``sqrt(lists)`` groups, then each group split) was 4 times cheaper again but lost up to
    0.18 of recall@10 on those vectors, whose queries (questions) fall between the groups: not
    used.

    >>> training_size(5000, 128), training_size(85_000, 583)
    (5000, 9328)
    """
    return min(n, max(8192, 16 * lists))


def train_centroids(sample: npt.NDArray[np.float32], lists: int, *, seed: int) -> npt.NDArray[np.float32]:
    """``lists`` unit centroids of ``sample`` by spherical k-means (faiss, `TRAIN_ITERATIONS`)."""
    faiss = faiss_module()
    kmeans = faiss.Kmeans(sample.shape[1], lists, niter=TRAIN_ITERATIONS, spherical=True, seed=seed,
                          min_points_per_centroid=1, max_points_per_centroid=1 << 30)
    kmeans.train(np.ascontiguousarray(sample, dtype=np.float32))
    centroids: npt.NDArray[np.float32] = kmeans.centroids
    return centroids
