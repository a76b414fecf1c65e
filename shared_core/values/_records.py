"""The rules a saved record must meet to be loaded: the write path's own checks, applied to a file.

A save file is untrusted input: `shared_core.engine.persistence` rebuilds every memory, edge and
bookkeeping entry through these functions, which check each field as `add_memory`, `link` and
the config check it on a write (`shared_core.values._validate`): weights and importances finite and not
negative, every time within [`EARLIEST`, `LATEST`], content non-empty text that encodes,
metadata JSON of bounded depth, a known kind, counts that are ints >= 0, and so on. Each raises
`CorruptFileError` naming the record and the rule.

>>> node_from_record({"id": "a", "content": "x", "namespace": "n", "weight": -5}).weight
Traceback (most recent call last):
...
shared_core.values.errors.CorruptFileError: memory 'a': weight must be >= 0.0, got -5
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import MISSING, fields
from typing import Any, TypeVar

from . import _validate as check
from .errors import CorruptFileError, InvalidInputError
from .model import NO_METADATA, AnyRelation, CustomRelation, MemoryEdge, MemoryNode, Relation

__all__ = ["KINDS", "MAX_STATE_DEPTH", "check_edge", "check_lifecycle", "node_from_record", "node_record"]

#: The kinds a stored memory may have (``"working"``: a turn the write filter held back).
KINDS = frozenset({"memory", "summary"})
#: How deep a save file's JSON may nest: the file's own structure (six levels) plus metadata's.
MAX_STATE_DEPTH = check.MAX_DEPTH + 8
_NODE_FIELDS = {f.name: f for f in fields(MemoryNode) if f.name != "embedding"}
_TIMES = ("timestamp", "created_at", "last_accessed_at", "valid_from")
_OPTIONAL_TIMES = ("expires_at", "valid_to")
_COUNTS = ("access_count", "turn", "accessed_turn")
_SHARED_FIELDS = ("namespace", "session_id", "kind", "timestamp", "created_at", "last_accessed_at", "valid_from",
                  "weight", "importance")
T = TypeVar("T")


def _fail(condition: bool, message: str) -> None:
    if not condition:
        raise CorruptFileError(message)


def rule(what: str, test: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``test(*args, **kwargs)``, its `InvalidInputError` turned into `CorruptFileError` about ``what``."""
    try:
        return test(*args, **kwargs)
    except InvalidInputError as exc:
        raise CorruptFileError(f"{what}: {exc}") from None


def node_from_record(record: object, *, kinds: frozenset[str] = KINDS,
                     shared: dict[Any, Any] | None = None) -> MemoryNode:
    """A `MemoryNode` from a saved record (`shared_core.engine.persistence.node_record`), every field
    checked by the write path's rules; `CorruptFileError` otherwise. ``shared`` interns the
    values many memories repeat (one object per distinct string and time, as written ones share)."""
    _fail(isinstance(record, Mapping), f"a memory record is not an object: {record!r:.80}")
    assert isinstance(record, Mapping)
    unknown = set(record) - set(_NODE_FIELDS)
    _fail(not unknown, f"a memory record has unknown fields {sorted(unknown)}")
    what = f"memory {record.get('id')!r:.40}"
    values: dict[str, Any] = {}
    for name, f in _NODE_FIELDS.items():
        if name not in record:
            _fail(f.default is not MISSING or f.default_factory is not MISSING, f"{what} lacks {name!r}")
            continue
        values[name] = record[name]
    values["id"] = rule(what, check.node_id, values["id"], "id")
    values["content"] = rule(what, check.content, values["content"], max_chars=2**62)
    values["namespace"] = rule(what, check.namespace, values["namespace"])
    values["session_id"] = rule(what, check.session, values.get("session_id"))
    for name in ("weight", "importance"):
        if name in values:
            values[name] = rule(what, check.number, values[name], name, minimum=0.0)
    for name in _COUNTS:
        if name in values:
            rule(what, check.count, values[name], name)
    for name in _TIMES:
        if name in values:
            values[name] = rule(what, check.time_value, values[name], name)
    for name in _OPTIONAL_TIMES:
        if values.get(name) is not None:
            values[name] = rule(what, check.time_value, values[name], name)
    if "pinned" in values:
        rule(what, check.flag, values["pinned"], "pinned")
    kind = values.get("kind", "memory")
    _fail(isinstance(kind, str) and kind in kinds,
          f"{what}: unknown kind {kind!r:.40}; expected one of {sorted(kinds)}")
    metadata = rule(what, check.metadata, values.get("metadata"))
    values["metadata"] = metadata or NO_METADATA  # one shared empty mapping, as written memories have
    if shared is not None:
        for name in _SHARED_FIELDS:
            value = values.get(name)
            if value is not None and value != 0:  # (no NaN gets here); 0.0 keeps its sign
                values[name] = shared.setdefault((type(value), value), value)
    return MemoryNode(**values)


