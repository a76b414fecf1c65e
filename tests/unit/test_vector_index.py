"""The `VectorIndex` contract, run against every implementation (exact, approximate, tiered)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt
import pytest

from shared_core import NumpyVectorIndex, VectorIndex
from shared_core.store.memory.ann_index import IVFVectorIndex
from shared_core.store.memory.backend import TieredVectorIndex
from shared_core.store.vector_math import dot_rows, top_k_rows

from ._fp16 import as_stored

DIM = 24

# Every implementation, configured to be exact so its answers can be compared with brute force:
# the IVF index scans every list (probe_fraction=1), and the tiered one crosses its threshold
# (and so moves from numpy to IVF) in the middle of most tests. The IVF index stores float16 by
# default ("ivf", "tiered") or float32 ("ivf32", "tiered32").
IMPLEMENTATIONS: dict[str, Callable[[], VectorIndex]] = {
    "numpy": lambda: NumpyVectorIndex(DIM, capacity=4),
    "ivf": lambda: IVFVectorIndex(DIM, probe_fraction=1.0),
    "ivf32": lambda: IVFVectorIndex(DIM, probe_fraction=1.0, vector_dtype="float32"),
    "tiered": lambda: TieredVectorIndex(DIM, threshold=64, probe_fraction=1.0),
    "tiered32": lambda: TieredVectorIndex(DIM, threshold=64, probe_fraction=1.0, vector_dtype="float32"),
}


@pytest.fixture(params=list(IMPLEMENTATIONS))
def index(request: pytest.FixtureRequest) -> VectorIndex:
    return IMPLEMENTATIONS[request.param]()


def unit_rows(n: int, seed: int = 0) -> npt.NDArray[np.float32]:
    rng = np.random.default_rng(seed)
    rows = rng.standard_normal((n, DIM)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def fill(index: VectorIndex, n: int, seed: int = 0) -> tuple[list[str], npt.NDArray[np.float32]]:
    ids = [f"m{i}" for i in range(n)]
    vectors = unit_rows(n, seed)
    for start in range(0, n, 37):  # several adds, so growth and retraining happen on the way
        index.add(ids[start:start + 37], vectors[start:start + 37])
    return ids, vectors


def stored(index: VectorIndex, vectors: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """``vectors`` as ``index`` holds them: rounded to float16 by a float16 IVF index (a tiered
    one once it is approximate, which moves every vector there), else exactly as given.

    The only loosening of this contract: a float16 index is exact about the vectors it stores,
    which are within 2**-11 (relative) of the ones given (checked against the input with a
    1e-3 tolerance where a test reads a vector back)."""
    rounds = getattr(index, "vector_dtype", "float32") == "float16" and getattr(index, "approximate", True)
    return as_stored(vectors) if rounds else vectors


def brute(vectors: npt.NDArray[np.float32], ids: list[str], query: npt.NDArray[np.float32],
          k: int) -> list[str]:
    sims = vectors @ query
    return [ids[i] for i in np.argsort(-sims, kind="stable")[:k]]


def test_every_implementation_satisfies_the_protocol(index: VectorIndex) -> None:
    assert isinstance(index, VectorIndex)
    assert index.dim == DIM and len(index) == 0
    assert index.search(unit_rows(1)[0], 5) == []


def test_search_matches_brute_force(index: VectorIndex) -> None:
    ids, given = fill(index, 300)
    assert len(index) == 300
    vectors = stored(index, given)
    for query in unit_rows(20, seed=1):
        hits = index.search(query, 10)
        assert [i for i, _ in hits] == brute(vectors, ids, query, 10)
        assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
        expected = np.sort(vectors @ query)[::-1][:10]
        np.testing.assert_allclose([s for _, s in hits], expected, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose([s for _, s in hits], np.sort(given @ query)[::-1][:10], atol=1e-3)


def test_k_larger_than_the_index_returns_everything(index: VectorIndex) -> None:
    ids, _ = fill(index, 70)
    assert sorted(i for i, _ in index.search(unit_rows(1, 5)[0], 500)) == sorted(ids)
    assert index.search(unit_rows(1, 5)[0], 0) == []


def test_get_returns_the_exact_vector_and_add_replaces(index: VectorIndex) -> None:
    _ids, given = fill(index, 100)
    got = index.get("m42")
    assert got is not None and got.tobytes() == stored(index, given)[42].tobytes()
    np.testing.assert_allclose(got, given[42], rtol=0, atol=1e-3)
    assert index.get("nope") is None
    replacement = unit_rows(1, seed=9)
    index.add(["m42"], replacement)
    assert len(index) == 100
    assert index.get("m42").tobytes() == stored(index, replacement)[0].tobytes()  # type: ignore[union-attr]
    assert index.search(replacement[0], 1)[0][0] == "m42"


def test_remove_is_consistent_everywhere(index: VectorIndex) -> None:
    ids, vectors = fill(index, 120)
    vectors = stored(index, vectors)
    gone = ids[::3]
    index.remove([*gone, "never-added"])
    kept = [i for i in ids if i not in set(gone)]
    assert len(index) == len(kept)
    assert all(index.get(i) is None for i in gone)
    rows = [int(i[1:]) for i in kept]
    for query in unit_rows(10, seed=2):
        assert [i for i, _ in index.search(query, 7)] == brute(vectors[rows], kept, query, 7)
    index.remove(kept)
    assert len(index) == 0 and index.search(vectors[0], 3) == []
    index.add(["again"], vectors[:1])  # usable after being emptied
    assert index.search(vectors[0], 3) == [("again", pytest.approx(float(vectors[0] @ vectors[0])))]


def test_subset_search_sees_only_the_subset(index: VectorIndex) -> None:
    _ids, vectors = fill(index, 200)
    vectors = stored(index, vectors)
    subset = {f"m{i}" for i in range(0, 200, 7)} | {"unknown"}
    query = unit_rows(1, seed=3)[0]
    hits = index.search(query, 5, subset=subset)
    members = sorted(subset - {"unknown"}, key=lambda i: int(i[1:]))
    rows = [int(i[1:]) for i in members]
    assert [i for i, _ in hits] == brute(vectors[rows], members, query, 5)
    assert index.search(query, 5, subset={"unknown"}) == []
    assert index.search(query, 5, subset=set()) == []


def test_similarities_are_dot_products_and_zero_for_unknown_ids(index: VectorIndex) -> None:
    _ids, vectors = fill(index, 90)
    vectors = stored(index, vectors)
    query = unit_rows(1, seed=4)[0]
    sims = index.similarities(query, ["m5", "missing", "m80"])
    np.testing.assert_allclose(sims, [vectors[5] @ query, 0.0, vectors[80] @ query], rtol=1e-5, atol=1e-6)
    assert index.similarities(query, []).shape == (0,)


def test_search_many_equals_one_search_per_row(index: VectorIndex) -> None:
    fill(index, 150)
    queries = unit_rows(9, seed=6)
    batched = index.search_many(queries, 4)
    single = [index.search(q, 4) for q in queries]
    assert [[i for i, _ in row] for row in batched] == [[i for i, _ in row] for row in single]
    np.testing.assert_allclose([[s for _, s in row] for row in batched],
                               [[s for _, s in row] for row in single], rtol=1e-5)


def test_bad_adds_are_refused(index: VectorIndex) -> None:
    with pytest.raises(ValueError, match="dimension"):
        index.add(["a"], np.zeros((1, DIM + 1), dtype=np.float32))
    with pytest.raises(ValueError, match="duplicate"):
        index.add(["a", "a"], unit_rows(2))
    assert len(index) == 0


def test_top_k_rows_orders_each_row() -> None:
    sims = np.array([[0.1, 0.5, 0.3, 0.9], [0.4, 0.2, 0.8, 0.0]], dtype=np.float32)
    assert top_k_rows(sims, 3).tolist() == [[3, 1, 2], [2, 0, 1]]
    assert top_k_rows(sims, 10).tolist() == [[3, 1, 2, 0], [2, 0, 1, 3]]
    assert top_k_rows(sims, 0).shape == (2, 0)


def test_numpy_index_gives_memory_back_after_mass_deletes() -> None:
    index = NumpyVectorIndex(DIM)
    ids, _ = fill(index, 1000)
    big = index.nbytes()
    index.remove(ids[:950])
    assert index.nbytes() < big / 4 and len(index) == 50


class _SearchOnly:
    """An index with only the seam's methods: the derived functions must fall back to them."""

    def __init__(self, inner: VectorIndex) -> None:
        self.inner = inner

    def search(self, query: npt.NDArray[np.float32], k: int, *, subset: object = None) -> list[tuple[str, float]]:
        return self.inner.search(query, k, subset=subset)  # type: ignore[arg-type]

    def get(self, node_id: str) -> npt.NDArray[np.float32] | None:
        return self.inner.get(node_id)


