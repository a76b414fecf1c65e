"""The approximate index: recall against exact search, probing, retraining, and the switch from
exact to approximate (and back) inside an atlas, kept consistent with the graph."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
import pytest

from shared_core import AtlasConfig, ElasticMemoryAtlas, HashingEmbedder, InvalidInputError, ManualClock
from shared_core.store.base import KeywordIndexBase
from shared_core.store.memory.ann_index import EXACT_SUBSET, IVFVectorIndex, VectorDtype, list_count, retrain_due
from shared_core.store.memory.backend import TieredVectorIndex

from ._fp16 import as_stored

DIM = 32


def clustered(n: int, *, seed: int = 0, clusters: int = 40) -> npt.NDArray[np.float32]:
    """Unit vectors around random centres: the shape of real embeddings, unlike uniform noise."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, DIM)).astype(np.float32)
    rows = centres[rng.integers(0, clusters, n)] + 0.6 * rng.standard_normal((n, DIM)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def exact_top(vectors: npt.NDArray[np.float32], query: npt.NDArray[np.float32], k: int) -> set[int]:
    return set(np.argsort(-(vectors @ query))[:k].tolist())


def test_default_probing_keeps_recall_at_10_high_on_clustered_data() -> None:
    vectors = clustered(6000)
    ids = [str(i) for i in range(len(vectors))]
    index = IVFVectorIndex.build(ids, vectors)
    assert index.lists == list_count(6000) and index.probes < index.lists  # really approximate
    queries = clustered(100, seed=1)
    recall = np.mean([len({int(i) for i, _ in index.search(q, 10)} & exact_top(vectors, q, 10)) / 10
                      for q in queries])
    assert recall >= 0.95


def test_scanning_every_list_is_exact() -> None:
    vectors = clustered(2000)
    index = IVFVectorIndex.build([str(i) for i in range(2000)], vectors, probe_fraction=1.0)
    for q in clustered(20, seed=2):
        assert {int(i) for i, _ in index.search(q, 10)} == exact_top(vectors, q, 10)


def test_a_search_never_comes_back_short() -> None:
    """With one probe the probed list may hold fewer than k vectors: the search scans all."""
    vectors = clustered(3000)
    index = IVFVectorIndex.build([str(i) for i in range(3000)], vectors, probe_fraction=1e-9, min_probes=1)
    assert index.probes == 1
    hits = index.search(clustered(1, seed=3)[0], 500)
    assert len(hits) == 500 and len({i for i, _ in hits}) == 500


def test_large_subsets_use_the_index_and_stay_inside_the_subset() -> None:
    vectors = clustered(3 * EXACT_SUBSET)
    ids = [str(i) for i in range(len(vectors))]
    index = IVFVectorIndex.build(ids, vectors)
    subset = {str(i) for i in range(0, len(vectors), 2)}
    assert len(subset) > EXACT_SUBSET
    rows = np.arange(0, len(vectors), 2)
    for q in clustered(10, seed=4):
        hits = index.search(q, 10, subset=subset)
        assert len(hits) == 10 and {i for i, _ in hits} <= subset
        truth = {int(rows[j]) for j in exact_top(vectors[rows], q, 10)}
        assert len({int(i) for i, _ in hits} & truth) >= 8


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_the_centroids_are_retrained_as_the_index_grows_and_labels_are_reused(dtype: VectorDtype) -> None:
    vectors = clustered(5000)
    ids = [str(i) for i in range(5000)]
    index = IVFVectorIndex.build(ids[:300], vectors[:300], vector_dtype=dtype)
    assert index.retrains == 1
    for start in range(300, 5000, 500):
        index.add(ids[start:start + 500], vectors[start:start + 500])
    # trained on too few vectors for 2 sqrt(n) lists each time: retrained past 2 x 300, 2 x 800, 2 x 1800
    assert index.retrains == 4 and index._trained_on == 3800
    assert index.lists == list_count(3800)
    index.remove(ids[:1000])
    index.add(ids[:1000], vectors[:1000])  # the freed labels are taken again
    assert len(index) == 5000 and len(index._ids) == 5000
    assert index.get("17").tobytes() == as_stored(vectors, dtype)[17].tobytes()  # type: ignore[union-attr]
    assert index.get("4999").tobytes() == as_stored(vectors, dtype)[4999].tobytes()  # type: ignore[union-attr]


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_the_tiered_index_switches_both_ways_with_hysteresis(dtype: VectorDtype) -> None:
    vectors = clustered(300)
    ids = [str(i) for i in range(300)]
    index = TieredVectorIndex(DIM, threshold=100, vector_dtype=dtype)
    index.add(ids[:99], vectors[:99])
    assert not index.approximate
    index.add(ids[99:150], vectors[99:150])
    assert index.approximate and len(index) == 150
    index.remove(ids[:80])  # 70 left: above half the threshold, stays approximate
    assert index.approximate
    index.remove(ids[80:101])  # 49 left: back to exact, with the vectors the approximate index held
    assert not index.approximate and len(index) == 49
    held = as_stored(vectors, dtype)
    assert all(index.get(i).tobytes() == held[int(i)].tobytes() for i in ids[101:150])  # type: ignore[union-attr]


def test_a_float16_index_holds_rounded_vectors_and_half_the_bytes() -> None:
    """float16: each vector read back is the input rounded to nearest float16 (so within 1e-3 of
    it, for unit rows), searches rank by the rounded vectors, and the lists hold 2 bytes a
    component instead of 4."""
    vectors = clustered(3000, seed=5)
    ids = [str(i) for i in range(3000)]
    half = IVFVectorIndex.build(ids, vectors)
    full = IVFVectorIndex.build(ids, vectors, vector_dtype="float32")
    assert half.vector_dtype == "float16" and full.vector_dtype == "float32"
    got = np.stack(half.get_many(ids))  # type: ignore[arg-type]
    np.testing.assert_allclose(got, vectors, rtol=0, atol=1e-3)
    assert got.tobytes() == as_stored(vectors, "float16").tobytes()
    numpy_rounded = vectors.astype(np.float16).astype(np.float32)  # ties to even: a few components differ
    assert 0 < np.count_nonzero(got != numpy_rounded) < got.size // 1000
    assert np.stack(full.get_many(ids)).tobytes() == vectors.tobytes()  # type: ignore[arg-type]
    assert half.vectors()[1].tobytes() == as_stored(vectors, "float16")[[int(i) for i in half.vectors()[0]]].tobytes()
    query = clustered(1, seed=6)[0]
    np.testing.assert_allclose(half.similarities(query, ids[:50]), got[:50] @ query, rtol=1e-5, atol=1e-6)
    # half the bytes a vector in the lists (which grow by a sixteenth instead of a thirty-second:
    # a little more room); the direct map and the float32 centroids are the same
    assert half.nbytes() - half._room.nbytes() == full.nbytes() - full._room.nbytes()
    codes, codes_full = int(half._room.codes.sum()), int(full._room.codes.sum())
    assert 3000 <= codes_full <= codes <= 3000 * 17 // 16 + 2 * half.lists
    assert half.nbytes() < 0.6 * full.nbytes()
    queries = clustered(200, seed=7)  # recall@10 of the default probing, against exact search
    recall = np.mean([len({int(i) for i, _ in half.search(q, 10)} & exact_top(vectors, q, 10)) / 10
                      for q in queries])
    recall_full = np.mean([len({int(i) for i, _ in full.search(q, 10)} & exact_top(vectors, q, 10)) / 10
                           for q in queries])
    assert half.probes < half.lists and recall >= 0.95 and recall >= recall_full - 0.01


def test_the_index_refuses_an_unknown_vector_dtype() -> None:
    with pytest.raises(InvalidInputError, match="vector_dtype"):
        IVFVectorIndex(DIM, vector_dtype="int8")  # type: ignore[arg-type]


def test_config_validates_the_index_fields() -> None:
    assert AtlasConfig(ann_threshold=None).ann_threshold is None
    with pytest.raises(InvalidInputError, match="ann_threshold"):
        AtlasConfig(ann_threshold=10)
    with pytest.raises(InvalidInputError, match="ann_probe_fraction"):
        AtlasConfig(ann_probe_fraction=0.0)
    assert AtlasConfig().ann_vector_dtype == "float16"
    assert AtlasConfig(ann_vector_dtype="float32").ann_vector_dtype == "float32"
    for bad in ("float64", "fp16", None, 16):
        with pytest.raises(InvalidInputError, match="ann_vector_dtype must be 'float16' or 'float32'"):
            AtlasConfig(ann_vector_dtype=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_the_config_chooses_how_the_approximate_index_stores_vectors(dtype: VectorDtype) -> None:
    atlas = ElasticMemoryAtlas(config=AtlasConfig(ann_threshold=64, ann_vector_dtype=dtype),
                               embedder=HashingEmbedder(dim=64), clock=ManualClock(1_700_000_000.0))
    nodes = atlas.add_memories([f"fact {i} about topic {i % 9}" for i in range(100)], namespace="u")
    part = atlas.backend.partition("u")
    assert part is not None and part.vectors.approximate  # type: ignore[attr-defined]
    assert part.vectors._impl.vector_dtype == dtype  # type: ignore[attr-defined]
    embedding = atlas.embedder.embed([nodes[5].content])[0]
    np.testing.assert_array_equal(part.vectors.get(nodes[5].id), as_stored(embedding[None, :], dtype)[0])


def _atlas(threshold: int) -> ElasticMemoryAtlas:
    return ElasticMemoryAtlas(config=AtlasConfig(ann_threshold=threshold), embedder=HashingEmbedder(dim=64),
                              clock=ManualClock(1_700_000_000.0))


def _consistent(atlas: ElasticMemoryAtlas, namespace: str) -> None:
    part = atlas.backend.partition(namespace)
    assert part is not None
    node_ids = {n.id for n in part.graph.nodes()}
    assert len(part.vectors) == len(node_ids) == len(part.keywords)
    assert all(part.vectors.get(i) is not None for i in node_ids)


def test_an_atlas_goes_approximate_per_namespace_and_stays_consistent_with_its_graph() -> None:
    atlas = _atlas(threshold=64)
    facts = [f"fact {i} about topic {i % 9} and colour {i % 5}" for i in range(150)]
    nodes = atlas.add_memories(facts, namespace="big", session_id="s")
    atlas.add_memories(facts[:10], namespace="small")
    big, small = atlas.backend.partition("big"), atlas.backend.partition("small")
    assert big is not None and small is not None
    assert big.vectors.approximate and not small.vectors.approximate  # type: ignore[attr-defined]
    hit = atlas.retrieve("fact 42 about topic 6 and colour 2", namespace="big", top_k=1, reinforce=False)
    assert hit[0].node.content == facts[42]
    newer = atlas.update_memory(nodes[42].id, "fact 42 was corrected")
    atlas.forget(nodes[7].id)
    _consistent(atlas, "big")
    assert atlas.get(newer.id).embedding is not None
    for node in nodes[8:130]:
        atlas.forget(node.id)
    assert not big.vectors.approximate  # type: ignore[attr-defined]
    _consistent(atlas, "big")
    assert atlas.retrieve("fact 140", namespace="big", top_k=1, reinforce=False)[0].node.content == facts[140]


class _KeywordsFailingAt(KeywordIndexBase):
    """A keyword index whose n-th ``add`` fails (``add_many`` is the contract's default, so each
    row is added)."""

    def __init__(self, inner: object, fail_at: int) -> None:
        self.inner, self.fail_at, self.calls = inner, fail_at, 0

    def add(self, node_id: str, text: str, *, session_id: str | None = None) -> None:
        self.calls += 1
        if self.calls == self.fail_at:
            raise OSError("keyword store failed")
        self.inner.add(node_id, text, session_id=session_id)  # type: ignore[attr-defined]

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_a_failed_batch_that_crossed_the_threshold_leaves_no_trace(dtype: VectorDtype) -> None:
    from ._state import snapshot

    atlas = ElasticMemoryAtlas(config=AtlasConfig(ann_threshold=64, ann_vector_dtype=dtype),
                               embedder=HashingEmbedder(dim=64), clock=ManualClock(1_700_000_000.0))
    atlas.add_memories([f"early fact {i}" for i in range(40)], namespace="u", session_id="s")
    part = atlas.backend.partition("u")
    assert part is not None
    before = snapshot(atlas)
    part.keywords = _KeywordsFailingAt(part.keywords, fail_at=50)  # type: ignore[assignment]
    with pytest.raises(OSError, match="keyword store failed"):
        atlas.add_memories([f"late fact {i}" for i in range(100)], namespace="u", session_id="s")
    part.keywords = part.keywords.inner  # type: ignore[attr-defined]
    assert part.vectors.approximate  # type: ignore[attr-defined]  # the batch had crossed the threshold
    after = snapshot(atlas)
    if dtype == "float16":  # the one trace: the vectors moved to the approximate index, which rounds them
        for ns_id, raw in before["u"]["vectors"].items():
            rounded = as_stored(np.frombuffer(raw, dtype=np.float32)[None, :], dtype)[0]
            before["u"]["vectors"][ns_id] = rounded.tobytes()
    assert after == before
    assert atlas.retrieve("early fact 3", namespace="u", top_k=1)[0].node.content == "early fact 3"


def test_retraining_comes_at_twice_the_size_while_lists_lack_vectors_then_at_four_times() -> None:
    """`retrain_due`: growth 2 while ``n / 39`` lists is fewer than ``2 sqrt(n)`` (below 6,084
    vectors), 4 from there on."""
    for trained_on in (300, 3000, 6000):
        assert list_count(trained_on) < int(2 * math.sqrt(trained_on))
        assert not retrain_due(2 * trained_on, trained_on) and retrain_due(2 * trained_on + 1, trained_on)
    for trained_on in (6100, 7000, 29_000, 120_000):
        assert list_count(trained_on) == int(2 * math.sqrt(trained_on))
        assert not retrain_due(4 * trained_on, trained_on) and retrain_due(4 * trained_on + 1, trained_on)
