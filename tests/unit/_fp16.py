"""Vectors as the approximate index stores them, for tests that compare with what it returns."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt


def as_stored(vectors: npt.NDArray[np.float32], dtype: str = "float16") -> npt.NDArray[np.float32]:
    """``vectors`` as an `IVFVectorIndex` of ``vector_dtype`` ``dtype`` holds them: float32 as
    given; float16 rounded by faiss's fp16 codec (ties away from zero, where numpy's
    ``astype(np.float16)`` rounds them to even)."""
    if dtype == "float32":
        return vectors
    import faiss

    codec = faiss.ScalarQuantizer(vectors.shape[1], faiss.ScalarQuantizer.QT_fp16)
    decoded: npt.NDArray[np.float32] = codec.decode(codec.compute_codes(np.ascontiguousarray(vectors,
                                                                                           dtype=np.float32)))
    return decoded
