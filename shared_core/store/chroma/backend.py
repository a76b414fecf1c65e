"""`ChromaBackend`: the atlas's memory kept durably in a local chromadb directory.

Reads stay in process: each namespace is an in-process partition (`ChromaPartition`). Opening
reads only an index of the directory (the registry, the memory ids and the log:
`shared_core.store.chroma._loader.read_index`); a namespace's partition is built on first use
(`partition`) from the store's copy of its memories and its log records, once, under the
atlas's lock, so two threads touching it at once load it once. Every write is written through:

1. the atlas's lock is the backend's `CommitLock`; when a write's outermost hold ends, the
   changes it made become **one log record** (`shared_core.store.chroma._records`), so a memory and its
   edges are committed together or not at all;
2. the record is appended to the write-ahead log (`shared_core.store.chroma._wal`) and fsynced with
   every other record queued by then (group commit): under ``durability="sync"`` before the write
   returns; by default by a background flusher within ``flush_interval`` seconds (`flush` and
   `close` wait for it). Reinforcement and decay updates are records like any other;
3. once the log holds ``checkpoint_bytes``, a checkpoint applies its closed segments to the
   chromadb collections and to the store's own tables (each memory's record and embedding, the
   edges: `shared_core.store.chroma._store`) in batches, then deletes them. `close` checkpoints
   everything, so a closed directory is a plain chromadb directory (plus the atlas's tables).

A checkpoint (and `close`) also stores the atlas's bookkeeping (`keep`: event log, held turns,
lifecycle counters, custom relation names), which `lifecycle_state` gives back on reopen.

Reopening reads the log (dropping a torn last record). If the log cannot be written (disk
full, read-only directory), the write fails with `BackendError` and the in-process state is
rebuilt from what is durable; under the default mode the flusher finds the failure, logs it,
and the next `flush` or `close` raises it. One process writes a directory:
an OS lock (``fcntl.flock``) on ``elastic_atlas.lock`` makes a second writer fail with
`BackendError`.

>>> from shared_core import ElasticMemoryAtlas, HashingEmbedder
>>> import tempfile
>>> path = tempfile.mkdtemp()
>>> atlas = ElasticMemoryAtlas(embedder=HashingEmbedder(), backend=f"chroma:{path}")
>>> _ = atlas.add_memory("User prefers oat milk", namespace="alice")
>>> atlas.close()
>>> again = ElasticMemoryAtlas(embedder=HashingEmbedder(), backend=f"chroma:{path}")
>>> again.retrieve("milk", namespace="alice", top_k=1)[0].node.content
'User prefers oat milk'
>>> again.close()
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import json
import logging
import os
import sys
import threading
from collections.abc import Callable, Iterator, MutableMapping
from pathlib import Path
from typing import Any, Literal

from ...values.config import AtlasConfig
from ...values.errors import BackendError, CorruptFileError, InvalidInputError
from ..collector import collector_paused
from ..contract import Partition
from ..memory.backend import InProcessBackend
from ._loader import Stored, build_partition, load_namespace, read_index
from ._locks import CommitLock, lock_directory
from ._partition import Changes, ChromaPartition, snapshot, to_ops
from ._records import decode, encode
from ._store import Delta, Store, merge
from ._url import url_options
from ._wal import WriteAheadLog, segment_path

__all__ = ["ChromaBackend", "CommitLock"]

logger = logging.getLogger("shared_core")
Durability = Literal["default", "sync"]


class ChromaBackend(InProcessBackend):
    """Durable local memory in a chromadb directory (see the module docstring).

    ``durability``: ``"default"`` (a write is durable within ``flush_interval`` seconds) or
    ``"sync"`` (a write returns once it is durable). ``checkpoint_bytes``: log size that
    triggers a checkpoint into the chromadb collections. The directory is opened when the
    backend is given to an atlas (which supplies the embedding dimension and the config).

    >>> backend = ChromaBackend("./memory", durability="sync")  # doctest: +SKIP
    >>> atlas = ElasticMemoryAtlas(backend=backend)  # doctest: +SKIP
    """

    def __init__(self, path: str | os.PathLike[str], *, durability: Durability = "default",
                 flush_interval: float = 0.1, checkpoint_bytes: int = 64 << 20, dim: int | None = None,
                 config: AtlasConfig | None = None, maintain_every: float | None = 600.0) -> None:
        if not isinstance(path, (str, os.PathLike)) or not str(path):
            raise InvalidInputError(f"path must be a non-empty str or os.PathLike, got {path!r}")
        if durability not in ("default", "sync"):
            raise InvalidInputError(f"durability must be 'default' or 'sync', got {durability!r}")
        if isinstance(flush_interval, bool) or not isinstance(flush_interval, (int, float)) \
                or not 0 < flush_interval <= 60:
            raise InvalidInputError(f"flush_interval must be seconds in (0, 60], got {flush_interval!r}")
        if isinstance(checkpoint_bytes, bool) or not isinstance(checkpoint_bytes, int) or checkpoint_bytes < 1:
            raise InvalidInputError(f"checkpoint_bytes must be a positive int, got {checkpoint_bytes!r}")
        if maintain_every is not None and (isinstance(maintain_every, bool) or not isinstance(
                maintain_every, (int, float)) or not 0 < maintain_every < float("inf")):
            raise InvalidInputError(f"maintain_every must be None or seconds > 0, got {maintain_every!r}")
        self.maintain_every = None if maintain_every is None else float(maintain_every)
        self.path = Path(path).expanduser().absolute()
        self.durability: Durability = durability
        self.flush_interval = float(flush_interval)
        self.checkpoint_bytes = checkpoint_bytes
        self._opened = False
        self.lock = CommitLock(self)
        self._changes = Changes()
        self._ids: dict[str, str] = {}  # memory id -> namespace, the atlas's directory
        self._queue: list[tuple[int, list[tuple[Any, ...]]]] = []  # sealed, not yet written (`snapshot`s)
        self._seq = 0  # last sealed record
        self._durable = 0  # last record known durable
        self._queue_lock = threading.Lock()
        self._io_lock = threading.Lock()  # log writes and rotation
        self._checkpoint_lock = threading.Lock()
        self._wake = threading.Condition(self._queue_lock)
        self._error: BackendError | None = None  # a failed commit, to report once
        self._closing = False
        self._wal: WriteAheadLog | None = None
        self._thread: threading.Thread | None = None
        self._lock_fd = -1
        self._attached = False
        self._stored: dict[str, Stored] = {}  # namespaces not loaded yet
        self._watchers: list[Callable[[Partition], None]] = []
        self._bookkeeping: Callable[[], dict[str, Any]] | None = None
        if dim is not None:
            self.open(dim=dim, config=config)

    @classmethod
    def from_url(cls, url: str) -> ChromaBackend:
        """``chroma:PATH[?durability=sync&flush_interval=S&checkpoint_bytes=N]`` (also
        ``chroma://PATH``; PATH relative or absolute).

        >>> ChromaBackend.from_url("chroma:./memory?durability=sync").durability
        'sync'
        """
        path, options = url_options(url)
        return cls(path, **options)

    def maintenance_interval(self) -> float | None:
        """``maintain_every``: an app on the durable store has no server process to run
        `ElasticMemoryAtlas.maintain` (expiry, clean-up, caps, compression), so the atlas runs it
        on this timer (None: the app calls it)."""
        return self.maintain_every

    # -- opening --------------------------------------------------------------------------------
    def attach(self, *, dim: int, config: AtlasConfig | None) -> CommitLock:
        """Called by the atlas: open the directory (if the backend was made without ``dim``) for
        embedding dimension ``dim`` and the atlas's config. Returns the lock the atlas must use
        for its writes."""
        if self._attached:
            raise InvalidInputError(f"the chroma backend of {str(self.path)!r} already serves an atlas")
        if not self._opened:
            self.open(dim=dim, config=config)
        elif dim != self.dim:
            raise InvalidInputError(f"the chroma backend of {str(self.path)!r} was opened for dimension "
                                    f"{self.dim}; the embedder gives {dim}")
        elif config is not None and not self._partitions:  # the atlas's vector-index settings
            super().__init__(dim=dim, config=config)
            self._vector_args = {"threshold": self.ann_threshold, "probe_fraction": self.ann_probe_fraction,
                                 "vector_dtype": self.ann_vector_dtype}
            self._partitions = {}
        self._attached = True
        return self.lock

    def open(self, *, dim: int, config: AtlasConfig | None = None) -> None:
        """Lock the directory, load it (`CorruptFileError` if it is damaged: nothing is half
        loaded) and start the flusher. The atlas does this through `attach`; use it to work with
        the backend's partitions directly, under `lock`."""
        if self._opened or self._closing:
            raise InvalidInputError(f"the chroma backend of {str(self.path)!r} is already open (or closed)")
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
            raise InvalidInputError(f"dim must be a positive int, got {dim!r}")
        super().__init__(dim=dim, config=config)
        self._vector_args = {"threshold": self.ann_threshold, "probe_fraction": self.ann_probe_fraction,
                             "vector_dtype": self.ann_vector_dtype}
        self._partitions: dict[str, ChromaPartition] = {}  # type: ignore[assignment]
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise BackendError(f"cannot create the memory directory {str(self.path)!r}: {exc}") from None
        self._read_only = not os.access(self.path, os.W_OK)
        self._lock_fd = lock_directory(self.path, read_only=self._read_only)
        try:
            self._store = Store(self.path, dim=dim, read_only=self._read_only)
            self._load()
        except BaseException:
            self._release_lock()
            raise
        self._opened = True
        self._thread = threading.Thread(target=self._flusher, name=f"atlas-chroma-{self.path.name}", daemon=True)
        self._thread.start()
        atexit.register(self._at_exit)

    def _release_lock(self) -> None:
        if self._lock_fd >= 0:
            os.close(self._lock_fd)
            self._lock_fd = -1

    def _load(self, *, limits: dict[int, int] | None = None) -> None:
        """Read the directory's index (up to ``limits`` per log segment); every namespace is
        left to load on first use."""
        index = read_index(self._store, self.path, self.dim, limits=limits)
        self._segments = index.segments  # segment number -> its records, not yet checkpointed
        self._partitions = {}
        self._stored = index.namespaces
        self._ids.clear()
        self._ids.update(index.ids)
        self._changes.clear()
        if self._wal is None and not self._read_only:
            try:
                self._wal = WriteAheadLog(self.path, index.numbers, ends=index.ends)
            except OSError as exc:
                raise BackendError(f"cannot open the log of {str(self.path)!r}: {exc}") from None

    def _load_namespace(self, namespace: str, *, adopt: bool = True) -> ChromaPartition | None:
        """Build a stored namespace's partition (`CorruptFileError` if its data is damaged: the
        namespace stays unloaded, and the next use raises again)."""
        with self.lock:
            part = self._partitions.get(namespace)
            stored = self._stored.get(namespace)
            if part is not None or stored is None:
                return part
            with collector_paused():
                state = load_namespace(self._store, namespace, stored)
                part = ChromaPartition(namespace, Changes(), dim=self.dim, vector_args=self._vector_args)
                build_partition(part, state)  # its own `Changes`: loading is not a write
            part.note_changes(self._changes)
            self._partitions[namespace] = part
            del self._stored[namespace]
            for each in self._watchers if adopt else ():
                each(part)
            return part

    def _new_partition(self, namespace: str) -> ChromaPartition:
        return ChromaPartition(namespace, self._changes, dim=self.dim, vector_args=self._vector_args)

    # -- the Backend protocol -----------------------------------------------------------------
    def partition(self, namespace: str, *, create: bool = False) -> ChromaPartition | None:
        """The namespace's partition, built from the directory on first use (see the module
        docstring); with ``create``, a new empty one for a namespace the directory lacks."""
        part = self._partitions.get(namespace)
        if part is None and namespace in self._stored:
            part = self._load_namespace(namespace)
        if part is None and create:
            with self.lock:
                part = self._partitions.get(namespace)
                if part is None:
                    part = self._partitions[namespace] = self._new_partition(namespace)
        return part

    def namespaces(self) -> Iterator[str]:
        """Every namespace, loaded or not (listing loads nothing)."""
        return iter(dict.fromkeys([*self._partitions, *self._stored]))

    def memory_count(self, namespace: str) -> int:
        """The namespace's memories, from the index while it is not loaded."""
        stored = self._stored.get(namespace)
        if stored is not None:
            return stored.count
        part = self._partitions.get(namespace)
        return 0 if part is None else part.graph.node_count()

    def loaded(self) -> list[str]:
        """The namespaces whose partitions are built (in this process's memory)."""
        return list(self._partitions)

    def drop(self, namespace: str) -> None:
        stored = self._stored.pop(namespace, None)
        part = self._partitions.pop(namespace, None)
        if part is not None:
            part.keywords.drop()
        if part is not None or stored is not None:
            self._changes.dropped.append(namespace)
            for ids in (self._changes.nodes, self._changes.vectors, self._changes.edges):
                ids.pop(namespace, None)
        if stored is not None:
            for node_id in [i for i, ns in self._ids.items() if ns == namespace]:
                del self._ids[node_id]

    def watch(self, adopt: Callable[[Partition], None]) -> None:
        """Call ``adopt`` (under the atlas's lock) with each partition built so far and with each
        namespace loaded from now on (the lifecycle accounts its memories and expiries then)."""
        with self.lock:
            self._watchers.append(adopt)
            for part in list(self._partitions.values()):
                adopt(part)

    def keep(self, bookkeeping: Callable[[], dict[str, Any]]) -> None:
        """``bookkeeping()`` (called under the atlas's lock; JSON-ready) is stored at each
        checkpoint and on `close`; `lifecycle_state` gives the last one back on reopen."""
        self._bookkeeping = bookkeeping

    def lifecycle_state(self) -> dict[str, Any]:
        """The bookkeeping stored by the last checkpoint or `close` (the form `keep` takes:
        ``lifecycle``, ``events``, ``relations``), or an empty lifecycle for a new directory."""
        kept = self._store.bookkeeping()
        if kept is not None:
            return kept
        empty = {"held": [], "dirty": {}, "since_compress": {}, "since_prune": 0}
        return {"lifecycle": empty, "events": None, "relations": []}

    def directory(self) -> MutableMapping[str, str]:
        """Memory id -> namespace for every stored memory (the atlas's lookup by id)."""
        return self._ids

    # -- commit ---------------------------------------------------------------------------------
    def _seal(self) -> int | None:
        """Under the write lock: the changes since the last seal as one queued record."""
        if not self._changes:
            return None
        try:
            items = snapshot(self._partitions, self._changes)
        finally:
            self._changes.clear()
        with self._queue_lock:
            self._seq += 1
            self._queue.append((self._seq, items))
            return self._seq

    def _after_seal(self, seq: int | None) -> None:
        if seq is not None and self.durability == "sync":
            self.commit(seq)

    def _raise_error(self) -> None:
        error, self._error = self._error, None
        if error is not None:
            raise error

    def commit(self, through: int | None = None) -> None:
        """Make every record sealed so far (or through ``through``) durable: one write and one
        fsync for all that are queued (group commit). Raises `BackendError` if the log cannot be
        written; the in-process state is then rebuilt from what is durable."""
        with self._io_lock:
            with self._queue_lock:
                target = self._seq if through is None else through
                if self._durable >= target:
                    return
                batch, self._queue = self._queue, []
            if not batch:
                return
            try:
                payloads = [encode(*to_ops(items, self.dim)) for _, items in batch]
            except Exception as exc:  # whatever it is, these writes are not in the log
                failure: Exception = exc
                message = f"writes could not be recorded ({exc!r}); they are undone"
            else:
                try:
                    if self._wal is None:
                        raise OSError(errno.EROFS, "the directory is read-only")
                    self._wal.append(payloads)
                    self._wal.sync()
                except OSError as exc:
                    failure = exc
                    message = (f"cannot write the memory log in {str(self.path)!r}: {exc}; "
                               "the writes not yet durable are undone")
                else:
                    self._segments.setdefault(self._wal.number, []).extend(payloads)
                    self._durable = batch[-1][0]
                    return
        error = BackendError(message)
        self._recover()
        raise error from failure

    def _recover(self) -> None:
        """After a failed commit: drop every queued record and rebuild the loaded partitions from
        the durable state (the store and the log up to its last synced byte); the lifecycle,
        which accounted them when they first loaded, is not told again."""
        with self.lock, self._checkpoint_lock:
            with self._queue_lock:
                self._queue.clear()
                self._durable = self._seq
            limits = {self._wal.number: self._wal.synced} if self._wal is not None else None
            loaded = list(self._partitions)
            self._load(limits=limits)
            for ns in loaded:
                with contextlib.suppress(CorruptFileError):  # raised again at its next use
                    self._load_namespace(ns, adopt=False)

    def _flusher(self) -> None:
        while True:
            with self._queue_lock:
                if not self._closing:
                    self._wake.wait(self.flush_interval)
                closing = self._closing
            try:
                self.commit()
            except BackendError as exc:
                logger.error("%s", exc)
                self._error = exc
            if self._wal is not None and self._wal.size >= self.checkpoint_bytes:
                try:
                    self.checkpoint()
                except Exception as exc:
                    # and the next checkpoint retries
                    logger.warning("checkpoint of %s failed: %s", self.path, exc)
            if closing:
                return

    def checkpoint(self) -> None:
        """Apply the log's closed segments (after closing the current one) to the collections,
        with the atlas's bookkeeping (`keep`), then delete them."""
        kept = self._taken()
        with self._checkpoint_lock:
            with self._io_lock:
                if self._wal is None:
                    return
                if self._wal.size > len(b"EAWAL01\n"):
                    self._wal.rotate()
                current = self._wal.number
            numbers = sorted(n for n in self._segments if n < current)
            deltas: dict[str, Delta] = {}
            for number in numbers:
                for payload in self._segments[number]:
                    merge(deltas, *decode(payload, self.dim))
            self._store.apply(deltas, bookkeeping=kept)
            for number in numbers:
                del self._segments[number]
                with contextlib.suppress(FileNotFoundError):
                    segment_path(self.path, number).unlink()

    def _taken(self) -> str | None:
        """The atlas's bookkeeping as JSON (taken under its lock), or None if it keeps none."""
        if self._bookkeeping is None:
            return None
        with self.lock:
            taken = self._bookkeeping()
        return json.dumps(taken, separators=(",", ":"), allow_nan=False)

    # -- public ---------------------------------------------------------------------------------
    def flush(self) -> None:
        """Wait until every write made so far is durable; raises a pending commit error."""
        if not self._opened:
            return
        self.commit()
        self._raise_error()

    def _at_exit(self) -> None:
        """An interpreter exiting without `close`: flush the log (durable); checkpoint only if
        chromadb is already loaded (it cannot be imported during shutdown)."""
        self.close(checkpoint="chromadb" in sys.modules)

    def close(self, *, checkpoint: bool = True) -> None:
        """Flush, checkpoint into the collections (with ``checkpoint=False``, as at interpreter
        exit when chromadb is not loaded: store only the bookkeeping), stop the flusher and
        release the directory."""
        if not self._opened or self._closing:
            return
        with self._queue_lock:
            self._closing = True
            self._wake.notify_all()
        if self._thread is not None:
            self._thread.join()
        try:
            self.commit()
            if checkpoint and not self._read_only:
                try:
                    self.checkpoint()
                except Exception as exc:
                    logger.warning("checkpoint of %s at close failed (the log keeps the writes): %s",
                                   self.path, exc)
            elif not self._read_only:  # the log keeps the writes; the bookkeeping is stored all the same
                try:
                    self._store.apply({}, bookkeeping=self._taken())
                except Exception as exc:
                    logger.warning("the bookkeeping of %s could not be stored at close: %s", self.path, exc)
        finally:
            if self._wal is not None:
                self._wal.close()
            self._store.close()
            self._release_lock()
            self._opened = False
            atexit.unregister(self._at_exit)
        self._raise_error()

    def __repr__(self) -> str:
        return f"ChromaBackend({str(self.path)!r}, durability={self.durability!r})"
