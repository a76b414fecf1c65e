"""Save and load an atlas (a versioned zip of JSON and numpy arrays), and exports for other tools.

The memory lives in the process; persistence is explicit. `save_atlas` writes one zip file:

- ``manifest.json``: the format name and version, the library version, the save time and the
  SHA-256 of every other member;
- ``state.json``: the config, the embedder's type and dimension, every partition (nodes with all
  their fields, edges, session order, superseded ids, write counter), the event log (records
  and lifetime totals) and the lifecycle's state (turns held in working memory, counters);
- ``vectors/<i>.npy``: partition ``i``'s embeddings, row ``k`` for its ``k``-th node.

Writing is atomic: a temporary file in the same directory, flushed and fsynced, then renamed
over the target, so a crash leaves either the old file or the new one. Loading treats the file as
untrusted input. It unpacks at most `unpack_limit` bytes (a zip bomb is refused from its declared
sizes before anything is inflated, and each member is read in chunks that stop at the limit),
refuses JSON nested deeper than `MAX_STATE_DEPTH`, and checks everything (zip CRCs, SHA-256,
version, references, dimensions, and every record by the rules of a write: see
`shared_core.values._records`) before it builds a fresh atlas; if anything is wrong, or the build itself
fails, it raises `CorruptFileError` and nothing is half-loaded. No pickle: a save file cannot
run code. The container (the atomic write, the zip's checks) is `shared_core.engine.savefile`.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from collections.abc import Callable, Mapping
from contextlib import suppress
from dataclasses import fields
from functools import partial
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeVar

import numpy as np

from ..formulas.chatter import contentless
from ..formulas.subqueries import keyword_text
from ..text.embedding import HashingEmbedder
from ..text.entities import entity_keys
from ..values import _validate as check
from ..values._records import MAX_STATE_DEPTH, check_edge, check_lifecycle, node_from_record, node_record, rule
from ..values.config import AtlasConfig
from ..values.errors import AtlasError, CorruptFileError, InvalidInputError
from ..values.model import CustomRelation, MemoryEdge, MemoryNode
from ..values.relations import custom_relation
from ..values.version import __version__
from .events import EventLog
from .savefile import FORMAT, VERSION, PathLike, atomic_write, read_savefile, unpack_limit

if TYPE_CHECKING:
    from .state import EngineState

A = TypeVar("A")
#: A lifecycle's ``restore(saved, node_from_record)``.
Restore = Callable[[dict[str, Any], Callable[[dict[str, Any]], MemoryNode]], None]

__all__ = ["FORMAT", "MAX_STATE_DEPTH", "VERSION", "bookkeeping", "export_graphml", "export_jsonl", "load_atlas",
           "node_record", "restore_bookkeeping", "save_atlas", "unpack_limit"]

#: The largest embedding dimension a file may declare (an index is allocated from it).
MAX_DIM = 65_536


def _edge_record(edge: MemoryEdge) -> dict[str, Any]:
    return {"source": edge.source, "target": edge.target, "relation": edge.relation.value,
            "strength": edge.strength, "created_at": edge.created_at, "metadata": dict(edge.metadata)}


# -- save ----------------------------------------------------------------------------------------
def _snapshot(state: EngineState, lifecycle: Callable[[], dict[str, Any]]
              ) -> tuple[dict[str, Any], list[np.ndarray[Any, Any]]]:
    """Copy the atlas's whole state into plain data, under its lock."""
    partitions: list[dict[str, Any]] = []
    arrays: list[np.ndarray[Any, Any]] = []
    dim = state.embedder.dim
    with state.lock:
        for ns in sorted(state.backend.namespaces()):
            part = state.backend.partition(ns)
            if part is None:
                continue
            nodes = list(part.graph.nodes())
            matrix = np.zeros((len(nodes), dim), dtype=np.float32)
            for k, node in enumerate(nodes):
                vec = part.vectors.get(node.id)
                if vec is None:
                    raise AtlasError(f"memory {node.id!r} has no embedding; the atlas is inconsistent")
                matrix[k] = vec
            edges = [_edge_record(e) for n in nodes for e in part.graph.edges(n.id) if e.source == n.id]
            partitions.append({
                "namespace": ns, "turn": part.turn, "vectors": f"vectors/{len(arrays)}.npy",
                "nodes": [node_record(n) for n in nodes], "edges": edges,
                "sessions": [[s, list(ids)] for s, ids in part.sessions.items()],
                "inactive": sorted(part.inactive),
            })
            arrays.append(matrix)
        saved = {
            "config": {f.name: getattr(state.config, f.name) for f in fields(AtlasConfig)},
            "embedder": {"type": type(state.embedder).__name__, "dim": dim},
            "library": __version__, "saved_at": state.clock.now(),
            **bookkeeping(state, lifecycle),
            "partitions": partitions,
        }
    return saved, arrays


