"""The checkpointed state of a chroma directory: chromadb collections and an edge table.

Each namespace is one chromadb collection (named by `collection_name`), each memory one record:
its id, ``document`` = its content, its embedding, and ``metadata`` = ``_atlas`` (every field of
the memory as JSON, which is what the atlas reads back) plus readable copies of its scalar fields
and of its metadata's scalar values (for other chroma clients, e.g. langchain-chroma). The
edges, the namespaces' registry (namespace -> collection, write counter) and the format live
in ``elastic_atlas.sqlite3`` in the same directory; chromadb keeps its own files beside it.

The store is only written by the checkpointer (`Store.apply`), with the log's operations merged
per memory; the log stays the commit point.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import re
import sqlite3
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ...values.errors import CorruptFileError, InvalidInputError, MissingDependencyError
from ._records import NamespaceState, Op

__all__ = ["FORMAT", "Delta", "Store", "collection_name", "merge"]

FORMAT = "elastic-atlas-chroma/1"
DB_NAME = "elastic_atlas.sqlite3"
_SAFE = re.compile(r"[A-Za-z0-9_-]*[A-Za-z0-9]")
_READABLE = ("session_id", "kind", "weight", "importance", "timestamp", "pinned", "turn")
_KEY = re.compile(r"[A-Za-z][A-Za-z0-9_.-]*")
_MEMORIES = ("CREATE TABLE IF NOT EXISTS memories (id TEXT PRIMARY KEY, ns TEXT NOT NULL, record TEXT NOT NULL,"
             " vector BLOB NOT NULL); CREATE INDEX IF NOT EXISTS memories_ns ON memories (ns)")
_PAGE = 20_000  # records per chromadb read when a collection is loaded


def collection_name(namespace: str) -> str:
    """The chromadb collection of a namespace: ``atlas-<namespace>`` when the namespace is made of
    ``[A-Za-z0-9_-]`` and ends with a letter or digit (and the name stays within chroma's 512
    characters); otherwise ``atlas.b32.<base32 of its UTF-8>``, or ``atlas.sha256.<hex>`` when
    that is too long. The forms cannot collide: only the encoded ones contain a dot.

    >>> collection_name("alice"), collection_name("Bob's notes")
    ('atlas-alice', 'atlas.b32.ijxwej3tebxg65dfom')
    """
    if _SAFE.fullmatch(namespace) and len(namespace) <= 500:
        return f"atlas-{namespace}"
    encoded = base64.b32encode(namespace.encode("utf-8")).decode("ascii").rstrip("=").lower()
    if len(encoded) <= 500:
        return f"atlas.b32.{encoded}"
    return f"atlas.sha256.{hashlib.sha256(namespace.encode('utf-8')).hexdigest()}"


@dataclass(slots=True)
class Delta:
    """A namespace's operations merged: final record per memory (None: deleted), new embeddings,
    final out-edges per source, the last counter; ``dropped``: start from an empty namespace."""

    dropped: bool = False
    nodes: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    vectors: dict[str, npt.NDArray[np.float32]] = field(default_factory=dict)
    edges: dict[str, list[list[Any]]] = field(default_factory=dict)
    turn: int | None = None


def merge(deltas: dict[str, Delta], ops: list[Op], rows: npt.NDArray[np.float32]) -> None:
    """Fold one record's operations into ``deltas`` (namespace -> `Delta`)."""
    for op in ops:
        kind, ns = op[0], op[1]
        if kind == "x":
            deltas[ns] = Delta(dropped=True)
            continue
        d = deltas.get(ns)
        if d is None:
            d = deltas[ns] = Delta()
        if kind == "n":
            d.nodes[op[2]["id"]] = op[2]
            if op[3] >= 0:
                d.vectors[op[2]["id"]] = rows[op[3]]
        elif kind == "d":
            d.nodes[op[2]] = None
            d.vectors.pop(op[2], None)
            d.edges[op[2]] = []
        elif kind == "e":
            d.edges[op[2]] = op[3]
        elif kind == "t":
            d.turn = int(op[2])


def _metadata(record: dict[str, Any]) -> dict[str, Any]:
    body = {k: v for k, v in record.items() if k != "content"}
    meta: dict[str, Any] = {"_atlas": json.dumps(body, separators=(",", ":"), allow_nan=False)}
    for key, value in record.get("metadata", {}).items():
        scalar = isinstance(value, (str, bool, float)) or (isinstance(value, int) and -(2**63) <= value < 2**63)
        if scalar and _KEY.fullmatch(key) and key not in _READABLE:
            meta[key] = value
    for key in _READABLE:
        value = record.get(key)
        if value is not None:
            meta[key] = value
    return meta


