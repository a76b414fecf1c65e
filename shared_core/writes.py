"""The write path: validating a memory (`build_spec`) and inserting it (`insert_memory`).

Validation happens entirely before the first change, so a bad argument never leaves a trace;
insertion undoes its own partial work if a store fails halfway.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from . import _validate as check
from .backend import Partition
from .config import AtlasConfig
from .embedding import normalize_rows
from .errors import InvalidInputError, InvalidMemoryError
from .model import MemoryEdge, MemoryNode, Relation

__all__ = ["MemorySpec", "build_spec", "insert_memory", "specs_from_items"]

ITEM_FIELDS = frozenset({"content", "namespace", "session_id", "timestamp", "metadata", "importance",
                         "pinned", "ttl", "links_to", "embedding"})


@dataclass(frozen=True, slots=True)
class MemorySpec:
    """A validated memory, ready to insert."""

    content: str
    namespace: str
    session_id: str | None
    timestamp: float | None
    metadata: dict[str, Any]
    importance: float
    pinned: bool
    ttl: float | None
    links: tuple[tuple[str, Relation, float], ...]
    embedding: npt.NDArray[np.float32] | None
    kind: str = "memory"


def build_spec(config: AtlasConfig, dim: int, content: object, *, namespace: object, session_id: object = None,
              timestamp: object = None, metadata: object = None, importance: object = 1.0,
              pinned: object = False, ttl: object = None, links_to: object = (),
              embedding: object = None, kind: str = "memory") -> MemorySpec:
        text = check.content(content, max_chars=config.max_content_chars)
        ns = check.namespace(namespace)
        links: list[tuple[str, Relation, float]] = []
        if isinstance(links_to, (str, bytes)) or not isinstance(links_to, Iterable):
            raise InvalidMemoryError(f"links_to must be a sequence of ids, got {links_to!r}")
        for link in links_to:
            if isinstance(link, str):
                links.append((link, Relation.RELATED_TO, 1.0))
            elif isinstance(link, tuple) and len(link) in (2, 3):
                strength = check.number(link[2], "link strength", minimum=0.0) if len(link) == 3 else 1.0
                links.append((check.node_id(link[0], "links_to id"), Relation.parse(link[1]), strength))
            else:
                raise InvalidMemoryError(f"links_to items must be an id or (id, relation[, strength]), got {link!r}")
        vector = None
        if embedding is not None:
            vector = normalize_rows(embedding, dim=dim)  # type: ignore[arg-type]
            if vector.shape[0] != 1:
                raise InvalidMemoryError(f"embedding must be one vector, got shape {vector.shape}")
            vector = vector[0]
        ttl_value = None if ttl is None else check.number(ttl, "ttl", positive=True)
        return MemorySpec(text, ns, check.session(session_id), check.timestamp(timestamp),
                     check.metadata(metadata), check.number(importance, "importance", minimum=0.0, maximum=1e6),
                     check.flag(pinned, "pinned"), ttl_value if ttl_value is not None else config.default_ttl,
                     tuple(links), vector, kind)


def insert_memory(part: Partition, spec: MemorySpec, vec: npt.NDArray[np.float32], now: float,
                  cfg: AtlasConfig, *, on_rollback: Callable[..., None]) -> MemoryNode:
    """Insert one validated memory into its partition and link it; undo everything on failure.

    Links: ``before`` from the session's previous memory, ``similar_to`` to the ``similar_top``
    closest current memories above ``similar_threshold``, and the caller's ``links_to``.
    """
    part.turn += 1
    node = MemoryNode(
        id=uuid.uuid4().hex, content=spec.content, namespace=spec.namespace,
        session_id=spec.session_id, weight=spec.importance if spec.importance > 0 else cfg.weight_floor,
        importance=spec.importance, timestamp=spec.timestamp if spec.timestamp is not None else now,
        created_at=now, last_accessed_at=now, turn=part.turn, accessed_turn=part.turn,
        metadata=spec.metadata,
        pinned=spec.pinned, expires_at=None if spec.ttl is None else now + spec.ttl,
        valid_from=now, kind=spec.kind,
    )
    similar: list[tuple[str, float]] = []
    if cfg.similar_top > 0:
        for other, sim in part.vectors.search(vec, cfg.similar_top + min(len(part.inactive), 8) + 1):
            if sim >= cfg.similar_threshold and other not in part.inactive and len(similar) < cfg.similar_top:
                similar.append((other, sim))
    previous = part.latest(spec.session_id, 1) if cfg.link_temporal else []
    part.graph.put_node(node)
    try:
        part.vectors.add([node.id], vec[None, :])
        part.keywords.add(node.id, spec.content, session_id=spec.session_id)
        part.track(node.id, spec.session_id, node.timestamp)
        if previous:
            part.graph.put_edge(MemoryEdge(source=previous[0], target=node.id,
                                           relation=Relation.BEFORE, strength=1.0, created_at=now))
        for other, sim in similar:
            part.graph.put_edge(MemoryEdge(source=node.id, target=other, relation=Relation.SIMILAR_TO,
                                           strength=float(sim), created_at=now))
        for target, relation, strength in spec.links:
            part.graph.put_edge(MemoryEdge(source=node.id, target=target, relation=relation,
                                           strength=strength, created_at=now))
    except BaseException:
        on_rollback(part, node, kind=None, reason="rollback")
        part.turn -= 1
        raise
    return node


def specs_from_items(config: AtlasConfig, dim: int, items: object, *, namespace: str,
                     session_id: str | None) -> list[MemorySpec]:
    """Validate the items of `ElasticMemoryAtlas.add_memories` (strings or dicts)."""
    if isinstance(items, (str, bytes)) or not isinstance(items, Sequence):
        raise InvalidInputError(f"items must be a sequence of strings or dicts, got {type(items).__name__}")
    specs: list[MemorySpec] = []
    for i, item in enumerate(items):
        try:
            if isinstance(item, str):
                specs.append(build_spec(config, dim, item, namespace=namespace, session_id=session_id))
            elif isinstance(item, Mapping):
                unknown = set(item) - ITEM_FIELDS
                if unknown:
                    raise InvalidMemoryError(f"unknown field(s) {sorted(unknown)}")
                if "content" not in item:
                    raise InvalidMemoryError("missing 'content'")
                fields: dict[str, Any] = {"namespace": namespace, "session_id": session_id, **item}
                specs.append(build_spec(config, dim, **fields))
            else:
                raise InvalidMemoryError(f"expected a string or a dict, got {type(item).__name__}")
        except InvalidInputError as exc:
            raise type(exc)(f"item {i}: {exc}") from None
    return specs