def test_ranked_search_and_vectors_of_give_what_search_and_get_give(index: VectorIndex) -> None:
    from shared_core.store.vector_math import search_ranked, vectors_of

    ids, _ = fill(index, 150)
    index.remove(ids[:5])
    for query in unit_rows(10, seed=3):
        for k, subset in ((40, None), (200, None), (7, set(ids[3:60]))):
            hits = index.search(query, k, subset=subset)
            for source in (index, _SearchOnly(index)):
                pairs, sims = search_ranked(source, query, k, subset=subset)  # type: ignore[arg-type]
                assert list(pairs) == hits
                assert [float(s) for s in sims] == [s for _, s in hits]
    wanted = [*ids[3:12], "missing"]
    for source in (index, _SearchOnly(index)):
        got = vectors_of(source, wanted)  # type: ignore[arg-type]
        assert [None if v is None else v.tolist() for v in got] == \
            [None if (v := index.get(i)) is None else v.tolist() for i in wanted]
    known = ids[5:15]
    assert [v.tolist() for v in vectors_of(index, known)] == [index.get(i).tolist() for i in known]  # type: ignore[union-attr]
    query = unit_rows(1, seed=4)[0]
    rows = np.stack([index.get(i) for i in known])  # type: ignore[arg-type]
    np.testing.assert_array_equal(index.similarities(query, known), dot_rows(rows, query))
    np.testing.assert_array_equal(index.similarities(query, [*known, "missing"]), [*dot_rows(rows, query), 0.0])


