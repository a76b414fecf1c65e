"""The write path: validating memories (`build_spec`) and inserting them (`insert_memories`).

Validation happens entirely before the first change, so a bad argument never leaves a trace;
insertion undoes its own partial work if a store fails halfway. A batch is inserted with one
batched similarity search and one keyword transaction per chunk of 1,024 memories, and links
exactly as the same memories inserted one at a time would be (with an exact vector index). The
keyword index gets each memory's `keyword_text` (a speaker stored only in the metadata labels
it, as the embedder reads it); the stored content is the caller's.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping, Sequence
from types import MappingProxyType
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from ..formulas.chatter import contentless
from ..formulas.subqueries import keyword_text
from ..store.collector import collector_paused
from ..store.contract import Backend, Partition, WriteBatch
from ..store.memory._ints import number
from ..text.embedding import normalize_rows
from ..text.entities import entity_keys
from ..values import _validate as check
from ..values.config import AtlasConfig
from ..values.errors import InvalidInputError, InvalidMemoryError
from ..values.model import MemoryNode, Relation, new_ids, node_of, with_embedding

__all__ = ["MemorySpec", "build_spec", "collector_paused", "entity_keys", "insert_batches", "insert_memories",
           "insert_memory", "returned_nodes", "specs_from_items"]

Mentions = Sequence[Sequence[str]]

ITEM_FIELDS = frozenset({"content", "namespace", "session_id", "timestamp", "metadata", "importance",
                         "pinned", "ttl", "links_to", "embedding", "keep", "valid_from"})
_SHORT_FIELDS = frozenset({"content", "session_id"})


class MemorySpec(NamedTuple):
    """A validated memory, ready to insert. (A named tuple, not a frozen dataclass: building one
    is three times faster, which counts at 20,000 memories per second.)"""

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
    keep: bool = False  # the caller stated intent (keep=True or an explicit importance): the write filter passes it
    valid_from: float | None = None


def build_spec(config: AtlasConfig, dim: int, content: object, *, namespace: object, session_id: object = None,
              timestamp: object = None, metadata: object = None, importance: object = None,
              pinned: object = False, ttl: object = None, links_to: object = (),
              embedding: object = None, kind: str = "memory", keep: object = False,
              valid_from: object = None) -> MemorySpec:
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
        ttl_value = check.ttl(ttl)
        weight = 1.0 if importance is None else check.number(importance, "importance", minimum=0.0, maximum=1e6)
        return MemorySpec(text, ns, check.session(session_id), check.timestamp(timestamp),
                     check.metadata(metadata), weight,
                     check.flag(pinned, "pinned"), ttl_value if ttl_value is not None else config.default_ttl,
                     tuple(links), vector, kind, check.flag(keep, "keep") or importance is not None,
                     check.timestamp(valid_from, "valid_from"))


def insert_memory(part: Partition, spec: MemorySpec, vec: npt.NDArray[np.float32], now: float,
                  cfg: AtlasConfig, *, on_rollback: Callable[..., None], mentions: Mentions | None = None
                  ) -> MemoryNode:
    """Insert one validated memory into its partition and link it; undo everything on failure.

    Links: ``before`` from the session's previous memory, ``similar_to`` to the ``similar_top``
    closest current memories above ``similar_threshold``, and the caller's ``links_to``.
    """
    check_expiry([spec], now)
    return insert_memories(part, [spec], vec[None, :], now, cfg, on_rollback=on_rollback, mentions=mentions)[0]


def insert_memories(part: Partition, specs: Sequence[MemorySpec], vecs: npt.NDArray[np.float32], now: float,
                    cfg: AtlasConfig, *, on_rollback: Callable[..., None], mentions: Mentions | None = None
                    ) -> list[MemoryNode]:
    """Insert a batch of memories into one partition, linked as if inserted one by one; all or
    nothing. (`insert_batches` and `insert_memory` check the specs' expiry times first.)

    The batch goes in by chunks of `CHUNK` rows: each chunk's ``similar_to`` candidates come from
    one batched search of the partition (which holds the earlier chunks) plus one product of the
    chunk with itself (the earlier rows of the chunk), and its text goes into the keyword index in
    one transaction. ``mentions`` (each memory's entity keys, see `entity_keys`; extracted here
    when None and ``cfg.entity_extraction`` is on) go into the partition's `EntityIndex` after
    each chunk's write. If any store fails, every memory of the batch is removed again (its
    mentions with it) and the partition's write counter restored.
    """
    if mentions is None:
        mentions = entity_keys([spec.content for spec in specs], cfg)
    done: list[MemoryNode] = []
    first_turn: int | None = None  # the first turn the batch's chunks reserved
    try:
        with collector_paused():
            for start in range(0, len(specs), CHUNK):
                chunk = specs[start:start + CHUNK]
                nodes = _insert_chunk(part, chunk, vecs[start:start + len(chunk)], now, cfg, done,
                                      None if mentions is None else mentions[start:start + len(chunk)])
                if first_turn is None and nodes:
                    first_turn = nodes[0].turn
    except BaseException:
        for node in reversed(done):
            on_rollback(part, node, kind=None, reason="rollback")
        if first_turn is not None:  # a failed `write_batch` gave its own turns back
            part.turn = first_turn - 1
        raise
    return done


def insert_batches(backend: Backend, specs: Sequence[MemorySpec], vecs: Sequence[npt.NDArray[np.float32]],
                   now: float, cfg: AtlasConfig, *, on_rollback: Callable[..., None],
                   mentions: Mentions | None = None) -> Iterator[tuple[Partition, list[MemoryNode]]]:
    """`insert_memories` for each run of consecutive specs of one namespace, yielding each
    partition with its new nodes as soon as they are in (so the caller can undo earlier runs if
    a later one fails). Every spec's expiry time is checked before the first insert."""
    check_expiry(specs, now)
    start = 0
    while start < len(specs):
        ns = specs[start].namespace
        end = start + 1
        while end < len(specs) and specs[end].namespace == ns:
            end += 1
        part = backend.partition(ns, create=True)
        assert part is not None
        matrix = np.array(vecs[start:end], dtype=np.float32)  # (faster than np.stack)
        yield part, insert_memories(part, specs[start:end], matrix, now, cfg, on_rollback=on_rollback,
                                    mentions=None if mentions is None else mentions[start:end])
        start = end


