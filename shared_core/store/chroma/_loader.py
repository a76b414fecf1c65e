"""Opening a chroma directory: an index of it at once, each namespace on first use.

`read_index` reads what opening needs and nothing more: the registry and the memory ids of
the store (`Store.memory_ids`, one sqlite query) and every log record (checked, decoded and
split by namespace). It gives the atlas's directory (memory id -> namespace), each namespace's
memory count and the log records still to replay over each namespace's checkpointed state.

`load_namespace` then reads one namespace's collection and edges (`Store.load_namespace`) and
replays its log records over them; `build_partition` fills a fresh partition from that plain
data. A defect raises `CorruptFileError` before the partition is handed to the atlas: never a
half-loaded namespace (a damaged log, when the directory is opened; a damaged collection, at
the first use of its namespace).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt

from ...formulas.chatter import contentless
from ...formulas.subqueries import keyword_text
from ...values.model import NO_METADATA, AnyRelation, MemoryEdge, MemoryNode, Relation
from ...values.relations import relation_of
from ..memory.backend import InProcessPartition
from ..memory.entity_index import DictEntityIndex
from ..memory.graph_store import DictGraphStore
from ._partition import ChromaPartition
from ._records import NamespaceState, Op, decode, replay
from ._store import Store
from ._wal import read_segments

__all__ = ["Index", "Stored", "build_partition", "load_namespace", "read_index"]

_EXTRA = ("_seq", "_inactive", "_kw", "_ent", "_chat")
_RELATIONS = {r.value: r for r in Relation}


@dataclass(slots=True)
class Stored:
    """A namespace not loaded yet: its memory count, and its log records (operations, rows)
    to replay over its checkpointed state."""

    count: int = 0
    records: list[tuple[list[Op], npt.NDArray[np.float32]]] = field(default_factory=list)


@dataclass(slots=True)
class Index:
    """What opening reads: the namespaces (`Stored`), the directory, and the log's records per
    segment (not yet checkpointed), each segment's valid end and the segments' numbers."""

    namespaces: dict[str, Stored]
    ids: dict[str, str]
    segments: dict[int, list[bytes]]
    ends: dict[int, int]
    numbers: list[int]


def read_index(store: Store, path: Path, dim: int, *, limits: dict[int, int] | None = None) -> Index:
    """The directory's `Index`; `CorruptFileError` if the store or the log is damaged."""
    turns = {ns: turn for ns, (_, turn) in store.registered().items()}
    members: dict[str, dict[str, None]] = {ns: dict.fromkeys(ids) for ns, ids in store.memory_ids().items()}
    present = dict.fromkeys(turns, True)
    pending: dict[str, list[tuple[list[Op], npt.NDArray[np.float32]]]] = {}
    records, ends = read_segments(path, limits)
    segments: dict[int, list[bytes]] = {number: [] for number in ends}
    for number, payload in records:
        ops, rows = decode(payload, dim)
        segments[number].append(payload)
        split: dict[str, list[Op]] = {}
        # the same checks as `replay`, which these operations meet again when the namespace loads
        replay({}, ops, rows)
        for op in ops:
            kind, ns = op[0], op[1]
            split.setdefault(ns, []).append(op)
            found = members.setdefault(ns, {})
            if kind == "x":
                found.clear()
                turns[ns], present[ns] = 0, False
                continue
            present[ns] = True
            if kind == "n":
                found[op[2]["id"]] = None
            elif kind == "d":
                found.pop(op[2], None)
            elif kind == "t":
                turns[ns] = int(op[2])
        for ns, ops_of in split.items():
            pending.setdefault(ns, []).append((ops_of, rows))
    namespaces: dict[str, Stored] = {}
    ids: dict[str, str] = {}
    for ns, found in members.items():
        if present.get(ns) and (found or turns.get(ns)):
            namespaces[ns] = Stored(len(found), pending.get(ns, []))
            ids.update(dict.fromkeys(found, ns))
    return Index(namespaces, ids, segments, ends, sorted(ends))


