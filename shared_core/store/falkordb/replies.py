"""The wire format of a Cypher statement: its parameters written as Cypher (`params_header`), the
command that sends it (`query_command`) and the rows of its reply (`rows`).

All run for every statement of a recall (a dozen statements, thousands of cells), so they avoid
a Python call per value where they can: a list of plain ids is written with two string joins,
and the statements that read many rows of scalars (nodes, edges, a walk's hop, the cosines of
given memories, the weight's writes with their nodes: `SCALAR_COLUMNS`)
are read in FalkorDB's verbose format rather than its compact one. A compact reply gives each
value as a ``[type, value]`` pair, which costs the reply parser (hiredis) about eight times the
plain value of the verbose format; a verbose reply gives strings, integers and nulls as they
are, and doubles and booleans as text (the same digits as the compact format), which the
column's declared kind turns back into a float or a bool. Lists and maps (which the verbose
format writes as lossy text) stay with the compact format.

>>> params_header({"ids": ["a", 'b"c'], "k": 3, "v": Literal("[0.5]")})
'CYPHER ids=["a","b\\\\"c"] k=3 v=[0.5] '
>>> rows([[[1, "a"], [1, "b"]], [[[2, "x"], [5, "0.5"]]], ["stats"]])
[['x', 0.5]]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ...values.errors import BackendError
from . import cypher as q

__all__ = ["SCALAR_COLUMNS", "SCALAR_PREFIXES", "Literal", "Scalars", "cypher_literal", "params_header",
           "query_command", "reply_rows", "rows", "scalars"]


class Literal(str):
    """A query parameter already written as Cypher (a vector literal), passed through verbatim."""

    __slots__ = ()


def _quoted(text: str) -> str:
    if "\\" in text or '"' in text:
        text = text.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{text}"'


def cypher_literal(value: Any) -> str:
    """``value`` written as a Cypher literal, exactly as `falkordb.helpers.stringify_param_value`
    writes it (strings double-quoted with ``\\`` and ``"`` escaped, None as ``null``, lists in
    brackets, maps with back-quoted keys, anything else as `str`); a list of strings without a
    quote or a backslash, a recall's usual parameter, in two joins instead of a call per item.

    >>> cypher_literal(["a", "b"]), cypher_literal([1, None, 'x\\\\y']), cypher_literal({"k": True})
    ('["a","b"]', '[1,null,"x\\\\\\\\y"]', '{`k`:True}')
    """
    if isinstance(value, str):
        return _quoted(value)
    if value is None:
        return "null"
    if isinstance(value, (list, tuple)):
        try:
            flat = "".join(value)  # every item a string (TypeError otherwise)
        except TypeError:
            return "[" + ",".join(map(cypher_literal, value)) + "]"
        if not value:
            return "[]"
        if "\\" in flat or '"' in flat:
            return "[" + ",".join(map(_quoted, value)) + "]"
        return '["' + '","'.join(value) + '"]'
    if isinstance(value, dict):
        from falkordb.helpers import stringify_param_value

        return str(stringify_param_value(value))
    return str(value)


def params_header(params: Mapping[str, Any]) -> str:
    """The ``CYPHER name=value ...`` header that passes ``params`` to a statement (a `Literal`
    verbatim, anything else through `cypher_literal`); empty without parameters."""
    if not params:
        return ""
    items = " ".join(f"{k}={v if isinstance(v, Literal) else cypher_literal(v)}" for k, v in params.items())
    return f"CYPHER {items} "


def _value(kind: int, value: Any) -> Any:
    """One value of a compact result set, of type ``kind`` (scalars, arrays, maps, float32 vectors)."""
    if kind == 2:
        return value
    if kind == 5:
        return float(value)
    if kind == 3:
        return int(value)
    if kind == 1:
        return None
    if kind == 4:
        return value == "true"
    if kind == 6:
        return _cells(value)
    if kind == 12:  # a vector's elements as decimal strings: read as doubles, as float() would
        return np.array(value, dtype=np.bytes_).astype(np.float64).astype(np.float32)
    if kind == 10:
        return {str(value[i]): _value(*value[i + 1]) for i in range(0, len(value), 2)}
    raise BackendError(f"unexpected value of type {kind} in a FalkorDB result (the backend reads no graph objects)")


def _cells(cells: Sequence[Sequence[Any]]) -> list[Any]:
    """The values of ``[type, value]`` cells: the common scalars (string, double, integer, null)
    inline, the rest through `_value` (a recall reads thousands of cells: a call per cell shows)."""
    return [v if k == 2 else float(v) if k == 5 else int(v) if k == 3 else None if k == 1 else _value(k, v)
            for k, v in cells]


def rows(response: list[Any]) -> list[list[Any]]:
    """The rows of a compact ``GRAPH.QUERY`` reply (``[header, rows, stats]``, or ``[stats]``).

    Parsed here rather than by the client's `QueryResult`, which builds an object per value: the
    backend only ever returns scalars, and a recall reads thousands of them.

    >>> rows([[[1, "a"], [1, "b"]], [[[2, "x"], [5, "0.5"]], [[1, None], [6, [[3, 7], [4, "true"]]]]], ["stats"]])
    [['x', 0.5], [None, [7, True]]]
    """
    if len(response) < 3:
        return []
    return [_cells(row) for row in response[1]]


class Scalars:
    """The columns of a statement that returns only scalars: which are doubles, which booleans
    (the others are strings, integers or null, which the verbose format gives as they are), and
    which are doubles left as their text (``F``): a node's, which `graph.node_from_row` reads with
    `float` when the node is made (most nodes a recall reads ahead never are).

    >>> Scalars("-fbF").doubles, Scalars("-fbF").flags, Scalars("-fbF").texts
    ((1,), (2,), (3,))
    """

    __slots__ = ("doubles", "flags", "kinds", "texts")

    def __init__(self, kinds: str) -> None:
        self.kinds = kinds  # one letter a column: f a double, F a double as text, b a boolean, - anything else
        self.doubles = tuple(i for i, k in enumerate(kinds) if k == "f")
        self.flags = tuple(i for i, k in enumerate(kinds) if k == "b")
        self.texts = tuple(i for i, k in enumerate(kinds) if k == "F")

    def rows(self, response: list[Any]) -> list[list[Any]]:
        """The rows of a verbose reply (``[header, rows, stats]``, or ``[stats]``), each double
        (but ``F`` columns) and boolean read back from its text as the compact format gives it.

        >>> Scalars("-fb-").rows([["a", "b", "c", "d"], [["x", "0.5", "true", 3], [None, None, "false", None]], []])
        [['x', 0.5, True, 3], [None, None, False, None]]
        """
        if len(response) < 3:
            return []
        found: list[list[Any]] = response[1]
        if found and len(found[0]) != len(self.kinds):
            raise BackendError(f"a FalkorDB statement returned {len(found[0])} columns where its declared kinds "
                               f"{self.kinds!r} name {len(self.kinds)} ({response[0]!r})")
        doubles, flags = self.doubles, self.flags
        for row in found:
            for i in doubles:
                value = row[i]
                if value.__class__ is str:
                    row[i] = float(value)
            for i in flags:
                value = row[i]
                if value.__class__ is str:
                    row[i] = value == "true"
        return found


def _node_kinds() -> str:
    """`cypher.NODE_COLUMNS`: the plain fields, each time field as two doubles, the superseded
    flag; the doubles left as text (``F``), which `graph.node_from_row` reads (`float` of the
    text gives the double the compact format would)."""
    kinds = {"weight": "F", "importance": "F", "pinned": "b"}
    plain = [kinds.get(f, "-") for f in q.NODE_FIELDS if f not in q.TIME_FIELDS]
    return "".join(plain) + "FF" * len(q.TIME_FIELDS) + "b"


_EDGE = "---f--ff"  # `cypher.EDGE_COLUMNS`: source, target, type, strength, metadata, seq, created_at (two)

#: The statements read in the verbose format, with their columns' kinds (each checked against the
#: compact format over a real server in ``tests/falkordb/test_replies.py``).
SCALAR_COLUMNS: dict[str, Scalars] = {
    q.GET_NODE: Scalars(_node_kinds()),
    q.NODES: Scalars(_node_kinds()),
    q.NODES_AMONG: Scalars(_node_kinds()),
    q.EDGES: Scalars(_EDGE),
    q.EDGES_AMONG: Scalars("-" + _EDGE),
    q.WALK_HOP: Scalars("---f-b"),  # id, other, type, strength, seq, outgoing
    q.WALK_HOP_NODES: Scalars("--f-b" + _node_kinds()),  # id, type, strength, seq, outgoing, the other's node
    q.WALK_HOP_NODES_TYPED: Scalars("--f-b" + _node_kinds()),
    # ..., whether the other end is a backchannel, then one of its own edges: far end, type, strength, seq, outgoing
    q.WALK_HOP_THROUGH: Scalars("---f-bb--f-b"),
    # ..., the other's flag, one of its own edges (type, strength, seq, outgoing) and the far end's node
    q.WALK_HOP_NODES_THROUGH: Scalars("--f-b" + _node_kinds() + "b-f-b" + _node_kinds()),
    q.WALK_HOP_NODES_TYPED_THROUGH: Scalars("--f-b" + _node_kinds() + "b-f-b" + _node_kinds()),
    q.VECTOR_AMONG: Scalars("-f"),  # id, cosine distance
    # the weight's writes (a recall's reinforcement, a fade): the node, and for a batch its raw vector
    # unless the caller reads no vector next
    **{q.rescale(unit, model, reinforce=r): Scalars(_node_kinds())
       for unit in q.DECAY_UNITS for model in q.WEIGHT_MODELS for r in (True, False)},
    **{q.batch_rescale(unit, model, reinforce=r, vectors=v): Scalars(_node_kinds() + ("-" if v else ""))
       for unit in q.DECAY_UNITS for model in q.WEIGHT_MODELS for r in (True, False) for v in (True, False)},
}
#: Statements made per relationship type, read in the verbose format too: each one's beginning
#: (checked in ``tests/falkordb/test_replies.py`` as `SCALAR_COLUMNS`).
SCALAR_PREFIXES: tuple[tuple[str, Scalars], ...] = (
    (q.WALK_HOP_NODES_OF, SCALAR_COLUMNS[q.WALK_HOP_NODES_TYPED]),
    (q.WALK_HOP_NODES_THROUGH_OF, SCALAR_COLUMNS[q.WALK_HOP_NODES_TYPED_THROUGH]),
)


def scalars(query: str) -> Scalars | None:
    """The verbose format's columns of ``query`` (`SCALAR_COLUMNS`, `SCALAR_PREFIXES`), or None: compact.

    >>> scalars(q.walk_hop_nodes_of("BEFORE")) is scalars(q.WALK_HOP_NODES_TYPED), scalars("RETURN 1")
    (True, None)
    """
    found = SCALAR_COLUMNS.get(query)
    if found is None:
        for head, kinds in SCALAR_PREFIXES:
            if query.startswith(head):
                return kinds
    return found


def query_command(key: str, query: str, params: Mapping[str, Any], *, write: bool = False) -> list[str]:
    """The ``GRAPH.QUERY`` (``GRAPH.RO_QUERY`` unless ``write``) of ``query`` on graph ``key``:
    verbose for the statements of `SCALAR_COLUMNS`, compact for the others."""
    out = ["GRAPH.QUERY" if write else "GRAPH.RO_QUERY", key, params_header(params) + query]
    if scalars(query) is None:
        out.append("--compact")
    return out


def reply_rows(query: str, response: list[Any]) -> list[list[Any]]:
    """The rows of the reply to `command` ``query``."""
    kinds = scalars(query)
    return rows(response) if kinds is None else kinds.rows(response)