def check_edge(record: object, ids: set[str], namespace: str,
               custom: Mapping[str, CustomRelation] | None = None) -> MemoryEdge:
    """A `MemoryEdge` from a saved record whose ends are both among ``ids``, checked as `link`
    checks an edge (a known relation: a built-in or one of ``custom``, the atlas's registered
    names; a strength >= 0, no self-loop, metadata as a memory's)."""
    what = f"namespace {namespace!r}: edge {record!r:.80}"
    _fail(isinstance(record, Mapping) and set(record) == {"source", "target", "relation", "strength", "created_at",
                                                           "metadata"}, f"{what} is malformed")
    assert isinstance(record, Mapping)
    source, target = record["source"], record["target"]
    _fail(source in ids and target in ids, f"namespace {namespace!r}: an edge points outside it")
    _fail(source != target, f"{what} links a memory to itself")
    name = record["relation"]
    relation: AnyRelation = custom[name] if custom and isinstance(name, str) and name in custom \
        else rule(what, Relation.parse, name)
    strength = rule(what, check.number, record["strength"], "strength", minimum=0.0)
    created_at = rule(what, check.time_value, record["created_at"], "created_at")
    metadata = rule(what, check.metadata, record["metadata"])
    return MemoryEdge(source=source, target=target, relation=relation, strength=strength, created_at=created_at,
                      metadata=metadata or NO_METADATA)


def check_lifecycle(state: object) -> list[MemoryNode]:
    """Check the lifecycle's saved state (`shared_core.engine.lifecycle.manager.Lifecycle.state`); returns the
    held turns' nodes."""
    _fail(isinstance(state, Mapping) and {"held", "dirty", "since_compress", "since_prune"} <= set(state),
          "the lifecycle state is malformed")
    assert isinstance(state, Mapping)
    held = state["held"]
    _fail(isinstance(held, list), "the held turns are not a list")
    nodes = [node_from_record(r, kinds=frozenset({"working"})) for r in held]
    dirty = state["dirty"]
    _fail(isinstance(dirty, Mapping) and all(
        isinstance(ns, str) and (d is None or (isinstance(d, list) and all(isinstance(i, str) for i in d)))
        for ns, d in dirty.items()), "the lifecycle's dirty sets are malformed")
    since = state["since_compress"]
    _fail(isinstance(since, Mapping) and all(isinstance(ns, str) for ns in since), "since_compress is malformed")
    for n in since.values():
        rule("since_compress", check.count, n, "since_compress")
    rule("since_prune", check.count, state["since_prune"], "since_prune")
    indexed = state.get("indexed", {})  # format version 1 only: derived since (`capacity.node_bytes`)
    _fail(isinstance(indexed, Mapping), "the keyword texts are malformed")
    for node_id, text in indexed.items():
        _fail(isinstance(node_id, str), f"a keyword text's id is not a string: {node_id!r:.40}")
        rule(f"the keyword text of {node_id!r:.40}", check.content, text, max_chars=2**62)
    return nodes




def node_record(node: MemoryNode) -> dict[str, Any]:
    """Every field of a node but its embedding, JSON-ready (times stay POSIX floats)."""
    record = {name: getattr(node, name) for name in _NODE_FIELDS}
    record["metadata"] = dict(node.metadata)
    return record