def check_expiry(specs: Sequence[MemorySpec], now: float) -> None:
    """`InvalidMemoryError` if a spec's ``ttl`` would make it expire after the latest storable
    time (`shared_core.values.clock.LATEST`), which only the write's ``now`` can tell."""
    for i, spec in enumerate(specs):
        if spec.ttl is not None:
            try:
                check.expiry(now, spec.ttl)
            except InvalidMemoryError as exc:
                raise InvalidMemoryError(f"item {i}: {exc}" if len(specs) > 1 else str(exc)) from None


CHUNK = 1024
# Memory per node: a memory or an automatic edge without metadata shares one immutable empty
# mapping (no empty dict per node), and session ids are interned (one string per session,
# not one per memory, when callers build them per request).
_NO_METADATA: Mapping[str, Any] = MappingProxyType({})


def returned_nodes(written: Sequence[tuple[Partition, MemoryNode]], vectors: Sequence[npt.NDArray[np.float32]],
                   where: MutableMapping[str, str]) -> list[MemoryNode]:
    """What a write hands back: each written node still in the atlas (``where``), as stored now,
    carrying its row of the batch (the stored vector, with no read back from the index)."""
    out = []
    for (part, node), vec in zip(written, vectors, strict=True):
        if node.id in where:
            stored = part.graph.get_node(node.id)
            out.append(with_embedding(node if stored is None else stored, vec))
    return out


