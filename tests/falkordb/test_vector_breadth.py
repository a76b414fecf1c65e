"""FalkorDB's HNSW search keeps a beam of max(k, efRuntime) candidates (efRuntime 10 by default),
so on its own a search for a few neighbours finds fewer of the true nearest ones than a wide one.
`FalkorVectorIndex.search` searches at least `cypher.SEARCH_BREADTH` wide: its k best do not
depend on how small k is, and they are the true nearest ones far more often."""

from __future__ import annotations

import numpy as np

from shared_core.store.falkordb import FalkorDBBackend
from shared_core.store.falkordb.cypher import SEARCH_BREADTH

from ._server import drop_all

DIM = 64


def _clustered(rng: np.random.Generator, n: int) -> np.ndarray:
    """Vectors around 100 centres, as embeddings of many texts on a few topics are."""
    centres = rng.standard_normal((100, DIM)).astype(np.float32)
    out = centres[rng.integers(0, 100, n)] + 0.5 * rng.standard_normal((n, DIM)).astype(np.float32)
    return (out / np.linalg.norm(out, axis=1, keepdims=True)).astype(np.float32)


def test_a_narrow_search_is_the_head_of_a_broad_one(prefixed_url: str) -> None:
    rng = np.random.default_rng(7)
    vectors = _clustered(rng, 4000)
    queries = _clustered(rng, 60)
    backend = FalkorDBBackend.from_url(prefixed_url, dim=DIM)
    try:
        part = backend.partition("breadth", create=True)
        assert part is not None
        ids = [f"m{i}" for i in range(len(vectors))]
        for start in range(0, len(ids), 1000):
            part.vectors.add(ids[start:start + 1000], vectors[start:start + 1000])
        for q in queries:
            broad = part.vectors.search(q, SEARCH_BREADTH)
            for k in (1, 3, 10):
                assert part.vectors.search(q, k) == broad[:k]
        exact = np.argsort(-(queries @ vectors.T), axis=1)
        found = [len({h for h, _ in part.vectors.search(q, 3)} & {ids[j] for j in exact[i, :3]}) / 3
                 for i, q in enumerate(queries)]
        # a beam of 10 finds two thirds of them on these vectors, a beam of 40 over nine in ten
        assert np.mean(found) >= 0.85
    finally:
        drop_all(backend)
