"""`EngineState`: what the engine's operations share for one atlas, passed to them explicitly.

The facade (`shared_core.atlas.ElasticMemoryAtlas`) builds one state and hands it to every
component (lifecycle, compression, statistics, persistence, the graph view); no component sees
the facade. The state holds the configuration, the model and the clock, the event log, the one
re-entrant lock every change of the memory takes, the backend (made on first use), the
directory (memory id -> namespace) and the speakers seen in each namespace (a cache the speaker
path's sub-query is guessed from before the lock: `shared_core.engine.decompose.SpeakerBook`).

>>> import threading
>>> from shared_core.engine.events import EventLog
>>> from shared_core.store.memory.backend import InProcessBackend
>>> from shared_core.text.embedding import HashingEmbedder
>>> from shared_core.values.clock import ManualClock
>>> from shared_core.values.config import AtlasConfig
>>> state = EngineState(config=AtlasConfig(), embedder=HashingEmbedder(dim=8), clock=ManualClock(0.0),
...                     events=EventLog(), make_backend=lambda: InProcessBackend(dim=8))
>>> state.embed(["oat milk"]).shape
(1, 8)
"""

from __future__ import annotations

import threading
from collections.abc import Callable, MutableMapping, Sequence

import numpy as np
import numpy.typing as npt

from ..store.contract import AtlasLock, Backend, Partition
from ..store.memory._directory import Directory
from ..text.embedding import Embedder, normalize_rows
from ..values.clock import Clock
from ..values.config import AtlasConfig
from ..values.model import CustomRelation, MemoryNode, with_embedding
from .decompose import SpeakerBook
from .events import EventLog

__all__ = ["EngineState"]


class EngineState:
    """One atlas's shared state (see the module docstring).

    ``backend`` is the backend to use, or None for ``make_backend()`` (the in-process backend) on
    first use; a given backend is attached (`Backend.attach`), and its lock, when it has one, is
    the atlas's lock. The directory is the backend's (`Backend.directory`: the in-process backend's
    looks the partitions up, a server's asks the server), else a dict of the memories written.
    """

    def __init__(self, *, config: AtlasConfig, embedder: Embedder, clock: Clock, events: EventLog,
                 make_backend: Callable[[], Backend], backend: Backend | None = None) -> None:
        self.config = config
        self.embedder = embedder
        self.clock = clock
        self.events = events
        own = None if backend is None else backend.attach(dim=embedder.dim, config=config)
        self.lock: AtlasLock = threading.RLock() if own is None else own
        self._backend = backend
        self._make_backend = make_backend
        # a backend made on first use is the in-process one: a `Directory` over its partitions
        kept = Directory(lambda: self.backend) if backend is None else backend.directory()
        self.where: MutableMapping[str, str] = {} if kept is None else kept
        #: The custom relation names this atlas accepts (`ElasticMemoryAtlas.register_relation`).
        self.relations: dict[str, CustomRelation] = {}
        #: The speakers seen per namespace (written, or found by a recall), to embed sub-queries early.
        self.speakers = SpeakerBook()

    @property
    def backend(self) -> Backend:
        """The backend, made on first use."""
        if self._backend is None:
            with self.lock:
                if self._backend is None:
                    self._backend = self._make_backend()
        return self._backend

    @property
    def made_backend(self) -> Backend | None:
        """The backend if it was given or made already (None: not yet made)."""
        return self._backend

    def partition(self, namespace: str) -> Partition | None:
        return self.backend.partition(namespace)

    def known_speakers(self, namespace: str) -> frozenset[str]:
        """The speakers the `SpeakerBook` knows in ``namespace``, the stored memories' included:
        at the namespace's first use the book is filled once, under the lock. A backend that
        keeps its partitions in process reports each one it opens with its memories (`Backend.watch`:
        the lifecycle's pass over them fills the book), so here it only opens the namespace (a
        lazy backend loads it); a server is asked once (`Partition.speakers`). Afterwards the
        writes keep the book up to date, and this is a set lookup.
        """
        book = self.speakers
        if not book.filled(namespace):
            with self.lock:
                if not book.filled(namespace):
                    backend = self.backend
                    part = backend.partition(namespace)
                    if part is not None and not backend.keeps_partitions_in_process():
                        book.fill(namespace, part.speakers())
                    else:
                        book.fill(namespace)
        return book.known(namespace)

    def embed(self, texts: Sequence[str], *, progress: bool = False) -> npt.NDArray[np.float32]:
        """Unit rows of the embedder's vectors of ``texts`` (a progress bar with ``progress``)."""
        dim = self.embedder.dim
        if not progress:
            return normalize_rows(self.embedder.embed(list(texts)), dim=dim)
        from tqdm.auto import tqdm

        out = np.empty((len(texts), dim), dtype=np.float32)
        step = 64
        with tqdm(total=len(texts), desc="embedding memories", unit="mem") as bar:
            for start in range(0, len(texts), step):
                chunk = texts[start:start + step]
                out[start:start + len(chunk)] = normalize_rows(self.embedder.embed(list(chunk)), dim=dim)
                bar.update(len(chunk))
        return out

    def public(self, part: Partition, node: MemoryNode) -> MemoryNode:
        """The node as the API returns it: with its embedding."""
        return with_embedding(node, part.vectors.get(node.id))
