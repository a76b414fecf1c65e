"""The data the atlas stores and returns: `MemoryNode`, `MemoryEdge`, `ScoredMemory`, `Context`.

All are immutable snapshots: changing a memory goes through the atlas (which records the change
in its event log), never through an attribute. Times are POSIX seconds (UTC); ``.as_dict()``
gives ISO strings for JSON.
"""

from __future__ import annotations

import os
from base64 import urlsafe_b64encode
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from enum import StrEnum
from types import MappingProxyType
from typing import Any

import numpy as np
import numpy.typing as npt

from .errors import InvalidRelationError

__all__ = [
    "NO_METADATA",
    "AnyRelation",
    "Context",
    "CustomRelation",
    "MemoryEdge",
    "MemoryNode",
    "Relation",
    "ScoredMemory",
    "edge_of",
    "evolve",
    "iso",
    "new_ids",
    "node_of",
    "scored_of",
    "with_embedding",
]

#: The metadata of a memory or edge that has none: one shared, read-only empty mapping (an empty
#: dict per object would cost memory, and metadata is never changed in place).
NO_METADATA: Mapping[str, Any] = MappingProxyType({})


def _no_metadata() -> Mapping[str, Any]:
    return NO_METADATA


class Relation(StrEnum):
    """Typed edges between memories."""

    RELATED_TO = "related_to"
    SIMILAR_TO = "similar_to"
    BEFORE = "before"
    AFTER = "after"
    CAUSED_BY = "caused_by"
    PART_OF = "part_of"
    CONTRADICTS = "contradicts"
    SUPERSEDES = "supersedes"
    SUMMARIZES = "summarizes"
    RESPONDS_TO = "responds_to"

    @classmethod
    def parse(cls, value: str | Relation) -> Relation:
        try:
            return cls(value)
        except ValueError:
            known = ", ".join(r.value for r in cls)
            raise InvalidRelationError(f"unknown relation {value!r}; expected one of: {known}") from None


class CustomRelation(str):
    """A relation name an atlas registered (`ElasticMemoryAtlas.register_relation`), typed like a
    `Relation` member: ``.value`` is its name. Made by `shared_core.values.relations.custom_relation`,
    which validates the name.

    >>> CustomRelation("belongs_to").value
    'belongs_to'
    """

    __slots__ = ()

    @property
    def value(self) -> str:
        return str.__str__(self)

    def __repr__(self) -> str:
        return f"CustomRelation({self.value!r})"


#: A relation an edge may hold: a built-in `Relation` or a registered `CustomRelation`.
AnyRelation = Relation | CustomRelation


def new_ids(count: int) -> list[str]:
    """``count`` fresh memory ids: 24 characters of base64url (``A-Z a-z 0-9 - _``), 144 random
    bits each (a uuid4 has 122). Ids are opaque strings; this form is what the atlas makes since
    it replaced 32-character hex (a shorter ``str``; saved atlases keep the ids they were given).
    One ``os.urandom`` call and one encoding for all of them.

    >>> ids = new_ids(3)
    >>> len(ids), {len(i) for i in ids}, len(set(ids))
    (3, {24}, 3)
    """
    text = urlsafe_b64encode(os.urandom(18 * count)).decode("ascii")  # 18 bytes: 24 characters, no padding
    return [text[i:i + 24] for i in range(0, 24 * count, 24)]


