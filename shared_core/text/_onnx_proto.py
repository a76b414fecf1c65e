"""The few fields of ONNX's protobuf schema that the int8 graph rewrite reads and writes.

A model is parsed with `google.protobuf` (a dependency of onnxruntime) against a schema that
declares only these fields; every other field of the file (value infos, metadata, attributes'
other kinds, ...) is kept as an unknown field and written back byte for byte. This spares the core
the ``onnx`` package (see benchmarks/README.md, embedder) for one graph edit at load time. The field numbers
are those of ``onnx/onnx.proto`` (stable since ONNX 1.0).

>>> tensor = Tensor(name="w", dims=[2], data_type=FLOAT, raw_data=b"\\x00" * 8)
>>> Tensor.FromString(tensor.SerializeToString()).dims[:]
[2]
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

__all__ = ["FLOAT", "INT", "INT8", "INT32", "INT64", "INTS", "UINT8", "Attribute", "Model", "Node", "Tensor",
           "ValueInfo"]

FLOAT, UINT8, INT8, INT32, INT64 = 1, 2, 3, 6, 7  # TensorProto.DataType
INT, INTS = 2, 7  # AttributeProto.AttributeType

_F = descriptor_pb2.FieldDescriptorProto
_SCHEMA: dict[str, list[tuple[str, int, int, int, str]]] = {  # name, number, type, label, message type
    "Model": [("ir_version", 1, _F.TYPE_INT64, _F.LABEL_OPTIONAL, ""),
              ("graph", 7, _F.TYPE_MESSAGE, _F.LABEL_OPTIONAL, "Graph"),
              ("opset_import", 8, _F.TYPE_MESSAGE, _F.LABEL_REPEATED, "OpsetId")],
    "OpsetId": [("domain", 1, _F.TYPE_STRING, _F.LABEL_OPTIONAL, ""),
                ("version", 2, _F.TYPE_INT64, _F.LABEL_OPTIONAL, "")],
    "Graph": [("node", 1, _F.TYPE_MESSAGE, _F.LABEL_REPEATED, "Node"),
              ("name", 2, _F.TYPE_STRING, _F.LABEL_OPTIONAL, ""),
              ("initializer", 5, _F.TYPE_MESSAGE, _F.LABEL_REPEATED, "Tensor"),
              ("input", 11, _F.TYPE_MESSAGE, _F.LABEL_REPEATED, "ValueInfo"),
              ("output", 12, _F.TYPE_MESSAGE, _F.LABEL_REPEATED, "ValueInfo")],
    "ValueInfo": [("name", 1, _F.TYPE_STRING, _F.LABEL_OPTIONAL, ""),
                  ("type", 2, _F.TYPE_MESSAGE, _F.LABEL_OPTIONAL, "Type")],
    "Type": [("tensor_type", 1, _F.TYPE_MESSAGE, _F.LABEL_OPTIONAL, "TensorType")],
    "TensorType": [("elem_type", 1, _F.TYPE_INT32, _F.LABEL_OPTIONAL, "")],
    "Node": [("input", 1, _F.TYPE_STRING, _F.LABEL_REPEATED, ""),
             ("output", 2, _F.TYPE_STRING, _F.LABEL_REPEATED, ""),
             ("name", 3, _F.TYPE_STRING, _F.LABEL_OPTIONAL, ""),
             ("op_type", 4, _F.TYPE_STRING, _F.LABEL_OPTIONAL, ""),
             ("attribute", 5, _F.TYPE_MESSAGE, _F.LABEL_REPEATED, "Attribute"),
             ("domain", 7, _F.TYPE_STRING, _F.LABEL_OPTIONAL, "")],
    "Attribute": [("name", 1, _F.TYPE_STRING, _F.LABEL_OPTIONAL, ""),
                  ("i", 3, _F.TYPE_INT64, _F.LABEL_OPTIONAL, ""),
                  ("ints", 8, _F.TYPE_INT64, _F.LABEL_REPEATED, ""),
                  ("type", 20, _F.TYPE_INT32, _F.LABEL_OPTIONAL, "")],
    "Tensor": [("dims", 1, _F.TYPE_INT64, _F.LABEL_REPEATED, ""),
               ("data_type", 2, _F.TYPE_INT32, _F.LABEL_OPTIONAL, ""),
               ("name", 8, _F.TYPE_STRING, _F.LABEL_OPTIONAL, ""),
               ("raw_data", 9, _F.TYPE_BYTES, _F.LABEL_OPTIONAL, ""),
               ("data_location", 14, _F.TYPE_INT32, _F.LABEL_OPTIONAL, "")],
}


def _classes() -> dict[str, Any]:
    file = descriptor_pb2.FileDescriptorProto(name="shared_core_onnx_subset.proto", package="shared_core_onnx",
                                              syntax="proto2")
    for message, fields in _SCHEMA.items():
        proto = file.message_type.add(name=message)
        for name, number, kind, label, type_name in fields:
            field = proto.field.add(name=name, number=number, type=kind, label=label)
            if type_name:
                field.type_name = f".shared_core_onnx.{type_name}"
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return {m: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"shared_core_onnx.{m}"))
            for m in _SCHEMA}


_CLASSES = _classes()
Model: Any = _CLASSES["Model"]
Node: Any = _CLASSES["Node"]
Tensor: Any = _CLASSES["Tensor"]
Attribute: Any = _CLASSES["Attribute"]
ValueInfo: Any = _CLASSES["ValueInfo"]