def _insert_chunk(part: Partition, specs: Sequence[MemorySpec], vecs: npt.NDArray[np.float32], now: float,
                  cfg: AtlasConfig, done: list[MemoryNode], mentions: Mentions | None) -> list[MemoryNode]:
    """Insert one chunk and append its nodes to ``done`` (also when the write fails: the caller
    removes what it may have stored); the partition reserves the chunk's turns
    (`Partition.write_batch`)."""
    fresh_ids = new_ids(len(specs))
    weight_floor, namespace, intern, new_node = cfg.weight_floor, part.namespace, sys.intern, node_of
    sessions = [spec.session_id if spec.session_id is None else intern(spec.session_id) for spec in specs]

    def build(first_turn: int) -> list[MemoryNode]:
        nodes: list[MemoryNode] = []
        for j, spec in enumerate(specs):
            turn = number(first_turn + j)  # one shared int object (see shared_core.store.memory._ints)
            nodes.append(new_node(id=fresh_ids[j], content=spec.content, namespace=namespace, session_id=sessions[j],
                                  embedding=None, weight=spec.importance if spec.importance > 0 else weight_floor,
                                  importance=spec.importance,
                                  timestamp=spec.timestamp if spec.timestamp is not None else now, created_at=now,
                                  last_accessed_at=now, access_count=0, turn=turn, accessed_turn=turn,
                                  metadata=spec.metadata or _NO_METADATA, pinned=spec.pinned,
                                  expires_at=None if spec.ttl is None else now + spec.ttl,
                                  valid_from=now if spec.valid_from is None else spec.valid_from, valid_to=None,
                                  kind=spec.kind))
        return nodes

    try:
        nodes = part.write_batch(WriteBatch(build=build, vectors=vecs, similar_top=cfg.similar_top,
                                            min_similarity=cfg.similar_threshold, link_temporal=cfg.link_temporal,
                                            links=[spec.links for spec in specs], created_at=now,
                                            keyword_texts=[keyword_text(spec.content, spec.metadata)
                                                           for spec in specs],
                                            chatter=[contentless(spec.content, spec.metadata, cached=False)
                                                     for spec in specs]))
    except BaseException:
        done.extend(build(0))  # the ids the failed write may have stored part of
        raise
    done.extend(nodes)  # from here on a failure must undo these too
    if mentions is not None:
        part.entities.add_many([(node.id, keys) for node, keys in zip(nodes, mentions, strict=True) if keys])
    return nodes


def specs_from_items(config: AtlasConfig, dim: int, items: object, *, namespace: str,
                     session_id: str | None) -> list[MemorySpec]:
    """Validate the items of `ElasticMemoryAtlas.add_memories` (strings or dicts).

    A string, or a dict of only ``content`` and ``session_id``, takes a short path with the same
    checks (the default namespace is checked once); anything else goes through `build_spec`.
    """
    if isinstance(items, (str, bytes)) or not isinstance(items, Sequence):
        raise InvalidInputError(f"items must be a sequence of strings or dicts, got {type(items).__name__}")
    specs: list[MemorySpec] = []
    append = specs.append
    max_chars, ttl = config.max_content_chars, config.default_ttl
    default_ns: str | None = None
    new_spec, content, session_of = tuple.__new__, check.content, check.session
    for i, item in enumerate(items):
        try:
            plain = isinstance(item, str)
            mapping = not plain and (type(item) is dict or isinstance(item, Mapping))  # (the ABC check is slow)
            if plain or (mapping and item.keys() <= _SHORT_FIELDS and "content" in item):
                text, session = (item, session_id) if isinstance(item, str) \
                    else (item["content"], item.get("session_id", session_id))
                text = content(text, max_chars=max_chars)  # the checks in build_spec's order
                if default_ns is None:
                    default_ns = check.namespace(namespace)
                append(new_spec(MemorySpec, (text, default_ns, session_of(session), None, {}, 1.0, False, ttl, (),
                                             None, "memory", False, None)))
            elif mapping:
                unknown = set(item) - ITEM_FIELDS
                if unknown:
                    raise InvalidMemoryError(f"unknown field(s) {sorted(unknown)}")
                if "content" not in item:
                    raise InvalidMemoryError("missing 'content'")
                fields: dict[str, Any] = {"namespace": namespace, "session_id": session_id, **item}
                append(build_spec(config, dim, **fields))
            else:
                raise InvalidMemoryError(f"expected a string or a dict, got {type(item).__name__}")
        except InvalidInputError as exc:
            raise type(exc)(f"item {i}: {exc}") from None
    return specs