def bookkeeping(state: EngineState, lifecycle: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """What the atlas keeps besides its partitions, as `save_atlas` writes it (JSON-ready): the
    event log, the lifecycle's ``lifecycle()`` and the custom relation names; the caller holds
    the lock. A durable backend stores it too (`shared_core.store.contract.Backend.keep`)."""
    return {"events": {"maxlen": state.events.maxlen, "records": state.events.records(),
                       "totals": state.events.totals()},
            "lifecycle": lifecycle(), "relations": sorted(state.relations)}


def restore_bookkeeping(state: EngineState, kept: Mapping[str, Any], restore: Restore, *, where: str) -> None:
    """Restore what `bookkeeping` gave (``events`` may be None: the log stays as it is) into a
    fresh atlas's state; `CorruptFileError` naming ``where`` if it does not check."""
    try:
        log = None if kept.get("events") is None else _events(kept["events"])
        registered = kept.get("relations", [])
        _check(isinstance(registered, list), "relations is not a list")
        custom = {name: rule("a relation name", custom_relation, name) for name in registered}
        check_lifecycle(kept["lifecycle"])
    except CorruptFileError as exc:
        raise CorruptFileError(f"{where}: {exc}") from None
    except (KeyError, TypeError, AttributeError, IndexError, InvalidInputError) as exc:
        raise CorruptFileError(f"{where}: the bookkeeping is malformed: {exc!r}") from None
    with state.lock:
        if log is not None:
            state.events = EventLog.from_records(log.records(), totals=log.totals(), maxlen=state.events.maxlen)
        state.relations.update(custom)
        restore(kept["lifecycle"], partial(node_from_record, kinds=frozenset({"working"})))


def save_atlas(state: EngineState, path: PathLike, *, lifecycle: Callable[[], dict[str, Any]]) -> Path:
    """Write the atlas's ``state`` to ``path`` atomically (see the module docstring), with the
    lifecycle's bookkeeping ``lifecycle()`` (called under the lock); returns the path."""
    saved, arrays = _snapshot(state, lifecycle)
    try:
        body = json.dumps(saved, allow_nan=False, separators=(",", ":"), default=_jsonable).encode("utf-8")
    except ValueError as exc:
        raise InvalidInputError(f"the atlas holds a value that JSON cannot store: {exc}") from None
    members = {"state.json": body}
    for k, matrix in enumerate(arrays):
        buf = io.BytesIO()
        np.save(buf, matrix, allow_pickle=False)
        members[f"vectors/{k}.npy"] = buf.getvalue()
    manifest = {"format": FORMAT, "version": VERSION, "library": saved["library"], "saved_at": saved["saved_at"],
                "sha256": {name: hashlib.sha256(data).hexdigest() for name, data in members.items()}}

    def write(fh: IO[bytes]) -> None:
        with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
            zf.writestr("manifest.json", json.dumps(manifest, indent=1))
            for name, data in members.items():
                zf.writestr(name, data)

    return atomic_write(path, write)


def _jsonable(value: object) -> Any:
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    if isinstance(value, np.generic):
        return value.item()
    return repr(value)  # event details from a custom subscriber-visible source: kept as text


# -- load ----------------------------------------------------------------------------------------
def _check(condition: bool, message: str) -> None:
    if not condition:
        raise CorruptFileError(message)


def _config(values: object) -> AtlasConfig:
    _check(isinstance(values, dict), "the saved config is not an object")
    assert isinstance(values, dict)
    known = {f.name: f for f in fields(AtlasConfig)}
    unknown = set(values) - set(known)
    _check(not unknown, f"the saved config has unknown fields {sorted(unknown)}")

    def tuples(value: Any) -> Any:
        return tuple(tuples(v) for v in value) if isinstance(value, list) else value

    try:
        return AtlasConfig(**{k: tuples(v) if isinstance(known[k].default, tuple) else v for k, v in values.items()})
    except (AtlasError, TypeError) as exc:
        raise CorruptFileError(f"the saved config is invalid: {exc}") from None


def load_atlas(build: Callable[..., A], parts: Callable[[A], tuple[EngineState, Restore]], path: PathLike, *,
               max_unpacked: int | None = None, **kwargs: Any) -> A:
    """Read ``path`` and build a new atlas from it with ``build(**kwargs)``; ``parts(atlas)`` gives
    the new atlas's state and its lifecycle's ``restore(saved, node_from_record)``.

    The embedder defaults to the one saved when it can be rebuilt (`HashingEmbedder`, the
    default MiniLM); any other must be passed again, with the saved dimension. ``max_unpacked``
    is the most bytes the file may unpack to (default: `unpack_limit` of its size). Everything is
    checked before the first memory is stored, and a build that fails halfway drops what it
    stored: the load is whole or raises (`CorruptFileError` for a damaged or crafted file).
    """
    if max_unpacked is not None:
        check.count(max_unpacked, "max_unpacked")
    saved_state, arrays = read_savefile(path, max_unpacked)
    where = str(path)
    try:
        if kwargs.get("config") is None:
            kwargs["config"] = _config(saved_state["config"])
        saved = saved_state["embedder"]
        dim = saved["dim"]
        _check(isinstance(dim, int) and not isinstance(dim, bool) and 0 < dim <= MAX_DIM,
               f"bad embedding dimension {dim!r}")
        if "embedder" not in kwargs:
            if saved["type"] == "HashingEmbedder":
                kwargs["embedder"] = HashingEmbedder(dim=dim)
            elif saved["type"] != "MiniLMEmbedder":
                raise InvalidInputError(f"{where!r} was saved with a {saved['type']!r:.80} of dimension {dim}: "
                                        "pass embedder= to load it")
        log = _events(saved_state["events"])
        kwargs.setdefault("event_log_size", log.maxlen)
        registered = saved_state.get("relations", [])  # (files saved before custom relations have none)
        _check(isinstance(registered, list), f"{where!r}: relations is not a list")
        custom = {name: rule("a relation name", custom_relation, name) for name in registered}
        partitions = saved_state["partitions"]
        _check(isinstance(partitions, list), "partitions is not a list")
        plans = [_check_partition(p, arrays, dim, custom) for p in partitions]
        ids = [n.id for _, nodes, _, _ in plans for n in nodes]
        _check(len(ids) == len(set(ids)), "two namespaces hold a memory of the same id")
        check_lifecycle(saved_state["lifecycle"])
        atlas = build(**kwargs)
        state, restore = parts(atlas)
        if state.embedder.dim != dim:
            raise InvalidInputError(f"{where!r} holds embeddings of dimension {dim}; the embedder gives "
                                    f"{state.embedder.dim}")
        if any(True for _ in state.backend.namespaces()):
            raise InvalidInputError("load needs an empty backend")
    except CorruptFileError as exc:
        raise CorruptFileError(f"{where!r}: {exc}") from None
    except (KeyError, TypeError, AttributeError, IndexError) as exc:
        raise CorruptFileError(f"{where!r} is missing or mistyping a field: {exc!r}") from None
    except InvalidInputError as exc:
        if type(exc) is not InvalidInputError:  # a record that fails the library's own checks
            raise CorruptFileError(f"{where!r}: {exc}") from None
        raise
    built: list[str] = []
    try:
        with state.lock:
            for record, nodes, matrix, edges in plans:
                built.append(record["namespace"])
                _build_partition(state, record, nodes, matrix, edges)
            state.events = log
            state.relations.update(custom)
            restore(saved_state["lifecycle"], partial(node_from_record, kinds=frozenset({"working"})))
    except BaseException as exc:  # whole or nothing: drop what was built, whatever failed
        for ns in built:
            with suppress(Exception):
                state.backend.drop(ns)
        if isinstance(exc, (KeyError, TypeError, ValueError, AttributeError)) and \
                (not isinstance(exc, AtlasError) or isinstance(exc, (CorruptFileError, InvalidInputError))):
            raise CorruptFileError(f"{where!r} holds inconsistent data: {exc!r}") from None
        raise
    return atlas


def _events(events: Mapping[str, Any]) -> EventLog:
    """The saved event log, each record's time checked as a stored time."""
    maxlen = events["maxlen"]
    _check(isinstance(maxlen, int) and not isinstance(maxlen, bool) and 0 < maxlen <= 10_000_000,
           f"bad event log size {maxlen!r:.40}")
    records = events["records"]
    _check(isinstance(records, list), "the event records are not a list")
    for r in records:
        _check(isinstance(r, Mapping), f"malformed event record {r!r:.80}")
        rule("an event record", check.time_value, r.get("at"), "at")
    try:
        return EventLog.from_records(records, totals=events["totals"], maxlen=maxlen)
    except (InvalidInputError, KeyError, TypeError, AttributeError) as exc:
        raise CorruptFileError(f"the event log is malformed: {exc!r}") from None


def _check_partition(record: Mapping[str, Any], arrays: Mapping[str, np.ndarray[Any, Any]], dim: int,
                     custom: Mapping[str, CustomRelation]
                     ) -> tuple[Mapping[str, Any], list[MemoryNode], np.ndarray[Any, Any], list[MemoryEdge]]:
    """A saved partition checked whole (its memories and edges by the rules of a write); returns
    it with its nodes, embeddings and edges."""
    _check(isinstance(record, Mapping), f"a partition is not an object: {record!r:.80}")
    ns = rule("a partition", check.namespace, record["namespace"])
    shared: dict[Any, Any] = {}
    records = record["nodes"]
    _check(isinstance(records, list), f"namespace {ns!r}: nodes is not a list")
    nodes = [node_from_record(r, shared=shared) for r in records]
    ids = {n.id for n in nodes}
    _check(len(ids) == len(nodes), f"namespace {ns!r} repeats a memory id")
    _check(all(n.namespace == ns for n in nodes), f"namespace {ns!r} holds a memory of another namespace")
    name = record["vectors"]
    matrix = arrays.get(name) if isinstance(name, str) else None
    _check(matrix is not None and matrix.shape == (len(nodes), dim) and matrix.dtype == np.float32,
           f"namespace {ns!r}: embeddings missing or of the wrong shape")
    assert matrix is not None
    _check(bool(np.isfinite(matrix).all()), f"namespace {ns!r}: embeddings hold NaN or infinite values")
    _check(isinstance(record["edges"], list), f"namespace {ns!r}: edges is not a list")
    edges = [check_edge(e, ids, ns, custom) for e in record["edges"]]
    sessions = record["sessions"]
    _check(isinstance(sessions, list) and all(isinstance(s, list) and len(s) == 2 and isinstance(s[1], list)
                                              for s in sessions), f"namespace {ns!r}: bad session order")
    for session, _ in sessions:
        rule(f"namespace {ns!r}", check.session, session)
    tracked = [i for _, members in sessions for i in members]
    _check(all(isinstance(i, str) for i in tracked) and set(tracked) <= ids and len(tracked) == len(set(tracked)),
           f"namespace {ns!r}: bad session order")
    inactive = record["inactive"]
    _check(isinstance(inactive, list) and all(isinstance(i, str) for i in inactive) and set(inactive) <= ids,
           f"namespace {ns!r}: unknown superseded ids")
    rule(f"namespace {ns!r}", check.count, record["turn"], "turn counter")
    return record, nodes, matrix, edges


def _build_partition(state: EngineState, record: Mapping[str, Any], nodes: list[MemoryNode],
                     matrix: np.ndarray[Any, Any], edges: list[MemoryEdge]) -> None:
    part = state.backend.partition(record["namespace"], create=True)
    assert part is not None
    by_id = {n.id: n for n in nodes}
    for node in nodes:
        part.graph.put_node(node)
        state.where[node.id] = node.namespace
    part.vectors.add([n.id for n in nodes], matrix)
    part.keywords.add_many([(n.id, keyword_text(n.content, n.metadata), n.session_id) for n in nodes])
    part.graph.mark_chatter([(n.id, contentless(n.content, n.metadata, cached=False)) for n in nodes])  # derived: again
    for edge in edges:
        part.graph.put_edge(edge)
    for session, members in record["sessions"]:
        for nid in members:
            part.track(nid, session, by_id[nid].timestamp)
    for node_id in record["inactive"]:
        part.inactive.add(node_id)
    mentions = entity_keys([n.content for n in nodes], state.config)  # derived data: extracted again
    if mentions is not None:
        part.entities.add_many([(n.id, keys) for n, keys in zip(nodes, mentions, strict=True) if keys])
    part.turn = record["turn"]


# -- exports -------------------------------------------------------------------------------------
def _nodes_and_edges(state: EngineState, namespace: str | None
                     ) -> list[tuple[MemoryNode, list[MemoryEdge]]]:
    out = []
    with state.lock:
        names = [namespace] if namespace is not None else sorted(state.backend.namespaces())
        for ns in names:
            part = state.backend.partition(ns)
            for node in part.graph.nodes() if part is not None else ():
                edges = [e for e in part.graph.edges(node.id) if e.source == node.id]  # type: ignore[union-attr]
                out.append((state.public(part, node), edges))  # type: ignore[arg-type]
    return out


def export_jsonl(state: EngineState, path: PathLike, *, namespace: str | None = None,
                 embeddings: bool = False) -> Path:
    """One JSON object per line: ``{"type": "node", ...}`` for each memory (ISO times, optional
    embedding), then ``{"type": "edge", ...}`` for each edge."""
    items = _nodes_and_edges(state, namespace)

    def write(fh: IO[bytes]) -> None:
        for node, _ in items:
            fh.write(json.dumps({"type": "node", **node.as_dict(embedding=embeddings)}).encode("utf-8") + b"\n")
        for node, edges in items:
            for e in edges:
                line = {"type": "edge", "namespace": node.namespace, **_edge_record(e)}
                fh.write(json.dumps(line).encode("utf-8") + b"\n")

    return atomic_write(path, write)


def export_graphml(state: EngineState, path: PathLike, *, namespace: str | None = None) -> Path:
    """A GraphML file (Gephi, Cytoscape, yEd, networkx): memories as nodes with their fields
    (times in ISO, metadata as JSON text), edges keyed by relation."""
    import networkx as nx

    graph = nx.MultiDiGraph()
    items = _nodes_and_edges(state, namespace)
    for node, _ in items:
        attrs = {k: json.dumps(v) if k == "metadata" else v for k, v in node.as_dict().items()
                 if v is not None and k != "id"}
        graph.add_node(node.id, **attrs)
    for _, edges in items:
        for e in edges:
            graph.add_edge(e.source, e.target, key=e.relation.value, relation=e.relation.value,
                           strength=e.strength, created_at=e.created_at, metadata=json.dumps(dict(e.metadata)))

    def write(fh: IO[bytes]) -> None:
        nx.write_graphml(graph, fh)

    return atomic_write(path, write)
