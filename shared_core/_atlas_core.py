"""The plumbing `ElasticMemoryAtlas` is built on: its engine state and the lookups its operations share.

`AtlasCore` holds no logic of its own. It exposes the `shared_core.engine.state.EngineState`
that the facade's constructor builds (config, embedder, clock, events, backend, lock), embeds
outside the lock (a recall's query and, in the same model call, the sub-query its speaker path
will probably ask for: `_recall_vectors`), finds a stored memory by id (`_locate`:
`MemoryNotFoundError` when it is not in the namespace asked for, `HeldInWorkingMemoryError` for
a held turn), a held turn (`_held`) and the public form of a stored node (`_public`). The facade and its write mixin
(`shared_core._atlas_writes.Writes`) build on it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, MutableMapping, Sequence
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from .engine.decompose import Embed, Heard, PreEmbedded, planned_subquery
from .engine.events import EventLog
from .engine.lifecycle.manager import Lifecycle
from .engine.state import EngineState
from .formulas.subqueries import speaker_of
from .store.contract import AtlasLock, Backend, Partition, StaleView
from .text.embedding import Embedder, normalize_rows
from .text.tokens import TokenCounter, as_token_counter
from .values import _validate as check
from .values.clock import Clock
from .values.config import AtlasConfig
from .values.errors import HeldInWorkingMemoryError, MemoryNotFoundError
from .values.model import MemoryNode

__all__ = ["AtlasCore"]

T = TypeVar("T")


class AtlasCore:
    """The engine's state as the facade's methods read it (`shared_core.engine.state.EngineState`)."""

    _state: EngineState
    _life: Lifecycle
    _counter: TokenCounter | None

    @property
    def config(self) -> AtlasConfig:
        return self._state.config

    @property
    def embedder(self) -> Embedder:
        return self._state.embedder

    @property
    def clock(self) -> Clock:
        return self._state.clock

    @property
    def events(self) -> EventLog:
        return self._state.events

    @property
    def backend(self) -> Backend:
        return self._state.backend

    @property
    def _lock(self) -> AtlasLock:
        return self._state.lock

    @property
    def _where(self) -> MutableMapping[str, str]:
        return self._state.where

    @property
    def token_counter(self) -> TokenCounter:
        if self._counter is None:  # tiktoken's table is built only when needed
            self._counter = as_token_counter(None)
        return self._counter

    def count_tokens(self, text: str) -> int:
        """Exact tokens of ``text`` with the atlas's counter (cl100k_base by default)."""
        return self.token_counter.count(text)

    def _embed(self, texts: Sequence[str], *, progress: bool = False) -> npt.NDArray[np.float32]:
        return self._state.embed(texts, progress=progress)

    def _embed_query(self, text: str) -> npt.NDArray[np.float32]:
        query = getattr(self.embedder, "embed_query", None)
        rows = normalize_rows(query(text), dim=self.embedder.dim) if callable(query) else self._embed([text])
        vector: npt.NDArray[np.float32] = rows[0]
        return vector

    def _embed_many(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Sub-queries' vectors (recall's speaker path), each embedded as a query."""
        return np.stack([self._embed_query(t) for t in texts])

    def _recall_vectors(self, text: str, namespace: str, top_k: int) -> tuple[npt.NDArray[np.float32], Embed]:
        """A recall's query vector and its ``embed`` for sub-queries, before the lock.

        When the speaker path will run (``speaker_weight`` > 0, ``top_k`` >= ``speaker_min_k``)
        and the query names speakers the namespace has (`SpeakerBook`), the sub-query it will
        probably ask for (`planned_subquery`) is embedded now, in the query's model call (an
        embedder with its own ``embed_query`` gets two query calls); ``embed`` answers that text
        from it and embeds any other under the lock, as `_embed_many` does
        (`shared_core.engine.decompose.PreEmbedded`).
        """
        config = self.config
        sub = None
        if config.speaker_weight > 0 and top_k >= config.speaker_min_k:
            sub = planned_subquery(text, self._state.known_speakers(namespace))
        if sub is None:
            return self._embed_query(text), self._embed_many
        if callable(getattr(self.embedder, "embed_query", None)):
            vector, sub_vector = self._embed_query(text), self._embed_query(sub)
        else:
            vector, sub_vector = self._embed([text, sub])
        return vector, PreEmbedded({sub: sub_vector}, self._embed_many)

    def _heard(self, namespace: str) -> Heard:
        """The speakers a recall in ``namespace`` finds, learnt for the next one's guess."""
        book = self._state.speakers
        return lambda speakers: book.heard(namespace, speakers)

    def _learn_speakers(self, nodes: Iterable[MemoryNode]) -> None:
        """The speakers of written memories, learnt for recall's sub-query guess (`_recall_vectors`)."""
        said: dict[str, set[str | None]] = defaultdict(set)
        for node in nodes:
            said[node.namespace].add(speaker_of(node.content, node.metadata))
        for namespace, speakers in said.items():
            self._state.speakers.heard(namespace, speakers)

    def _part(self, namespace: str) -> Partition | None:
        return self.backend.partition(namespace)

    def _recalling(self, namespace: str, run: Callable[[Partition], T]) -> tuple[Partition, T] | None:
        """``run`` (a recall's reads, before anything is written) on the namespace's partition as
        `Backend.recall_partition` hands it out, run again on a fresh one (`partition`) if that
        view was stale (`StaleView`); None: no such namespace."""
        part = self.backend.recall_partition(namespace)
        if part is not None:
            try:
                return part, run(part)
            except StaleView:
                part = self._part(namespace)
        return None if part is None else (part, run(part))

    def _locate(self, node_id: object, namespace: str | None, name: str = "node_id"
                ) -> tuple[Partition, MemoryNode]:
        node_id = check.node_id(node_id, name)
        namespace = None if namespace is None else check.namespace(namespace)
        ns = self._where.get(node_id)
        if ns is None and self._held(node_id, namespace) is not None:
            raise HeldInWorkingMemoryError(
                f"{node_id!r} is held in working memory (the write filter kept it out of the graph), not a stored "
                "memory: get, update_memory and forget accept it; to link it, write it with keep=True")
        if ns is None or (namespace is not None and ns != namespace):
            raise MemoryNotFoundError(f"no memory with id {node_id!r}"
                                      + (f" in namespace {namespace!r}" if namespace else ""))
        part = self._part(ns)
        node = part.graph.get_node(node_id) if part else None
        if part is None or node is None:
            raise MemoryNotFoundError(f"no memory with id {node_id!r}")
        return part, node

    def _held(self, node_id: object, namespace: str | None) -> MemoryNode | None:
        """The turn held in working memory under this ``wm-`` id (in ``namespace``, when given)."""
        node = self._life.held.find(node_id) if isinstance(node_id, str) else None
        return None if node is None or (namespace is not None and node.namespace != namespace) else node

    def _public(self, part: Partition, node: MemoryNode) -> MemoryNode:
        return self._state.public(part, node)