def iso(ts: float | None) -> str | None:
    """ISO-8601 UTC text of a POSIX time (None stays None)."""
    return None if ts is None else datetime.fromtimestamp(ts, tz=UTC).isoformat()


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryNode:
    """One memory.

    ``timestamp`` is when the remembered thing happened (it may lie in the past); ``created_at``
    is when the atlas stored it. ``weight`` is the weight at ``last_accessed_at``: the atlas
    decays it lazily from there (see `shared_core.formulas.decay`). ``turn`` is the memory's place in its
    namespace's write order (it never changes); ``accessed_turn`` is the write count at its last
    access, from which decay counted in turns runs. ``kind`` is ``"memory"`` or
    ``"summary"``.
    """

    id: str
    content: str
    namespace: str
    session_id: str | None = None
    embedding: npt.NDArray[np.float32] | None = field(default=None, compare=False, repr=False)
    weight: float = 1.0
    importance: float = 1.0
    timestamp: float = 0.0
    created_at: float = 0.0
    last_accessed_at: float = 0.0
    access_count: int = 0
    turn: int = 0
    accessed_turn: int = 0
    metadata: Mapping[str, Any] = field(default_factory=_no_metadata)
    pinned: bool = False
    expires_at: float | None = None
    valid_from: float = 0.0
    valid_to: float | None = None
    kind: str = "memory"

    @property
    def type(self) -> str | None:
        """The caller's ``metadata["type"]``, if any."""
        value = self.metadata.get("type")
        return None if value is None else str(value)

    def is_current(self, now: float) -> bool:
        """Neither expired nor superseded at ``now``."""
        if self.expires_at is not None and self.expires_at <= now:
            return False
        return self.valid_to is None or self.valid_to > now

    def is_valid_at(self, when: float) -> bool:
        """Whether this version was the valid one at ``when`` (valid time): ``valid_from <= when``,
        not yet superseded (``valid_to``) and not yet expired then. The memory's current version
        answers for today; an older one, superseded later, answers for its own time.

        >>> node = MemoryNode(id="a", content="x", namespace="n", valid_from=10.0, valid_to=20.0)
        >>> node.is_valid_at(5.0), node.is_valid_at(10.0), node.is_valid_at(20.0)
        (False, True, False)
        """
        if self.valid_from > when or (self.valid_to is not None and self.valid_to <= when):
            return False
        return self.expires_at is None or self.expires_at > when

    def as_dict(self, *, embedding: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "embedding":
                if embedding and value is not None:
                    out["embedding"] = [float(x) for x in value]
                continue
            if f.name in {"timestamp", "created_at", "last_accessed_at", "expires_at",
                          "valid_from", "valid_to"}:
                value = iso(value)
            elif f.name == "metadata":
                value = dict(value)
            out[f.name] = value
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryEdge:
    """A typed, weighted link ``source -> target`` (both in one namespace)."""

    source: str
    target: str
    relation: AnyRelation
    strength: float = 1.0
    created_at: float = 0.0
    metadata: Mapping[str, Any] = field(default_factory=_no_metadata)


_new = object.__new__
_set_source, _set_target, _set_relation, _set_strength, _set_created_at, _set_metadata = (
    vars(MemoryEdge)[f.name].__set__ for f in fields(MemoryEdge))


def _node_builders() -> tuple[Callable[..., MemoryNode], Callable[..., MemoryNode],
                              Callable[[MemoryNode, Any], MemoryNode]]:
    """``node_of(**every_field)``, ``evolve(node, **changes)`` and ``with_embedding(node, vector)``,
    generated from `MemoryNode`'s fields (so a new field is never left out): each builds the frozen
    slots object by setting its slots directly, with one line per field. That is the hot path of
    every write and every recall's returned copies, and the unrolled form is faster than the
    dataclass's ``__init__``, ``dataclasses.replace`` or a loop over the slots. Generated code is
    the only way to get the unrolled form without writing the
    19 fields out three times by hand."""
    names = [f.name for f in fields(MemoryNode)]
    setters = {name: vars(MemoryNode)[name].__set__ for name in names}
    scope: dict[str, Any] = {"_new": object.__new__, "_Node": MemoryNode, "_SETTERS": setters}
    scope.update({f"_set_{name}": setter for name, setter in setters.items()})
    source = (
        f"def node_of(*, {', '.join(names)}):\n    n = _new(_Node)\n"
        + "".join(f"    _set_{name}(n, {name})\n" for name in names) + "    return n\n"
        "def evolve(node, /, **changes):\n    n = _new(_Node)\n"
        + "".join(f"    _set_{name}(n, node.{name})\n" for name in names)
        + "    for name, value in changes.items():\n        _SETTERS[name](n, value)\n    return n\n"
        "def with_embedding(node, embedding):\n    n = _new(_Node)\n"
        + "".join(f"    _set_{name}(n, {'embedding' if name == 'embedding' else 'node.' + name})\n"
                  for name in names) + "    return n\n")
    exec(source, scope)  # a fixed source built from the dataclass's own field names
    return scope["node_of"], scope["evolve"], scope["with_embedding"]


_node_of, _evolve, _with_embedding = _node_builders()


#: ``node_of(**every_field)``: `MemoryNode` from trusted values (every field given by keyword,
#: none checked), the write path's builder: the generated function itself, since a wrapper
#: would cost almost as much as the build.
node_of: Callable[..., MemoryNode] = _node_of
node_of.__module__, node_of.__qualname__ = __name__, "node_of"


def evolve(node: MemoryNode, **changes: Any) -> MemoryNode:
    """A copy of ``node`` with ``changes`` (trusted values: the atlas's own updates, such as a
    reinforced weight or the embedding it hands callers; a name that is not a field raises
    ``KeyError``). Sets the slots directly, in under half
    the time of ``dataclasses.replace`` (which rebuilds the keyword arguments and runs
    ``__init__``).

    >>> n = MemoryNode(id="a", content="x", namespace="u", metadata={"k": 1})
    >>> c = evolve(n, weight=2.0, embedding=np.ones(2, dtype=np.float32))
    >>> c.weight, c.embedding.tolist(), c.metadata, n.weight, n.embedding is None
    (2.0, [1.0, 1.0], {'k': 1}, 1.0, True)
    """
    return _evolve(node, **changes)


def with_embedding(node: MemoryNode, embedding: npt.NDArray[np.float32] | None) -> MemoryNode:
    """A copy of ``node`` carrying ``embedding``: what the atlas hands callers (the stored node
    has none; its vector lives in the index).

    >>> with_embedding(MemoryNode(id="a", content="x", namespace="u"), None).id
    'a'
    """
    return _with_embedding(node, embedding)


def edge_of(source: str, target: str, relation: AnyRelation, strength: float, created_at: float,
            metadata: Mapping[str, Any]) -> MemoryEdge:
    """`MemoryEdge` from trusted values, for graph stores that keep edges as rows and build the
    objects on read: it sets the slots directly, which takes half the time of the frozen
    dataclass's ``__init__`` (one ``object.__setattr__`` call per field).

    >>> edge_of("a", "b", Relation.BEFORE, 1.0, 0.0, NO_METADATA) == MemoryEdge(source="a", target="b",
    ...                                                                       relation=Relation.BEFORE)
    True
    """
    edge = _new(MemoryEdge)
    _set_source(edge, source)
    _set_target(edge, target)
    _set_relation(edge, relation)
    _set_strength(edge, strength)
    _set_created_at(edge, created_at)
    _set_metadata(edge, metadata)
    return edge


@dataclass(frozen=True, slots=True)
class ScoredMemory:
    """A retrieval hit: the memory, its final score and the breakdown of that score.

    ``components`` holds each factor (``relevance``, ``weight``, ``recency``, ``session``) and
    each path's raw signal (``vector``, ``keyword``, ``graph``, ``recent``, ``time``); ``paths``
    names the paths that found it. ``other_session`` is set when the memory comes from another
    session of the namespace than the one asked for.
    """

    node: MemoryNode
    score: float
    components: Mapping[str, float] = field(default_factory=dict)
    paths: tuple[str, ...] = ()
    other_session: bool = False

    @property
    def id(self) -> str:
        return self.node.id

    @property
    def content(self) -> str:
        return self.node.content

    def to_metadata(self) -> dict[str, Any]:
        """The flat, JSON-ready metadata that framework adapters attach to a document or node.

        The caller's metadata comes first; the atlas's own keys (``id``, ``score``,
        ``score_breakdown``, ``paths``, ``weight``, ``importance``, ``timestamp``, ``created_at``,
        ``last_accessed_at``, ``access_count``, ``session_id``, ``namespace``, ``other_session``,
        ``kind``) win on a clash, so they can always be trusted.
        """
        node = self.node
        return {
            **dict(node.metadata),
            "id": node.id,
            "score": self.score,
            "score_breakdown": {k: float(v) for k, v in self.components.items()},
            "paths": list(self.paths),
            "weight": node.weight,
            "importance": node.importance,
            "timestamp": iso(node.timestamp),
            "created_at": iso(node.created_at),
            "last_accessed_at": iso(node.last_accessed_at),
            "access_count": node.access_count,
            "session_id": node.session_id,
            "namespace": node.namespace,
            "other_session": self.other_session,
            "kind": node.kind,
        }


_set_hit_node, _set_hit_score, _set_hit_components, _set_hit_paths, _set_hit_other = (
    vars(ScoredMemory)[f.name].__set__ for f in fields(ScoredMemory))


def scored_of(node: MemoryNode, score: float, components: Mapping[str, float], paths: tuple[str, ...],
              other_session: bool) -> ScoredMemory:
    """`ScoredMemory` from trusted values (recall's hits and the copies `retrieve` hands back):
    it sets the slots directly, faster than the frozen dataclass's ``__init__``.

    >>> n = MemoryNode(id="a", content="x", namespace="u")
    >>> scored_of(n, 0.5, {"vector": 0.5}, ("vector",), False) == ScoredMemory(n, 0.5, {"vector": 0.5}, ("vector",))
    True
    """
    hit = _new(ScoredMemory)
    _set_hit_node(hit, node)
    _set_hit_score(hit, score)
    _set_hit_components(hit, components)
    _set_hit_paths(hit, paths)
    _set_hit_other(hit, other_session)
    return hit


@dataclass(frozen=True, slots=True)
class Context:
    """A rendered context block and its accounting.

    ``tokens`` is the exact count of ``text`` by the atlas's token counter and never exceeds the
    budget; ``memories`` are the memories rendered (in rendering order); ``dropped`` those that
    were considered but did not fit.
    """

    text: str
    tokens: int
    memories: tuple[ScoredMemory, ...] = ()
    dropped: tuple[ScoredMemory, ...] = ()
    budget: int = 0
    style: str = "bullet"

    def __str__(self) -> str:
        return self.text

    def _repr_html_(self) -> str:
        from html import escape

        rows = "".join(
            f"<tr><td>{i + 1}</td><td>{escape(m.node.content[:200])}</td><td>{m.score:.3f}</td>"
            f"<td>{escape(', '.join(m.paths))}</td></tr>"
            for i, m in enumerate(self.memories)
        )
        return (
            f"<div><b>Context</b>: {self.tokens}/{self.budget} tokens, {len(self.memories)} "
            f"memories, {len(self.dropped)} dropped, style={escape(self.style)}"
            f"<pre style='white-space:pre-wrap'>{escape(self.text)}</pre>"
            f"<table><tr><th>#</th><th>memory</th><th>score</th><th>paths</th></tr>{rows}</table></div>"
        )
