"""The wire format of a Cypher statement: its parameters written as Cypher (`params_header`) and
the rows of its compact reply (`rows`).

Both run for every statement of a recall (a dozen statements, thousands of cells), so both avoid a
Python call per value where they can: a list of plain ids is written with two string joins, and a
row's common scalars are read inline.

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

__all__ = ["Literal", "cypher_literal", "params_header", "rows"]


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
