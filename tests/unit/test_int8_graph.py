"""The int8 graph rewrite on a small synthetic model: same results as integer arithmetic in numpy.

The real model's int8 vectors are checked in tests/integration/test_offline_components.py.
"""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

from shared_core import MiniLMEmbedder
from shared_core.text._int8_graph import _node, _tensor, rewrite_int8
from shared_core.text._onnx_proto import FLOAT, Model
from shared_core.values.errors import InvalidInputError

K, N = 64, 48


def _model(q: np.ndarray, scale: np.ndarray, *, opset: int = 17, dequantized: bool = True) -> bytes:
    """``y = x @ (float(q) * scale)`` through Cast -> Mul -> MatMul, as the shipped model stores a layer."""
    model = Model(ir_version=8)
    model.opset_import.add(domain="", version=opset)
    graph = model.graph
    graph.name = "layer"
    graph.node.extend([_node("Cast", ["q"], ["qf"], to=FLOAT), _node("Mul", ["qf", "scale"], ["w"]),
                       _node("MatMul", ["x", "w" if dequantized else "wf"], ["y"])])
    graph.initializer.extend([_tensor("q", q), _tensor("scale", scale[None, :]),
                              _tensor("wf", q.astype(np.float32))])
    for values, name in ((graph.input, "x"), (graph.output, "y")):
        values.add(name=name).type.tensor_type.elem_type = FLOAT
    return bytes(model.SerializeToString())


def _run(model: bytes, x: np.ndarray) -> np.ndarray:
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(model, sess_options=options, providers=["CPUExecutionProvider"])
    out: np.ndarray = session.run(None, {"x": x})[0]
    return out


def _expected(x: np.ndarray, q: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Each row on 256 levels from min(x, 0) to max(x, 0); integer dot products; times s and the scale."""
    lo = np.minimum(x.min(axis=-1, keepdims=True), 0)
    hi = np.maximum(x.max(axis=-1, keepdims=True), 0)
    s = (hi - lo) / np.float32(255.0)
    zp = np.round(-lo / s)
    xq = np.clip(np.round(x / s) + zp, 0, 255).astype(np.int64)
    return ((xq - zp.astype(np.int64)) @ q.astype(np.int64)).astype(np.float32) * scale * s


@pytest.mark.parametrize("opset", [17, 18])
def test_rows_are_quantized_each_on_its_own_scale(opset: int) -> None:
    rng = np.random.default_rng(7)
    q = rng.integers(-127, 128, size=(K, N)).astype(np.int8)
    scale = rng.uniform(0.001, 0.02, size=N).astype(np.float32)
    x = rng.normal(size=(3, 5, K)).astype(np.float32)
    x[1, 2] *= 1000.0  # one outlier row: a per-tensor scale would flatten every other row
    x[0, 1] = np.abs(x[0, 1])  # a row of positive values only (as after a GELU): all 256 levels above 0
    rewritten = rewrite_int8(_model(q, scale, opset=opset))
    got = _run(rewritten, x)
    assert np.allclose(got, _expected(x, q, scale), rtol=1e-5, atol=1e-5)
    exact = x @ (q.astype(np.float32) * scale)
    assert np.abs(got - exact).max() / np.abs(exact).max() < 0.02
    # a row's result does not depend on its batch
    assert np.array_equal(_run(rewritten, x[:1, :2]), got[:1, :2])
    ops = [n.op_type for n in Model.FromString(rewritten).graph.node]
    assert "MatMulInteger" in ops and "MatMul" not in ops and "Cast" in ops


def test_a_model_without_dequantized_weights_is_refused() -> None:
    q = np.ones((K, N), dtype=np.int8)
    with pytest.raises(ValueError, match="no int8 weight MatMul"):
        rewrite_int8(_model(q, np.ones(N, dtype=np.float32), dequantized=False))


@pytest.mark.parametrize("bad", ["int4", "INT8", "", None, 8])
def test_compute_is_checked(bad: object) -> None:
    with pytest.raises(InvalidInputError, match="compute"):
        MiniLMEmbedder(compute=bad)  # type: ignore[arg-type]


def test_compute_is_kept_and_shown() -> None:
    assert MiniLMEmbedder(compute="int8").compute == "int8"
    assert "compute='fp32'" in repr(MiniLMEmbedder(compute="fp32"))
