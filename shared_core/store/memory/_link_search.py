"""The approximate index's link search for a batch of new rows (`IVFVectorIndex.add_and_link`).

Each row's neighbours are looked for in the inverted lists it probes, among the vectors already
there (`scan_lists`) and among the batch's earlier rows filed in those lists (`pairs_in_lists`),
and the two are merged into each row's best ``k`` (`best_links`). The scan runs list by list:
each (row, list) pair is a one-list query and the queries are sorted by list, so a list is read
from memory once for all the rows probing it (faster than faiss's row-by-row order). The
results stay flat arrays until the last step, which builds Python objects for the kept links
only (about three a row), not per-row hit lists merged in Python (`merge_links`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from ..vector_math import Links

__all__ = ["best_links", "pairs_in_lists", "scan_lists"]

PAIR_STEP = 1024  # pairs_in_lists gathers this many pairs of rows at a time (bounded memory each side)
ROUNDED_MARGIN = 2.0**-10  # pairs_in_lists compares again the pairs this close to the floor (twice float16's
# bound on how far rounding moves the cosine of unit rows)

Candidates = tuple[npt.NDArray[np.intp], npt.NDArray[np.int64], npt.NDArray[np.float32]]


def scan_lists(faiss: Any, index: Any, params: Any, data: npt.NDArray[np.float32], assign: npt.NDArray[np.int64],
               dist: npt.NDArray[np.float32], want: int, min_similarity: float) -> Candidates:
    """Each row's best ``want`` vectors at or above ``min_similarity`` in each list ``assign``
    (rows x probes, -1 for none) gives it, searched by faiss ``index`` with one-probe
    ``params``: as flat arrays of rows, labels and cosines."""
    probes = assign.shape[1]
    flat = assign.ravel()
    pairs = np.flatnonzero(flat >= 0)
    pairs = pairs[np.argsort(flat[pairs], kind="stable")]
    queries = np.ascontiguousarray(data[pairs // probes])
    lists = np.ascontiguousarray(flat[pairs][:, None])
    centroid_sims = np.ascontiguousarray(dist.ravel()[pairs][:, None])
    sims = np.empty((len(pairs), want), dtype=np.float32)
    found = np.empty((len(pairs), want), dtype=np.int64)
    ptr = faiss.swig_ptr
    index.search_preassigned_c(len(pairs), ptr(queries), want, ptr(lists), ptr(centroid_sims), ptr(sims), ptr(found),
                               False, params)
    hit, rank = np.nonzero((found >= 0) & (sims >= min_similarity))
    return pairs[hit] // probes, found[hit, rank], sims[hit, rank]


def pairs_in_lists(data: npt.NDArray[np.float32], assign: npt.NDArray[np.int64], min_similarity: float, *,
                   stored: Callable[[npt.NDArray[np.float32]], npt.NDArray[np.float32]] | None = None
                   ) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp], npt.NDArray[np.float32]]:
    """The pairs of rows ``(r, c)``, ``c < r``, where row ``c`` is filed in one of the lists row
    ``r`` probes (``assign[c, 0]`` in ``assign[r]``) and their cosine is at least
    ``min_similarity``: the earlier rows a one-by-one insert of row ``r`` would find.

    The cosine is row ``r`` as given against row ``c`` as the index stores it: ``stored`` maps
    rows to their stored form (a float16 index rounds them; None: stored as given), as a
    one-by-one insert of row ``r`` would compare them, so a batch and one-by-one inserts link
    alike. Only the pairs within `ROUNDED_MARGIN` of the floor by their unrounded cosine are
    compared again with the stored rows: rounding moves a cosine of unit rows by at most
    ``2**-11`` (float16's relative rounding error), and rounding the whole batch would run faiss's
    encoder and decoder over every row where the pairs near the floor are a few a row."""
    n, probes = assign.shape
    home = assign[:, 0]
    order = np.argsort(home, kind="stable")
    homes = home[order]
    lo = np.searchsorted(homes, assign, side="left").ravel()
    counts = np.searchsorted(homes, assign, side="right").ravel() - lo
    total = int(counts.sum())
    rows = np.repeat(np.repeat(np.arange(n), probes), counts)
    offsets = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
    cols = order[np.repeat(lo, counts) + offsets]
    earlier = cols < rows
    rows, cols = rows[earlier], cols[earlier]
    sims = _cosines(data, rows, data, cols)
    if stored is not None and len(rows):
        near = sims >= min_similarity - ROUNDED_MARGIN
        rows, cols = rows[near], cols[near]
        held = np.unique(cols)
        sims = _cosines(data, rows, stored(data[held]), np.searchsorted(held, cols))
    close = sims >= min_similarity
    return rows[close], cols[close], sims[close]


def _cosines(left: npt.NDArray[np.float32], rows: npt.NDArray[np.intp], right: npt.NDArray[np.float32],
             cols: npt.NDArray[np.intp]) -> npt.NDArray[np.float32]:
    """``left[rows[i]] . right[cols[i]]`` for each ``i``, `PAIR_STEP` pairs at a time."""
    sims = np.empty(len(rows), dtype=np.float32)
    for a in range(0, len(rows), PAIR_STEP):  # the gathered rows stay in cache
        sims[a:a + PAIR_STEP] = np.einsum("ij,ij->i", left[rows[a:a + PAIR_STEP]], right[cols[a:a + PAIR_STEP]])
    return sims


def best_links(n: int, k: int, found: Candidates, ids: list[str | None],
               pairs: tuple[npt.NDArray[np.intp], npt.NDArray[np.intp], npt.NDArray[np.float32]]) -> Links:
    """Each of the ``n`` rows' best ``k`` links, best first, from the index's candidates
    ``found`` (labels, named by ``ids``) and the batch's ``pairs`` (by row number): what
    `shared_core.store.memory.vector_index.merge_links` gives from per-row hit lists. Equal cosines keep
    the order they come in (the index's hits in scan order, then the batch's rows)."""
    found_rows, labels, found_sims = found
    pair_rows, pair_cols, pair_sims = pairs
    rows = np.concatenate([found_rows, pair_rows]).astype(np.int16 if n <= 1 << 15 else np.int64)  # radix sorted
    sims = np.concatenate([found_sims, pair_sims])
    who = np.concatenate([labels, -1 - pair_cols.astype(np.int64)])  # an earlier row c as -1 - c
    order = np.argsort(-sims, kind="stable")
    order = order[np.argsort(rows[order], kind="stable")]  # by row, then by falling cosine
    ranked = rows[order]
    keep = order[np.arange(len(order)) - np.searchsorted(ranked, ranked, side="left") < k]
    links = list(zip([ids[w] if w >= 0 else -1 - w for w in who[keep].tolist()], sims[keep].tolist(), strict=True))
    ends = np.cumsum(np.bincount(rows[keep], minlength=n)).tolist()
    return [links[a:b] for a, b in zip([0, *ends[:-1]], ends, strict=True)]
