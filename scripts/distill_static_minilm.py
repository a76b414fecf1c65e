"""Distil a static (one vector per WordPiece token) embedding table from the shipped MiniLM.

model2vec's method (Tulkens and van Dongen, 2024), with numpy only:

1. every vocabulary token except ``[PAD]``, ``[unused*]`` and the special tokens is embedded alone
   through the shipped ONNX model, as ``[CLS] token [SEP]``, mean-pooled like a sentence;
2. the table is centred and rotated onto its principal components (PCA by SVD), keeping ``--dims``;
3. each row is weighted by ``a / (a + p(rank))`` (smooth inverse frequency, ``a`` = 1e-4) with a Zipf
   probability ``p`` from the token's id (WordPiece ids grow roughly with rarity past the
   characters), so frequent tokens count less in a mean;
4. rows are stored as int8 with one float32 scale per row (``.npz``: ``q``, ``scale``).

A text's vector is then the mean of its tokens' rows (no special tokens), normalised.

    .venv/bin/python scripts/distill_static_minilm.py --out /tmp/static_minilm.npz --dims 256
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from shared_core import MiniLMEmbedder


def token_vectors(batch: int = 256) -> tuple[np.ndarray, np.ndarray]:
    """``(ids, vectors)``: each kept vocabulary token embedded alone (mean pooled, not normalised)."""
    model = MiniLMEmbedder(cache_size=0, compute="fp32")
    model.embed(["load"])
    vocab: dict[str, int] = model._tokenizer.get_vocab()
    skip = re.compile(r"^\[(PAD|UNK|CLS|SEP|MASK|unused\d+)\]$")
    ids = np.array(sorted(i for tok, i in vocab.items() if not skip.match(tok)), dtype=np.int64)
    out = np.empty((len(ids), model.dim), dtype=np.float32)
    started = time.perf_counter()
    for s in range(0, len(ids), batch):
        chunk = ids[s:s + batch]
        feeds = {"input_ids": np.stack([np.full(len(chunk), 101), chunk, np.full(len(chunk), 102)], axis=1),
                 "attention_mask": np.ones((len(chunk), 3), dtype=np.int64)}
        if "token_type_ids" in model._inputs:
            feeds["token_type_ids"] = np.zeros((len(chunk), 3), dtype=np.int64)
        out[s:s + len(chunk)] = model._session.run(None, feeds)[0].mean(axis=1)
        if s // batch % 20 == 0:
            print(f"{s + len(chunk)}/{len(ids)} tokens, {time.perf_counter() - started:.0f} s", file=sys.stderr)
    return ids, out


def distil(vectors: np.ndarray, ids: np.ndarray, *, dims: int, sif: float = 1e-4) -> np.ndarray:
    """PCA to ``dims`` components, then smooth-inverse-frequency weights from a Zipf law over the ids."""
    centred = vectors - vectors.mean(axis=0)
    _, _, vt = np.linalg.svd(centred.astype(np.float64), full_matrices=False)
    reduced = centred @ vt[:dims].T
    rank = np.argsort(np.argsort(ids)) + 1  # ids ascending: rank 1 is the lowest kept id
    inv = 1.0 / (rank + 1.0)
    weight = sif / (sif + inv / inv.sum())
    return (reduced * weight[:, None]).astype(np.float32)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, help="the .npz table to write")
    parser.add_argument("--dims", type=int, default=256)
    args = parser.parse_args()
    ids, vectors = token_vectors()
    table = distil(vectors, ids, dims=args.dims)
    full = np.zeros((30522, args.dims), dtype=np.float32)
    full[ids] = table
    scale = np.abs(full).max(axis=1) / 127.0
    scale[scale == 0] = 1.0
    q = np.round(full / scale[:, None]).astype(np.int8)
    np.savez_compressed(args.out, q=q, scale=scale.astype(np.float32))
    print(f"wrote {args.out}: {Path(args.out).stat().st_size:,} bytes, {len(ids)} tokens x {args.dims}")


if __name__ == "__main__":
    main()