def _record_json(record: dict[str, Any]) -> str:
    return json.dumps(record, separators=(",", ":"), allow_nan=False)


def _blob(vector: npt.NDArray[np.float32]) -> bytes:
    return np.ascontiguousarray(vector, dtype="<f4").tobytes()


class Store:
    """The directory's chromadb client (made on first use: importing chromadb takes seconds) and
    its sqlite file. Thread safe: one lock around every call."""

    def __init__(self, path: Path, *, dim: int, read_only: bool) -> None:
        self.path = path
        self.dim = dim
        self.read_only = read_only
        self._lock = threading.Lock()
        self._client_lock = threading.Lock()
        self._client: Any = None
        db = path / DB_NAME
        exists = db.exists()
        try:
            self._db = sqlite3.connect(db, check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA synchronous=FULL")
            if not exists and not read_only:
                self._db.executescript(
                    "BEGIN;"
                    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
                    "CREATE TABLE namespaces (ns TEXT PRIMARY KEY, collection TEXT UNIQUE NOT NULL,"
                    " turn INTEGER NOT NULL);"
                    "CREATE TABLE edges (ns TEXT NOT NULL, source TEXT NOT NULL, target TEXT NOT NULL,"
                    " relation TEXT NOT NULL, strength REAL NOT NULL, created_at REAL NOT NULL,"
                    " metadata TEXT NOT NULL, PRIMARY KEY (ns, source, target, relation));"
                    f"{_MEMORIES};"
                    "COMMIT;")
                self._db.executemany("INSERT INTO meta VALUES (?, ?)", [("format", FORMAT), ("dim", str(dim))])
            meta = dict(self._db.execute("SELECT key, value FROM meta").fetchall()) if exists or not read_only \
                else {"format": FORMAT, "dim": str(dim)}
        except sqlite3.DatabaseError as exc:
            raise CorruptFileError(f"{str(db)!r} is not a readable Elastic Atlas store: {exc}") from None
        if meta.get("format") != FORMAT:
            raise CorruptFileError(f"{str(db)!r} is not an Elastic Atlas chroma store ({meta.get('format')!r})")
        if meta.get("dim") != str(dim):
            raise InvalidInputError(f"{str(path)!r} holds embeddings of dimension {meta.get('dim')}; "
                                    f"the embedder gives {dim}")
        self._listed = (exists or not read_only) and self._has_memories_table()
        if exists and not self._listed and not read_only:  # a directory of the first format: copy it once
            self._list_memories()
            self._listed = True

    # -- chromadb -----------------------------------------------------------------------------
    def client(self) -> Any:
        with self._client_lock:
            return self._make_client()

    def _make_client(self) -> Any:
        if self._client is None:
            try:
                import chromadb
                from chromadb.config import Settings
            except ImportError as exc:
                raise MissingDependencyError("the chroma backend needs chromadb: "
                                             "pip install '.[chroma]' in a checkout") from exc
            try:
                self._client = chromadb.PersistentClient(path=str(self.path),
                                                         settings=Settings(anonymized_telemetry=False))
            except Exception as exc:  # chromadb raises its own and sqlite's errors on a damaged file
                raise CorruptFileError(f"chromadb cannot open {str(self.path)!r}: {exc}") from None
        return self._client

    def registered(self) -> dict[str, tuple[str, int]]:
        """Namespace -> (collection name, write counter), as of the last checkpoint."""
        with self._lock:
            rows = self._rows("SELECT ns, collection, turn FROM namespaces")
        return {ns: (name, turn) for ns, name, turn in rows}

    def memory_ids(self) -> dict[str, list[str]]:
        """Namespace -> the ids of its memories, as of the last checkpoint (the directory is
        known without reading a collection)."""
        with self._lock:
            if not self._listed:  # a read-only directory of the first format: ask chromadb
                return {ns: list(state.nodes) for ns in self._registered_unlocked()
                        if (state := self._read_collection(ns))}
            rows = self._rows("SELECT id, ns FROM memories")
        out: dict[str, list[str]] = {}
        for node_id, ns in rows:
            found = out.get(ns)
            if found is None:
                found = out[ns] = []
            found.append(node_id)
        return out

    def _has_memories_table(self) -> bool:
        return bool(self._rows("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'memories'"))

    def _rows(self, query: str) -> list[Any]:
        """The rows of a read of the store's database; a database sqlite cannot read is
        `CorruptFileError` naming the directory."""
        try:
            return self._db.execute(query).fetchall()
        except sqlite3.DatabaseError as exc:
            raise CorruptFileError(f"the store of {str(self.path)!r} is unreadable: {exc}") from None

    def _list_memories(self) -> None:
        """Fill the ``memories`` table of a directory written before it existed, from the
        collections (once)."""
        rows: list[tuple[str, str, str, bytes]] = []
        for ns in self._registered_unlocked():
            state = self._read_collection(ns)
            rows.extend((i, ns, _record_json(record), _blob(state.vectors[i])) for i, record in state.nodes.items())
        self._db.executescript(f"{_MEMORIES};")
        self._db.execute("BEGIN")
        try:
            self._db.executemany("INSERT OR REPLACE INTO memories VALUES (?, ?, ?, ?)", rows)
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise

    def bookkeeping(self) -> dict[str, Any] | None:
        """The atlas's bookkeeping (events, lifecycle, custom relations) stored by the last
        checkpoint, or None."""
        with self._lock:
            try:
                row = self._db.execute("SELECT value FROM meta WHERE key = 'bookkeeping'").fetchone()
                kept = None if row is None else json.loads(row[0])
            except (sqlite3.DatabaseError, ValueError) as exc:
                raise CorruptFileError(f"the bookkeeping in {str(self.path)!r} is unreadable: {exc}") from None
        if kept is not None and not isinstance(kept, dict):
            raise CorruptFileError(f"the bookkeeping in {str(self.path)!r} is not an object")
        return kept

    def load_namespace(self, ns: str) -> NamespaceState:
        """One namespace as of the last checkpoint (empty if none was checkpointed).

        The records and embeddings are read from the store's own copy (the ``memories`` table:
        one query, the embeddings joined into one numpy matrix), which the checkpoint writes in
        the same transaction as the edges; the namespace's chromadb collection must exist and
        hold as many records (`_counted`, else chromadb's ``count``; not checked in a read-only
        directory, which chromadb cannot open), else `CorruptFileError`, as for anything
        missing or unparseable.
        A directory of the first format, opened read-only, is read from its collections."""
        with self._lock:
            registered = self._registered_unlocked().get(ns)
            if registered is None:
                return NamespaceState()
            if not self._listed:
                state = self._read_collection(ns)
                state.edges = self._edges(ns)
                return state
            name, turn = registered
            state = NamespaceState(turn=turn)
            try:
                scan = self._scan(ns)
                rows = self._db.execute(f"SELECT id, record, vector FROM memories{scan} WHERE ns = ? ORDER BY rowid",
                                        (ns,)).fetchall()
                size = 4 * self.dim
                if any(len(row[2]) != size for row in rows):
                    raise ValueError(f"an embedding is not {self.dim} float32 values")
                records = json.loads("[" + ",".join(row[1] for row in rows) + "]")
                matrix = np.frombuffer(b"".join(row[2] for row in rows), dtype="<f4").reshape(-1, self.dim)
                for (node_id, _, _), record, vector in zip(rows, records, matrix, strict=True):
                    if not isinstance(record, dict) or record.get("id") != node_id or record.get("namespace") != ns:
                        raise ValueError(f"record {node_id!r} does not match its namespace")
                    state.nodes[node_id] = record
                    state.vectors[node_id] = vector
                state.edges = self._edges(ns, scan)
            except (ValueError, KeyError, TypeError, sqlite3.DatabaseError) as exc:
                raise CorruptFileError(f"{str(self.path)!r}: namespace {ns!r} holds unreadable data: "
                                       f"{exc}") from None
            if self.read_only:  # chromadb cannot open a directory it may not write (its sqlite refuses)
                return state
            if self._counted(name) == len(rows):
                return state
            try:
                held = self.client().get_collection(name).count()
            except Exception as exc:
                raise CorruptFileError(f"{str(self.path)!r}: the collection {name!r} of namespace {ns!r} "
                                       f"cannot be read: {exc}") from None
            if held != len(rows):
                raise CorruptFileError(f"{str(self.path)!r}: the collection {name!r} of namespace {ns!r} holds "
                                       f"{held} records; the store {len(rows)}")
        return state

    def _counted(self, name: str) -> int | None:
        """The records of a collection as chromadb's own sqlite file counts them (its metadata
        segment), read directly: importing chromadb takes about a second of CPU. Only ever a
        confirmation: any other answer (a schema of another chromadb version, a lock, records
        still in chromadb's queue) sends the caller to chromadb's `count`."""
        try:
            with contextlib.closing(sqlite3.connect(f"file:{self.path / 'chroma.sqlite3'}?mode=ro", uri=True,
                                                    timeout=0.5)) as db:
                row = db.execute("SELECT count(*) FROM embeddings WHERE segment_id = (SELECT s.id FROM segments s "
                                 "JOIN collections c ON s.collection = c.id WHERE c.name = ? AND s.scope = 'METADATA')",
                                 (name,)).fetchone()
        except sqlite3.Error:
            return None
        return int(row[0]) if row is not None else None

    def _scan(self, ns: str) -> str:
        """``" NOT INDEXED"`` when ``ns`` holds at least half of the store's memories, else ``""``.

        A namespace's rows are read in the order they were written (rowid). Through the ``ns``
        index that is one table lookup per row and a sort; when the namespace is most of the
        table, scanning the whole table in rowid order (sqlite skips the other namespaces' rows
        in C, and needs no sort) reads it about twice as fast. The two give the same rows in
        the same order."""
        mine = self._db.execute("SELECT count(*) FROM memories WHERE ns = ?", (ns,)).fetchone()[0]
        total = self._db.execute("SELECT count(*) FROM memories").fetchone()[0]
        return " NOT INDEXED" if 2 * mine >= total else ""

    def _edges(self, ns: str, scan: str = "") -> dict[str, list[Any]]:
        """A namespace's out-edges by source, each ``(target, relation, strength, created_at,
        metadata as JSON)`` (`build_partition` parses the metadata of the few that have some);
        ``scan``: `_scan`'s answer."""
        edges: dict[str, list[Any]] = {}
        try:
            rows = self._db.execute("SELECT source, target, relation, strength, created_at, metadata "
                                    f"FROM edges{scan} WHERE ns = ? ORDER BY rowid", (ns,)).fetchall()
            last, found = None, None
            for row in rows:  # a source's edges are stored together: one lookup per source
                if row[0] != last:
                    last = row[0]
                    found = edges.get(last)
                    if found is None:
                        found = edges[last] = []
                found.append(row[1:])  # type: ignore[union-attr]
        except sqlite3.DatabaseError as exc:
            raise CorruptFileError(f"{str(self.path)!r}: the edges of namespace {ns!r} are unreadable: {exc}") from None
        return edges

    def _read_collection(self, ns: str) -> NamespaceState:
        """A namespace's records and embeddings from its chromadb collection, in pages of
        `_PAGE` records (a directory of the first format)."""
        name, turn = self._registered_unlocked()[ns]
        state = NamespaceState(turn=turn)
        try:
            col = self.client().get_collection(name)
            total = col.count()
            pages = [col.get(include=["embeddings", "documents", "metadatas"], limit=_PAGE, offset=offset)
                     for offset in range(0, total, _PAGE)]
        except Exception as exc:
            raise CorruptFileError(f"{str(self.path)!r}: the collection {name!r} of namespace {ns!r} "
                                   f"cannot be read: {exc}") from None
        try:
            for got in pages:
                matrix = np.asarray(got["embeddings"], dtype=np.float32).reshape(-1, self.dim)
                for k, (node_id, doc, meta) in enumerate(zip(got["ids"], got["documents"], got["metadatas"],
                                                             strict=True)):
                    record = json.loads(meta["_atlas"])
                    record["content"] = doc
                    if record.get("id") != node_id or record.get("namespace") != ns or not isinstance(doc, str):
                        raise ValueError(f"record {node_id!r} does not match its collection")
                    state.nodes[node_id] = record
                    state.vectors[node_id] = matrix[k]
        except (ValueError, KeyError, TypeError) as exc:
            raise CorruptFileError(f"{str(self.path)!r}: namespace {ns!r} holds unreadable data: {exc}") from None
        return state

    # -- checkpoint ---------------------------------------------------------------------------
    def apply(self, deltas: dict[str, Delta], *, bookkeeping: str | None = None) -> None:
        """Write merged operations into the collections, the edge and memory tables, and the
        atlas's ``bookkeeping`` (JSON) when given (idempotent)."""
        if not deltas and bookkeeping is None:
            return
        client: Any = self.client() if deltas else None
        batch = max(1, min(5000, int(client.get_max_batch_size()))) if client is not None else 1
        with self._lock:
            registered = {ns: name for ns, (name, _) in self._registered_unlocked().items()}
            for ns, d in deltas.items():
                name = registered.get(ns) or collection_name(ns)
                if d.dropped:
                    with contextlib.suppress(Exception):
                        client.delete_collection(name)
                assert client is not None
                col = client.get_or_create_collection(name, metadata={"hnsw:space": "cosine", "atlas_namespace": ns},
                                                      embedding_function=None)
                put = [i for i, r in d.nodes.items() if r is not None and i in d.vectors]
                update = [i for i, r in d.nodes.items() if r is not None and i not in d.vectors]
                gone = [i for i, r in d.nodes.items() if r is None]
                for start in range(0, len(put), batch):
                    ids = put[start:start + batch]
                    records = [d.nodes[i] for i in ids]
                    col.upsert(ids=ids, embeddings=np.stack([d.vectors[i] for i in ids]),
                               documents=[r["content"] for r in records if r is not None],
                               metadatas=[_metadata(r) for r in records if r is not None])
                for start in range(0, len(update), batch):
                    ids = update[start:start + batch]
                    records = [d.nodes[i] for i in ids]
                    # a memory's content never changes (a correction is a new memory): metadata only,
                    # and chromadb would run its own embedding model on documents given without vectors
                    col.update(ids=ids, metadatas=[_metadata(r) for r in records if r is not None])
                for start in range(0, len(gone), batch):
                    col.delete(ids=gone[start:start + batch])
            self._db.execute("BEGIN")
            try:
                for ns, d in deltas.items():
                    if d.dropped:
                        self._db.execute("DELETE FROM edges WHERE ns = ?", (ns,))
                        self._db.execute("DELETE FROM namespaces WHERE ns = ?", (ns,))
                        self._db.execute("DELETE FROM memories WHERE ns = ?", (ns,))
                    self._db.executemany("DELETE FROM memories WHERE id = ?",
                                         [(i,) for i, r in d.nodes.items() if r is None])
                    # an upsert keeps a memory's row (and so its place in the namespace's order)
                    self._db.executemany("INSERT INTO memories VALUES (?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET "
                                         "ns = excluded.ns, record = excluded.record, vector = excluded.vector",
                                         [(i, ns, _record_json(r), _blob(d.vectors[i]))
                                          for i, r in d.nodes.items() if r is not None and i in d.vectors])
                    self._db.executemany("UPDATE memories SET record = ? WHERE id = ?",
                                         [(_record_json(r), i) for i, r in d.nodes.items()
                                          if r is not None and i not in d.vectors])
                    self._db.executemany("DELETE FROM edges WHERE ns = ? AND source = ?",
                                         [(ns, s) for s in d.edges])
                    self._db.executemany("INSERT OR REPLACE INTO edges VALUES (?, ?, ?, ?, ?, ?, ?)",
                                         [(ns, s, e[0], e[1], e[2], e[3], json.dumps(e[4]))
                                          for s, edges in d.edges.items() for e in edges])
                    turn = d.turn if d.turn is not None else 0
                    self._db.execute("INSERT INTO namespaces VALUES (?, ?, ?) ON CONFLICT(ns) DO UPDATE SET "
                                     "turn = CASE WHEN ? IS NULL THEN turn ELSE excluded.turn END",
                                     (ns, registered.get(ns) or collection_name(ns), turn, d.turn))
                if bookkeeping is not None:
                    self._db.execute("INSERT OR REPLACE INTO meta VALUES ('bookkeeping', ?)", (bookkeeping,))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def _registered_unlocked(self) -> dict[str, tuple[str, int]]:
        rows = self._db.execute("SELECT ns, collection, turn FROM namespaces").fetchall()
        return {ns: (name, turn) for ns, name, turn in rows}

    def close(self) -> None:
        """Close the sqlite file and release chromadb's shared system for this directory (so a
        later open in this process reads what another process wrote meanwhile)."""
        with self._lock, self._client_lock:
            self._db.close()
            close = getattr(self._client, "close", None)
            if callable(close):
                close()
            self._client = None
