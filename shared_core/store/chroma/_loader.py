"""Opening a chroma directory: the checkpointed store plus the log, into in-process partitions.

`read_state` reads and checks everything first (the store's collections and edges, every log
record); `build_partition` then fills a fresh partition from plain data. A defect anywhere
raises `CorruptFileError` before any partition is handed to the atlas: never a half-loaded one.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from ...values.model import NO_METADATA, AnyRelation, MemoryEdge, MemoryNode, Relation
from ...values.relations import relation_of
from ..memory.backend import InProcessPartition
from ..memory.entity_index import DictEntityIndex
from ..memory.graph_store import DictGraphStore
from ._partition import ChromaPartition
from ._records import NamespaceState, decode, replay
from ._store import Store
from ._wal import read_segments

__all__ = ["build_partition", "read_state"]

_EXTRA = ("_seq", "_inactive", "_kw", "_ent")
_RELATIONS = {r.value: r for r in Relation}


def read_state(store: Store, path: Path, dim: int, *, limits: dict[int, int] | None = None
               ) -> tuple[dict[str, NamespaceState], dict[int, list[bytes]], dict[int, int], list[int]]:
    """The namespaces as the store and the log leave them; the log's records per segment (not
    yet checkpointed); each segment's valid end; the segments' numbers."""
    states = store.load()
    records, ends = read_segments(path, limits)
    segments: dict[int, list[bytes]] = {number: [] for number in ends}
    for number, payload in records:
        replay(states, *decode(payload, dim))
        segments[number].append(payload)
    return states, segments, ends, sorted(ends)


def build_partition(part: ChromaPartition, state: NamespaceState) -> None:
    """Fill an empty partition from ``state``; `CorruptFileError` on inconsistent data."""
    from ...values.errors import CorruptFileError

    ns = part.namespace
    nodes, seqs, inactive, texts = [], {}, [], {}
    mentions: list[tuple[str, list[str]]] = []
    intern = sys.intern
    try:
        for node_id, raw in state.nodes.items():
            record = {k: v for k, v in raw.items() if k not in _EXTRA}
            # the records were written by `node_record` and are checksummed (log) or chromadb's: a
            # direct build with a few checks (`node_from_record`'s field-by-field checks cost more)
            record["metadata"] = record.get("metadata") or NO_METADATA
            record["namespace"] = ns
            if record.get("session_id") is not None:
                record["session_id"] = intern(record["session_id"])
            node = MemoryNode(**record)
            if node.id != node_id or raw.get("namespace") != ns or not isinstance(node.content, str) \
                    or not isinstance(node.metadata, Mapping):
                raise CorruptFileError(f"memory {node_id!r} is stored under the wrong id or namespace, "
                                       "or malformed")
            nodes.append(node)
            if raw.get("_seq") is not None:
                seqs[node_id] = float(raw["_seq"])
            if raw.get("_inactive"):
                inactive.append(node_id)
            if isinstance(raw.get("_kw"), str):
                texts[node_id] = raw["_kw"]
            keys = raw.get("_ent")
            if keys:
                if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
                    raise CorruptFileError(f"memory {node_id!r} has malformed entity mentions")
                mentions.append((node_id, keys))
        ids = [n.id for n in nodes]
        missing = [i for i in ids if i not in state.vectors]
        if missing:
            raise CorruptFileError(f"memory {missing[0]!r} has no embedding")
        if ids:
            matrix = np.stack([state.vectors[i] for i in ids]).astype(np.float32)
            if matrix.shape[1] != part.vectors.dim or not np.isfinite(matrix).all():
                raise CorruptFileError("embeddings of the wrong dimension or not finite")
        known = set(ids)
        edges = []  # with metadata: one by one
        links: dict[float, list[tuple[str, str, AnyRelation, float]]] = {}  # without: by creation time
        for source, rows in state.edges.items():
            for target, relation, strength, created_at, metadata in rows:
                if source not in known or target not in known:
                    raise CorruptFileError(f"an edge {source!r} -> {target!r} points outside the namespace")
                rel = _RELATIONS.get(relation) or relation_of(relation)
                if metadata:
                    edges.append(MemoryEdge(source=source, target=target, relation=rel, strength=float(strength),
                                            created_at=float(created_at), metadata=metadata))
                else:
                    links.setdefault(float(created_at), []).append((source, target, rel, float(strength)))
    except CorruptFileError as exc:
        raise CorruptFileError(f"namespace {ns!r}: {exc}") from None
    except (ValueError, TypeError, KeyError) as exc:
        raise CorruptFileError(f"namespace {ns!r} holds malformed data: {exc!r:.200}") from None
    put_node = DictGraphStore.put_node
    for node in nodes:
        put_node(part.graph, node)  # type: ignore[arg-type]
    if ids:
        part.vectors.add(ids, matrix)
    part.keywords.add_many([(n.id, texts.get(n.id, n.content), n.session_id) for n in nodes])
    for created_at, group in links.items():
        DictGraphStore.put_links(part.graph, group, created_at=created_at)  # type: ignore[arg-type]
    put_edge = DictGraphStore.put_edge
    for edge in edges:
        put_edge(part.graph, edge)  # type: ignore[arg-type]
    by_id = {n.id: n for n in nodes}
    tracked = sorted(seqs, key=seqs.__getitem__)
    InProcessPartition.track_many(part, tracked, [by_id[i].session_id for i in tracked],
                                  [by_id[i].timestamp for i in tracked])
    part.order.update(seqs)
    part.next_seq = max(seqs.values(), default=0.0)
    set.update(part.inactive, inactive)
    DictEntityIndex.add_many(part.entities, mentions)
    part.turn = state.turn