def test_normalize_rows_is_the_float64_quotient_rounded_once() -> None:
    from shared_core.text.embedding import normalize_rows

    rng = np.random.default_rng(1)
    for dtype in (np.float32, np.float64):
        rows = (rng.standard_normal((500, 24)) * rng.uniform(1e-3, 1e3, (500, 1))).astype(dtype)
        narrow = rows.astype(np.float32)
        wide = narrow.astype(np.float64)
        expected = (narrow / np.sqrt(np.einsum("ij,ij->i", wide, wide))[:, None]).astype(np.float32)
        out = normalize_rows(rows, dim=24)
        assert out.dtype == np.float32 and out.flags["C_CONTIGUOUS"] and out.tobytes() == expected.tobytes()


def test_normalize_rows_of_one_row_is_that_row_of_a_matrix() -> None:
    """The one-row path (Python float checks) gives each row bit for bit as the matrix path does,
    and rejects the same rows."""
    from shared_core.text.embedding import normalize_rows
    from shared_core.values.errors import InvalidEmbeddingError

    rng = np.random.default_rng(2)
    rows = (rng.standard_normal((300, 384)) * rng.uniform(1e-20, 1e20, (300, 1))).astype(np.float32)
    whole = normalize_rows(rows, dim=384)
    for i, row in enumerate(rows):
        for one in (row, row[None, :], row.astype(np.float64)):
            out = normalize_rows(one, dim=384)
            assert out.shape == (1, 384) and out.dtype == np.float32 and out.tobytes() == whole[i].tobytes()
    for bad, message in ((np.zeros(384), "zero vector"), (np.full(384, np.nan), "NaN"),
                         (np.r_[np.inf, np.ones(383)], "NaN or infinite")):
        with pytest.raises(InvalidEmbeddingError, match=message):
            normalize_rows(bad, dim=384)


def test_without_faiss_the_tiered_index_stays_exact_and_says_how_to_install_it(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    # faiss is the optional "ann" extra: a core install must search exactly past the threshold.
    monkeypatch.setitem(__import__("sys").modules, "faiss", None)  # `import faiss` raises ImportError
    monkeypatch.setattr(TieredVectorIndex, "_warned", False)
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((200, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    index = TieredVectorIndex(DIM, threshold=64)
    with caplog.at_level("WARNING"):
        index.add([f"m{i}" for i in range(200)], vectors)
    assert not index.approximate and len(index) == 200
    assert any("[ann]" in record.getMessage() for record in caplog.records)
    hits = index.search(vectors[123], 3)
    assert hits[0][0] == "m123"
    exact = np.argsort(-(vectors @ vectors[123]))[:3]
    assert [i for i, _ in hits] == [f"m{j}" for j in exact]
