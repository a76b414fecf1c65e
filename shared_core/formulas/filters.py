"""Retrieval filters: a small, validated mapping language compiled to a predicate.

Keys are metadata keys, or reserved keys starting with ``$``:

- ``{"type": "preference"}``: equality; ``{"tags": ["a", "b"]}`` or ``{"tags": {"$in": [...]}}``:
  membership (a list-valued metadata field matches when any of its items is in the set);
  ``{"n": {"$gte": 3, "$lt": 9}}``, ``$ne``, ``$nin``: comparisons.
- ``{"$session": "s1"}`` or a list of sessions; ``{"$kind": "summary"}``;
  ``{"$pinned": True}``; ``{"$time": {"gte": t0, "lt": t1}}`` on the memory's timestamp, with
  datetimes, ISO strings or POSIX seconds.

>>> from shared_core.values.model import MemoryNode
>>> keep = compile_filters({"type": "preference", "$session": ["s1", "s2"]})
>>> keep(MemoryNode(id="1", content="x", namespace="a", session_id="s1", metadata={"type": "preference"}))
True
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..values.clock import to_epoch
from ..values.errors import InvalidInputError
from ..values.model import MemoryNode

__all__ = ["Predicate", "compile_filters"]

Predicate = Callable[[MemoryNode], bool]
_OPS = {"$in", "$nin", "$eq", "$ne", "$gt", "$gte", "$lt", "$lte"}
_RESERVED = {"$session", "$kind", "$pinned", "$time"}


def _as_set(value: Any, key: str) -> frozenset[Any]:
    if isinstance(value, (list, tuple, set, frozenset)):
        try:
            return frozenset(value)
        except TypeError:
            raise InvalidInputError(f"filter {key!r}: values must be hashable, got {value!r}") from None
    raise InvalidInputError(f"filter {key!r}: expected a list of values, got {value!r}")


def _compare(op: str, operand: Any, key: str) -> Callable[[Any], bool]:
    if op in ("$in", "$nin"):
        allowed = _as_set(operand, key)

        def member(v: Any) -> bool:
            if isinstance(v, (list, tuple, set, frozenset)):
                return any(x in allowed for x in v)
            try:
                return v in allowed
            except TypeError:
                return False

        return member if op == "$in" else (lambda v: v is not None and not member(v))
    if op == "$eq":
        return lambda v: v == operand
    if op == "$ne":
        return lambda v: v != operand

    def ordered(v: Any) -> bool:
        if v is None:
            return False
        try:
            if op == "$gt":
                return bool(v > operand)
            if op == "$gte":
                return bool(v >= operand)
            if op == "$lt":
                return bool(v < operand)
            return bool(v <= operand)
        except TypeError:
            return False

    return ordered


def _field_test(key: str, spec: Any) -> Callable[[Any], bool]:
    if isinstance(spec, Mapping):
        unknown = set(spec) - _OPS
        if unknown or not spec:
            raise InvalidInputError(
                f"filter {key!r}: unknown operator(s) {sorted(unknown)}; use {sorted(_OPS)}")
        tests = [_compare(op, operand, key) for op, operand in spec.items()]
        return lambda v: all(t(v) for t in tests)
    if isinstance(spec, (list, tuple, set, frozenset)):
        return _compare("$in", spec, key)
    return _compare("$eq", spec, key)


def compile_filters(filters: Mapping[str, Any] | None) -> Predicate | None:
    """Validate ``filters`` and return a predicate on `MemoryNode` (None when there are none)."""
    if filters is None:
        return None
    if not isinstance(filters, Mapping):
        raise InvalidInputError(f"filters must be a mapping, got {type(filters).__name__}")
    if not filters:
        return None
    tests: list[Predicate] = []
    for key, spec in filters.items():
        if not isinstance(key, str) or not key:
            raise InvalidInputError(f"filter keys must be non-empty strings, got {key!r}")
        if key.startswith("$"):
            if key not in _RESERVED:
                raise InvalidInputError(f"unknown reserved filter {key!r}; use one of {sorted(_RESERVED)}")
            tests.append(_reserved(key, spec))
            continue
        tests.append(_metadata_test(key, _field_test(key, spec)))
    return lambda node: all(t(node) for t in tests)


def _metadata_test(key: str, test: Callable[[Any], bool]) -> Predicate:
    return lambda node: key in node.metadata and test(node.metadata[key])


def _reserved(key: str, spec: Any) -> Predicate:
    if key == "$session":
        sessions = _as_set(spec, key) if isinstance(spec, (list, tuple, set, frozenset)) else {spec}
        return lambda node: node.session_id in sessions
    if key == "$kind":
        kinds = _as_set(spec, key) if isinstance(spec, (list, tuple, set, frozenset)) else {spec}
        return lambda node: node.kind in kinds
    if key == "$pinned":
        if not isinstance(spec, bool):
            raise InvalidInputError(f"filter '$pinned' must be True or False, got {spec!r}")
        return lambda node: node.pinned is spec
    if not isinstance(spec, Mapping) or not spec or set(spec) - {"gt", "gte", "lt", "lte"}:
        raise InvalidInputError(f"filter '$time' must be a mapping of gt/gte/lt/lte to times, got {spec!r}")
    try:
        bounds = {op: to_epoch(value) for op, value in spec.items()}
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"filter '$time': {exc}") from None
    test = _field_test("$time", {"$" + op: v for op, v in bounds.items()})
    return lambda node: test(node.timestamp)
