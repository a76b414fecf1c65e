"""The log's records: one atomic write of the atlas each, as state-setting operations.

A record holds JSON operations and the float32 rows they refer to::

    <json length:u32><json: {"ops": [...]}><rows: float32, row-major>

Operations (each sets a final value, so replaying a record twice, or over a store that already
holds part of it, gives the same state — which makes checkpoints crash-safe):

- ``["n", ns, record, row]``: memory ``record["id"]`` is ``record`` (`node_record` plus
  ``_seq``, its place in its session's order; ``_inactive``; ``_chat``, whether it is a
  backchannel (`GraphStore.mark_chatter`; a record written before the flag lacks it: computed
  when its namespace loads); ``_kw``, its keyword text when it is
  not the one `shared_core.formulas.subqueries.keyword_text` derives from the record; ``_ent``,
  the entity keys it mentions, when any); ``row`` is its embedding's row, or -1 when the
  embedding did not change;
- ``["d", ns, id]``: the memory and its out-edges are gone;
- ``["e", ns, source, edges]``: the out-edges of ``source`` are exactly ``edges``, each
  ``[target, relation, strength, created_at, metadata]``;
- ``["t", ns, turn]``: the namespace's write counter;
- ``["x", ns]``: the namespace is dropped.

>>> import numpy as np
>>> payload = encode([["t", "alice", 3]], np.zeros((0, 2), np.float32))
>>> decode(payload, 2)[0]
[['t', 'alice', 3]]
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from ...values.errors import CorruptFileError

__all__ = ["NamespaceState", "decode", "encode", "replay"]

_LEN = struct.Struct("<I")
Op = list[Any]


def encode(ops: list[Op], rows: npt.NDArray[np.float32]) -> bytes:
    body = json.dumps({"ops": ops}, separators=(",", ":"), allow_nan=False).encode("utf-8")
    return _LEN.pack(len(body)) + body + np.ascontiguousarray(rows, dtype="<f4").tobytes()


def decode(payload: bytes, dim: int) -> tuple[list[Op], npt.NDArray[np.float32]]:
    """The operations and rows of a record; `CorruptFileError` if it does not parse."""
    try:
        (length,) = _LEN.unpack_from(payload, 0)
        ops = json.loads(payload[_LEN.size:_LEN.size + length])["ops"]
        raw = payload[_LEN.size + length:]
        if len(raw) % (4 * dim):
            raise ValueError(f"{len(raw)} bytes of rows is not a multiple of dimension {dim}")
        rows = np.frombuffer(raw, dtype="<f4").reshape(-1, dim).astype(np.float32)
        if not isinstance(ops, list):
            raise ValueError("ops is not a list")
    except (ValueError, KeyError, TypeError, struct.error) as exc:
        raise CorruptFileError(f"a log record does not parse: {exc}") from None
    return ops, rows


@dataclass(slots=True)
class NamespaceState:
    """A namespace as plain data: records and embeddings by id, out-edges by source, the counter."""

    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    vectors: dict[str, npt.NDArray[np.float32]] = field(default_factory=dict)
    edges: dict[str, list[Any]] = field(default_factory=dict)  # rows: lists (the log) or tuples (the store)
    turn: int = 0


def replay(states: dict[str, NamespaceState], ops: list[Op], rows: npt.NDArray[np.float32]) -> None:
    """Apply one record's operations to ``states`` (namespace -> state), in order."""
    try:
        for op in ops:
            kind, ns = op[0], op[1]
            if kind == "x":
                states.pop(ns, None)
                continue
            state = states.get(ns)
            if state is None:
                state = states[ns] = NamespaceState()
            if kind == "n":
                record, row = op[2], op[3]
                state.nodes[record["id"]] = record
                if row >= 0:
                    state.vectors[record["id"]] = rows[row]
            elif kind == "d":
                state.nodes.pop(op[2], None)
                state.vectors.pop(op[2], None)
                state.edges.pop(op[2], None)
            elif kind == "e":
                if op[3]:
                    state.edges[op[2]] = op[3]
                else:
                    state.edges.pop(op[2], None)
            elif kind == "t":
                state.turn = int(op[2])
            else:
                raise ValueError(f"unknown operation {kind!r}")
    except (IndexError, KeyError, TypeError, ValueError) as exc:
        raise CorruptFileError(f"a log record holds a malformed operation: {exc!r:.200}") from None
