"""The write path's batched link search (`add_and_link`) on the approximate index, its retrain
policy, deletions and byte accounting, and the write path's short paths (plain items, the
paused collector)."""

from __future__ import annotations

import gc

import numpy as np
import numpy.typing as npt
import pytest

from shared_core import AtlasConfig, ElasticMemoryAtlas, HashingEmbedder, InvalidMemoryError, ManualClock
from shared_core.engine.writes import build_spec, specs_from_items
from shared_core.store.memory import ann_index
from shared_core.store.memory._ivf_training import FIRST_RETRAIN_GROWTH, RETRAIN_GROWTH
from shared_core.store.memory._link_search import best_links, scan_lists
from shared_core.store.memory.ann_index import IVFVectorIndex, VectorDtype, list_count, training_size
from shared_core.store.memory.backend import TieredVectorIndex
from shared_core.store.memory.vector_index import NumpyVectorIndex
from shared_core.store.vector_math import merge_links

from ._fp16 import as_stored

DIM = 32


def clustered(n: int, *, seed: int = 0, clusters: int = 60, noise: float = 0.35) -> npt.NDArray[np.float32]:
    """Unit vectors around random centres (tighter than uniform noise, like real embeddings)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, DIM)).astype(np.float32)
    rows = centres[rng.integers(0, clusters, n)] + noise * rng.standard_normal((n, DIM)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def one_by_one(vectors: npt.NDArray[np.float32], start: int, k: int, floor: float, *,
               dtype: str = "float32") -> list[set[int]]:
    """Exact links of rows ``start..`` against every earlier row, as one-by-one inserts make them:
    row ``j`` as given against the earlier rows as an index of ``dtype`` stores them."""
    held = as_stored(vectors, dtype)
    out = []
    for j in range(start, len(vectors)):
        sims = held[:j] @ vectors[j]
        top = np.argsort(-sims, kind="stable")[:k]
        out.append({int(t) for t in top if sims[t] >= floor})
    return out


def as_rows(found: list[list[tuple[str | int, float]]], start: int) -> list[set[int]]:
    return [{int(o) if isinstance(o, str) else start + o for o, _ in hits} for hits in found]


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_probing_every_list_links_exactly_like_one_by_one_inserts(dtype: VectorDtype) -> None:
    vectors = clustered(1500)
    ids = [str(i) for i in range(1500)]
    index = IVFVectorIndex.build(ids[:1000], vectors[:1000], link_probes=10_000, link_margin=2.0, vector_dtype=dtype)
    found = index.add_and_link(ids[1000:], vectors[1000:], 3, min_similarity=0.5)
    assert as_rows(found, 1000) == one_by_one(vectors, 1000, 3, 0.5, dtype=dtype)
    assert all(s >= 0.5 for hits in found for _, s in hits)
    held = as_stored(vectors, dtype)
    assert len(index) == 1500 and index.get("1234").tobytes() == held[1234].tobytes()  # type: ignore[union-attr]


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_a_batch_links_with_the_cosines_one_by_one_inserts_see(dtype: VectorDtype) -> None:
    """The same rows added as one batch and one at a time link to the same rows with the same
    cosines (to 1e-6: faiss and numpy sum in different orders), whether the earlier row is in
    the index or earlier in the batch: with float16 both compare the new row with the earlier
    one as stored, rounded (`_link_search.pairs_in_lists`)."""
    vectors = clustered(1400, seed=12)
    ids = [str(i) for i in range(1400)]
    batched = IVFVectorIndex.build(ids[:1000], vectors[:1000], vector_dtype=dtype)
    single = IVFVectorIndex.build(ids[:1000], vectors[:1000], vector_dtype=dtype)
    in_batch = 0
    for lo, hi in ((1000, 1010), (1010, 1400)):  # row by row (up to ROW_BY_ROW), then list by list
        together = batched.add_and_link(ids[lo:hi], vectors[lo:hi], 30, min_similarity=0.5)
        alone = [single.add_and_link([ids[j]], vectors[j:j + 1], 30, min_similarity=0.5)[0] for j in range(lo, hi)]
        named = [[(ids[lo + o] if isinstance(o, int) else o, s) for o, s in hits] for hits in together]
        assert [[o for o, _ in h] for h in named] == [[o for o, _ in h] for h in alone]
        np.testing.assert_allclose([s for h in named for _, s in h], [s for h in alone for _, s in h], atol=1e-6)
        in_batch += sum(isinstance(o, int) for hits in together for o, _ in hits)
    assert in_batch > 100  # links to earlier rows of the same batch were made and compared


def test_default_link_probes_find_most_exact_links_in_batches_and_one_by_one() -> None:
    vectors = clustered(12_000, seed=1)
    ids = [str(i) for i in range(12_000)]
    truth = one_by_one(vectors, 10_000, 3, 0.6)
    batched = IVFVectorIndex.build(ids[:10_000], vectors[:10_000])
    single = IVFVectorIndex.build(ids[:10_000], vectors[:10_000])
    assert batched.probes < batched.lists and batched.link_probes < batched.lists  # really approximate
    found = as_rows(batched.add_and_link(ids[10_000:11_000], vectors[10_000:11_000], 3, min_similarity=0.6), 10_000)
    found += as_rows(batched.add_and_link(ids[11_000:], vectors[11_000:], 3, min_similarity=0.6), 11_000)
    alone = [as_rows(single.add_and_link([ids[j]], vectors[j:j + 1], 3, min_similarity=0.6), j)[0]
             for j in range(10_000, 10_400)]
    total = sum(len(t) for t in truth)
    assert total > 1000  # the data has links to find
    assert sum(len(f & t) for f, t in zip(found, truth, strict=True)) / total >= 0.9
    assert sum(len(f & t) for f, t in zip(alone, truth, strict=False)) / sum(len(t) for t in truth[:400]) >= 0.9


def test_row_by_row_and_list_by_list_searches_agree() -> None:
    vectors = clustered(5000, seed=2)
    index = IVFVectorIndex.build([str(i) for i in range(4900)], vectors[:4900])
    queries = vectors[4900:]
    dist, assign = index._quantizer.search(queries, 4)
    assign[dist < dist[:, :1] - 0.05] = -1  # some rows probe fewer lists
    rows = index._search_rows(queries, assign, dist, 5, 0.92)
    candidates = scan_lists(ann_index._faiss(), index._index, index._search_params(1), queries, assign, dist, 5, 0.92)
    none = (np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.float32))
    lists = best_links(len(queries), 5, candidates, index._ids, none)
    assert [[i for i, _ in r] for r in rows] == [[i for i, _ in r] for r in lists]
    assert any(len(r) < 5 for r in rows) and any(len(r) == 5 for r in rows)  # the floor cut some rows short


def test_the_index_retrains_at_twice_then_four_times_its_training_size() -> None:
    """2,000 vectors are too few for 2 sqrt(n) lists: the first retrain comes past twice that
    (`retrain_due`), the next past four times the 5,000 it then trained on."""
    vectors = clustered(10_000, seed=3)
    ids = [str(i) for i in range(10_000)]
    index = IVFVectorIndex.build(ids[:2000], vectors[:2000])
    assert (index.retrains, index._trained_on, index.lists) == (1, 2000, list_count(2000))
    for start in range(2000, 4000, 1000):
        index.add_and_link(ids[start:start + 1000], vectors[start:start + 1000], 3, min_similarity=0.5)
    assert index.retrains == 1  # 4,000 is not past 2 x 2,000
    index.add_and_link(ids[4000:5000], vectors[4000:5000], 3, min_similarity=0.5)
    assert (index.retrains, index._trained_on, index.lists) == (2, 5000, list_count(5000))
    assert FIRST_RETRAIN_GROWTH * 2000 < 5000
    for start in range(5000, 10_000, 1000):
        index.add_and_link(ids[start:start + 1000], vectors[start:start + 1000], 3, min_similarity=0.5)
    assert index.retrains == 2 and RETRAIN_GROWTH * 5000 >= 10_000  # 10,000 is not past 4 x 5,000
    assert int(index._sizes.sum()) == len(index) == 10_000
    hits = index.search(vectors[8500], 1)
    assert hits[0][0] == "8500"


def test_training_uses_a_bounded_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []
    train = ann_index.train_centroids

    def spy(sample: npt.NDArray[np.float32], lists: int, *, seed: int) -> npt.NDArray[np.float32]:
        seen.append(len(sample))
        return train(sample, lists, seed=seed)

    monkeypatch.setattr(ann_index, "train_centroids", spy)
    IVFVectorIndex.build([str(i) for i in range(20_000)], clustered(20_000, seed=4))
    assert seen == [training_size(20_000, list_count(20_000))] and seen[0] < 20_000


def test_deleted_vectors_never_come_back_and_the_tables_stay_consistent() -> None:
    vectors = clustered(6000, seed=5)
    ids = [str(i) for i in range(6000)]
    index = IVFVectorIndex.build(ids[:5000], vectors[:5000])
    gone = set(ids[:5000:3])
    index.remove(sorted(gone))
    assert int(index._sizes.sum()) == len(index) == 5000 - len(gone)
    found = index.add_and_link(ids[5000:], vectors[5000:], 10, min_similarity=-1.0)
    assert not {o for hits in found for o, _ in hits if isinstance(o, str)} & gone
    for q in vectors[:50]:
        assert not {i for i, _ in index.search(q, 50)} & gone
        assert not {i for i, _ in index.search(q, 50, subset=ids[:3000])} & gone
    assert index.similarities(vectors[0], ids[:3]).tolist()[0] == 0.0  # id "0" was removed
    assert len(index._ids) == 5000  # the 1,000 new ids took freed labels
    assert int(index._sizes.sum()) == len(index) == 6000 - len(gone)


def test_nbytes_counts_the_lists_reserved_room_and_gives_it_back_after_removals() -> None:
    vectors = clustered(5000, seed=6)
    ids = [str(i) for i in range(5000)]
    index = IVFVectorIndex.build(ids[:3000], vectors[:3000])
    index.add_and_link(ids[3000:], vectors[3000:], 3, min_similarity=0.5)
    entry = 2 * DIM + 8  # a float16 vector and its label
    reserved = int(index._room.codes.sum())
    assert len(index) <= reserved <= len(index) * 33 // 32 + 2 * index.lists  # a 32nd of room, not doubling
    assert index.nbytes() >= reserved * entry + index.lists * 4 * DIM
    before = index.nbytes()
    index.remove(ids[:2500])
    assert index.nbytes() < before  # lists left half empty give room back
    assert (index._room.codes <= 2 * index._sizes + 64 + 8).all()
    tiered = TieredVectorIndex(DIM, threshold=2000)
    tiered.add(ids, vectors)
    assert tiered.approximate
    tiered.remove(ids[:4500])  # below half the threshold: exact again, and the room is given back
    assert not tiered.approximate and tiered.nbytes() <= 2000 * 4 * DIM  # the exact index's room (threshold rows)


def test_the_tiered_index_links_across_the_switch_to_approximate() -> None:
    vectors = clustered(3000, seed=7)
    ids = [str(i) for i in range(3000)]
    tiered = TieredVectorIndex(DIM, threshold=1000)
    exact = NumpyVectorIndex(DIM)
    for start in range(0, 3000, 700):
        got = tiered.add_and_link(ids[start:start + 700], vectors[start:start + 700], 3, min_similarity=0.6)
        want = exact.add_and_link(ids[start:start + 700], vectors[start:start + 700], 3, min_similarity=0.6)
        if start < 1000:  # exact until the add that reaches the threshold
            assert got == want
        assert all(len(h) <= 3 for h in got)
    assert tiered.approximate and len(tiered) == 3000


def test_an_atlas_links_a_batch_on_the_approximate_index() -> None:
    atlas = ElasticMemoryAtlas(config=AtlasConfig(ann_threshold=64, similar_threshold=0.9),
                               embedder=HashingEmbedder(dim=64), clock=ManualClock(1_700_000_000.0))
    atlas.add_memories([f"background fact number {i} about topic {i % 13}" for i in range(300)], namespace="u")
    part = atlas.backend.partition("u")
    assert part is not None and part.vectors.approximate  # type: ignore[attr-defined]
    first, second = atlas.add_memories(["the kettle is in the blue cupboard"] * 2, namespace="u")
    similar = [e for e in atlas.edges(second.id) if e.relation.value == "similar_to"]
    assert [e.target for e in similar if e.source == second.id] == [first.id]  # the earlier row of the batch
    assert similar[0].strength == pytest.approx(1.0, abs=1e-3)  # the earlier row as stored: float16


def test_plain_items_take_the_short_path_with_the_same_result_and_errors() -> None:
    config = AtlasConfig()
    items: list[object] = ["a plain string", {"content": "a dict", "session_id": "s1"}, {"content": "no session"}]
    specs = specs_from_items(config, 8, items, namespace="ns", session_id="s0")
    assert specs == [build_spec(config, 8, "a plain string", namespace="ns", session_id="s0"),
                     build_spec(config, 8, "a dict", namespace="ns", session_id="s1"),
                     build_spec(config, 8, "no session", namespace="ns", session_id="s0")]
    with pytest.raises(InvalidMemoryError, match="item 1: content must not be empty"):
        specs_from_items(config, 8, ["fine", {"content": "  "}], namespace="ns", session_id=None)
    with pytest.raises(InvalidMemoryError, match="item 0: content must be a string"):
        specs_from_items(config, 8, [{"content": 3}], namespace="ns", session_id=None)
    with pytest.raises(ValueError, match="item 0: session_id must be None or a non-empty string"):
        specs_from_items(config, 8, [{"content": "x", "session_id": ""}], namespace="ns", session_id=None)
    with pytest.raises(ValueError, match="item 0: namespace must be a non-empty string"):
        specs_from_items(config, 8, ["x"], namespace="", session_id=None)


class _FailingKeywords:
    def __init__(self, inner: object) -> None:
        self.inner = inner

    def add(self, node_id: str, text: str, *, session_id: str | None = None) -> None:
        raise OSError("keyword store failed")

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)


@pytest.mark.parametrize("fail", [False, True])
def test_the_collector_is_back_on_after_an_insert_and_left_off_if_it_was(fail: bool) -> None:
    atlas = ElasticMemoryAtlas(config=AtlasConfig(), embedder=HashingEmbedder(dim=16), clock=ManualClock(0.0))
    atlas.add_memory("warm up", namespace="u")
    part = atlas.backend.partition("u")
    assert part is not None
    if fail:
        part.keywords = _FailingKeywords(part.keywords)  # type: ignore[assignment]
    for enabled in (True, False):
        (gc.enable if enabled else gc.disable)()
        try:
            try:
                atlas.add_memories(["one more", "and another"], namespace="u")
            except OSError:
                assert fail
            assert gc.isenabled() is enabled
        finally:
            gc.enable()


def test_the_rows_that_train_an_empty_index_are_linked_exactly_among_themselves() -> None:
    vectors = clustered(800, seed=8)
    index = IVFVectorIndex(DIM)
    found = index.add_and_link([str(i) for i in range(800)], vectors, 3, min_similarity=0.6)
    assert as_rows(found, 0) == one_by_one(vectors, 0, 3, 0.6)
    assert index.retrains == 1 and len(index) == 800


def test_best_links_merges_index_hits_and_batch_pairs_like_merge_links() -> None:
    rng = np.random.default_rng(9)
    n, k, ids = 40, 3, [f"m{i}" for i in range(50)]
    found_rows = rng.integers(0, n, 300)
    labels = rng.integers(0, 50, 300)
    found_sims = rng.random(300).astype(np.float32)
    pair_rows = rng.integers(1, n, 80)
    pair_cols = (rng.random(80) * pair_rows).astype(np.intp)
    pair_sims = rng.random(80).astype(np.float32)
    per_row: list[list[tuple[str, float]]] = [[] for _ in range(n)]
    for r, label, s in zip(found_rows.tolist(), labels.tolist(), found_sims.tolist(), strict=True):
        per_row[r].append((ids[label], s))
    expected = merge_links([sorted(h, key=lambda x: -x[1]) for h in per_row], pair_rows, pair_cols, pair_sims, k)
    got = best_links(n, k, (found_rows, labels, found_sims), ids, (pair_rows, pair_cols, pair_sims))  # type: ignore[arg-type]
    assert got == [hits[:k] for hits in expected]


def test_pairs_in_lists_gives_the_same_bits_in_any_step(monkeypatch: pytest.MonkeyPatch) -> None:
    from shared_core.store.memory import _link_search

    vectors = clustered(600, seed=10)
    index = IVFVectorIndex.build([str(i) for i in range(2000)], clustered(2000, seed=11))
    dist, assign = index._quantizer.search(vectors, 4)
    assign[dist < dist[:, :1] - 0.1] = -1
    whole = _link_search.pairs_in_lists(vectors, assign, 0.3)
    monkeypatch.setattr(_link_search, "PAIR_STEP", 7)
    stepped = _link_search.pairs_in_lists(vectors, assign, 0.3)
    assert len(whole[0]) > 100 and all(a.tobytes() == b.tobytes() for a, b in zip(whole, stepped, strict=True))
    rows, cols, sims = whole
    assert (cols < rows).all() and np.allclose(sims, np.einsum("ij,ij->i", vectors[rows], vectors[cols]))
