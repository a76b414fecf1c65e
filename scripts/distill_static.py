"""Distil the static token table of `StaticEmbedder` from the installed MiniLM; offline, reproducible.

    nice -n 5 .venv/bin/python scripts/distill_static.py --out /tmp/minilm_static.npz
    nice -n 5 .venv/bin/python scripts/distill_static.py --out t.npz --dims 128 --vectors /tmp/raw.npy

The method is `shared_core.text.static.distill_static_table`'s (model2vec's ``distill``: each
WordPiece token through all-MiniLM-L6-v2 as ``[CLS] token [SEP]``, mean of the outputs, PCA,
SIF weights from cl100k_base ranks, int8 rows with one scale each). ``--vectors`` keeps step 1's
raw token vectors in an ``.npy`` (read if present, else written), so other ``--dims`` / ``--sif``
settings are tried without running the model again. The table is a deterministic function of the
model, the bundled tokenizer and the settings, up to float rounding of the model's threads.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from shared_core.text.static import _token_vectors, distill_static_table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="the .npz to write")
    parser.add_argument("--dims", type=int, default=256, help="PCA dimensions, 1 to 384 (default: %(default)s)")
    parser.add_argument("--sif", type=float, default=1e-4, help="SIF coefficient; 0: no weights (default: %(default)s)")
    parser.add_argument("--compute", choices=["fp32", "int8"], default="fp32", help="the model's kernels")
    parser.add_argument("--threads", type=int, default=None, help="onnxruntime intra-op threads")
    parser.add_argument("--vectors", help="cache of the raw token vectors (.npy): read if present, else written")
    args = parser.parse_args()
    start = time.perf_counter()

    def progress(done: int, total: int) -> None:
        print(f"\r{done}/{total} tokens, {done / (time.perf_counter() - start):.0f}/s", end="",
              file=sys.stderr, flush=True)

    cache = Path(args.vectors) if args.vectors else None
    vectors = None
    if cache is not None and cache.exists():
        vectors = np.load(cache)
    elif cache is not None:
        vectors = _token_vectors(args.compute, args.threads, 512, progress)
        np.save(cache, vectors)
        print(file=sys.stderr)
    path = distill_static_table(args.out, dims=args.dims, sif=args.sif or None, compute=args.compute,
                                threads=args.threads, progress=progress, vectors=vectors)
    print(f"\n{path}: {path.stat().st_size / 1e6:.1f} MB, {time.perf_counter() - start:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