def load_namespace(store: Store, namespace: str, stored: Stored) -> NamespaceState:
    """A namespace's state: its checkpointed state with its log records replayed on top."""
    states = {namespace: store.load_namespace(namespace)}
    for ops, rows in stored.records:
        replay(states, ops, rows)
    return states.get(namespace) or NamespaceState()


def build_partition(part: ChromaPartition, state: NamespaceState) -> None:
    """Fill an empty partition from ``state``; `CorruptFileError` on inconsistent data."""
    from ...values.errors import CorruptFileError

    ns = part.namespace
    nodes, seqs, inactive, texts = [], {}, [], {}
    chatter: list[tuple[str, bool]] = []
    mentions: list[tuple[str, list[str]]] = []
    intern = sys.intern
    try:
        for node_id, raw in state.nodes.items():
            record = dict(raw)  # the state's records stay as they are (a failed load is tried again)
            for key in _EXTRA:
                record.pop(key, None)
            # the records were written by `node_record` and are checksummed (log) or the store's: a
            # direct build with a few checks (`node_from_record`'s field-by-field checks cost more)
            record["metadata"] = record.get("metadata") or NO_METADATA
            record["namespace"] = ns
            if record.get("session_id") is not None:
                record["session_id"] = intern(record["session_id"])
            node = MemoryNode(**record)
            metadata = node.metadata
            if node.id != node_id or raw.get("namespace") != ns or not isinstance(node.content, str) \
                    or not (metadata is NO_METADATA or type(metadata) is dict or isinstance(metadata, Mapping)):
                raise CorruptFileError(f"memory {node_id!r} is stored under the wrong id or namespace, "
                                       "or malformed")
            nodes.append(node)
            if raw.get("_seq") is not None:
                seqs[node_id] = float(raw["_seq"])
            if raw.get("_inactive"):
                inactive.append(node_id)
            if isinstance(raw.get("_kw"), str):
                texts[node_id] = raw["_kw"]
            flag = raw.get("_chat")  # a record written before the flag: computed here (backfilled)
            if not isinstance(flag, bool):
                flag = contentless(node.content, metadata, cached=False)
            chatter.append((node_id, flag))
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
            matrix = np.stack([state.vectors[i] for i in ids]).astype(np.float32, copy=False)
            if matrix.shape[1] != part.vectors.dim or not np.isfinite(matrix).all():
                raise CorruptFileError("embeddings of the wrong dimension or not finite")
        known = set(ids)
        edges = []  # with metadata: one by one
        links: dict[float, list[tuple[str, str, AnyRelation, float]]] = {}  # without: by creation time
        relation_get = _RELATIONS.get
        for source, rows in state.edges.items():
            if source not in known:
                raise CorruptFileError(f"an edge from {source!r} starts outside the namespace")
            # rows: the log's lists (metadata a dict) or the store's tuples (metadata as JSON)
            for target, relation, strength, created_at, metadata in rows:
                if target not in known:
                    raise CorruptFileError(f"an edge {source!r} -> {target!r} points outside the namespace")
                rel = relation_get(relation) or relation_of(relation)
                if metadata and metadata != "{}":
                    edges.append(MemoryEdge(source=source, target=target, relation=rel, strength=float(strength),
                                            created_at=float(created_at),
                                            metadata=json.loads(metadata) if isinstance(metadata, str) else metadata))
                else:
                    group = links.get(created_at)
                    if group is None:
                        group = links[created_at] = []
                    group.append((source, target, rel, float(strength)))
    except CorruptFileError as exc:
        raise CorruptFileError(f"namespace {ns!r}: {exc}") from None
    except (ValueError, TypeError, KeyError) as exc:
        raise CorruptFileError(f"namespace {ns!r} holds malformed data: {exc!r:.200}") from None
    put_node = DictGraphStore.put_node
    for node in nodes:
        put_node(part.graph, node)  # type: ignore[arg-type]
    DictGraphStore.mark_chatter(part.graph, chatter)  # type: ignore[arg-type]
    if ids:
        part.vectors.add(ids, matrix)
    part.keywords.add_many([(n.id, texts.get(n.id) or keyword_text(n.content, n.metadata), n.session_id)
                            for n in nodes])
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
