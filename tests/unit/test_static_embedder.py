"""StaticEmbedder and distill_static_table, offline: step 1's token vectors are given (random).

The real distillation (the model over the whole vocabulary) is what scripts/distill_static.py runs;
its LoCoMo recall is in benchmarks/README.md. Here: the table's format, the embedding algorithm,
determinism, and refusals.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from shared_core import ElasticMemoryAtlas, ManualClock
from shared_core.text.static import StaticEmbedder, _cl100k_probabilities, _tokenizer_bytes, distill_static_table
from shared_core.values.errors import InvalidInputError

VOCAB = 30522


@pytest.fixture(scope="module")
def raw() -> np.ndarray:
    return np.random.default_rng(7).standard_normal((VOCAB, 384)).astype(np.float32)


@pytest.fixture(scope="module")
def table(raw: np.ndarray, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return distill_static_table(tmp_path_factory.mktemp("static") / "t.npz", dims=32, vectors=raw)


def _rows(path: Path) -> np.ndarray:
    with np.load(path) as data:
        return data["table"].astype(np.float32) * data["scales"][:, None]


def test_a_vector_is_the_normalised_mean_of_its_token_rows(table: Path) -> None:
    e = StaticEmbedder(table=table)
    rows = _rows(table)
    ids = e._tokenizer.encode("Caroline adopted a puppy", add_special_tokens=False).ids
    assert len(ids) >= 4
    mean = rows[ids].mean(axis=0)
    np.testing.assert_allclose(e.embed(["Caroline adopted a puppy"])[0], mean / np.linalg.norm(mean), atol=1e-6)


def test_vectors_are_deterministic_unit_and_independent_of_the_batch(table: Path) -> None:
    e = StaticEmbedder(table=table)
    texts = ["oat milk", "a much longer text about hiking with the dog last weekend", "oat milk", "x"]
    batch = e.embed(texts)
    assert batch.shape == (4, 32) and batch.dtype == np.float32 and e.dim == 32
    np.testing.assert_allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(batch[0], batch[2])
    alone = np.stack([e.embed([t])[0] for t in texts])
    np.testing.assert_allclose(batch, alone, atol=1e-6)
    again = StaticEmbedder(table=distill_static_table(table.with_name("again.npz"), dims=32,
                                                      vectors=np.random.default_rng(7).standard_normal(
                                                          (VOCAB, 384)).astype(np.float32)))
    assert np.array_equal(again.embed(texts), batch)
    assert e.embed([]).shape == (0, 32)


def test_a_text_without_known_tokens_gets_the_cls_and_sep_rows(table: Path) -> None:
    e = StaticEmbedder(table=table)
    rows = _rows(table)
    mean = rows[[101, 102]].mean(axis=0)
    expected = mean / np.linalg.norm(mean)
    for text in ("", "   ", "\u2603\u2603"):  # nothing; blanks; a symbol the vocabulary lacks ([UNK], dropped)
        np.testing.assert_allclose(e.embed([text])[0], expected, atol=1e-6)
    # an [UNK] inside a text is dropped, not averaged in
    np.testing.assert_allclose(e.embed(["oat \u2603 milk"])[0], e.embed(["oat milk"])[0], atol=1e-6)


def test_sif_weights_follow_cl100k_frequency() -> None:
    vocab = json.loads(_tokenizer_bytes())["model"]["vocab"]
    p = _cl100k_probabilities(vocab)
    assert p[vocab["the"]] > p[vocab["hiking"]] > p[vocab["[unused5]"]]
    assert p.shape == (VOCAB,) and np.all(p > 0)


def test_pca_keeps_the_leading_components_and_rows_are_int8(raw: np.ndarray, tmp_path: Path) -> None:
    path = distill_static_table(tmp_path / "nosif.npz", dims=384, sif=None, vectors=raw)
    with np.load(path) as data:
        assert data["table"].dtype == np.int8 and data["table"].shape == (VOCAB, 384)
        meta = json.loads(str(data["meta"]))
    assert meta["dims"] == 384 and meta["sif"] is None
    rows = _rows(path).astype(np.float64)
    centred = raw.astype(np.float64) - raw.mean(axis=0)
    # a full-rank rotation keeps every pairwise distance (up to the int8 rounding)
    i, j = 11, 2000
    assert np.linalg.norm(rows[i] - rows[j]) == pytest.approx(np.linalg.norm(centred[i] - centred[j]), rel=0.02)
    variances = rows.var(axis=0)
    assert variances[0] >= variances[1] >= variances[-1]


def test_an_atlas_runs_on_a_static_table(table: Path) -> None:
    atlas = ElasticMemoryAtlas(embedder=StaticEmbedder(table=table), clock=ManualClock(1_700_000_000.0))
    atlas.add_memories(["Caroline adopted a puppy named Oscar", "Melanie painted a sunset"], namespace="n",
                       progress=False)
    hits = atlas.retrieve("Caroline adopted a puppy named Oscar", namespace="n", top_k=1)
    assert [h.content for h in hits] == ["Caroline adopted a puppy named Oscar"]


def test_bad_tables_are_refused(table: Path, raw: np.ndarray, tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="cannot read"):
        StaticEmbedder(table=tmp_path / "missing.npz")
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(InvalidInputError, match="cannot read"):
        StaticEmbedder(table=tmp_path / "junk.npz")
    with np.load(table) as data:
        parts = {k: data[k] for k in data.files}
    meta = json.loads(str(parts["meta"]))
    cases = {
        "not a table": {**parts, "meta": np.array(json.dumps({**meta, "format": "other"}))},
        "another tokenizer": {**parts, "meta": np.array(json.dumps({**meta, "tokenizer_sha256": "0" * 64}))},
        "shape": {**parts, "table": parts["table"][:100]},
        "NaN": {**parts, "scales": np.full(VOCAB, np.nan, dtype=np.float32)},
    }
    for match, arrays in cases.items():
        path = tmp_path / "bad.npz"
        np.savez(path, **arrays)
        with pytest.raises(InvalidInputError, match=match):
            StaticEmbedder(table=path)
    with pytest.raises(InvalidInputError, match="path"):
        StaticEmbedder(table=3)  # type: ignore[arg-type]


def test_bad_texts_and_settings_are_refused(table: Path, raw: np.ndarray, tmp_path: Path) -> None:
    e = StaticEmbedder(table=table)
    for bad in ("a string, not a list", ["ok", 3], [None]):
        with pytest.raises(InvalidInputError, match="sequence of strings"):
            e.embed(bad)  # type: ignore[arg-type]
    for kwargs in ({"dims": 0}, {"dims": 385}, {"dims": True}, {"sif": 0.0}, {"sif": -1e-4},
                   {"compute": "int4"}, {"vectors": raw[:10]}):
        with pytest.raises(InvalidInputError):
            distill_static_table(tmp_path / "x.npz", **{"vectors": raw, **kwargs})  # type: ignore[arg-type]
    assert not (tmp_path / "x.npz").exists()
