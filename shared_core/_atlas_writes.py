"""The writes of `ElasticMemoryAtlas`: add, link, update (a new version), forget, end a session.

Each checks its input first, runs the model outside the atlas's lock, then applies the write to
the namespace's partition under the lock, whole or not at all: a failure part way undoes what
the call wrote (see `shared_core.engine.writes`). Mixed into the facade (`shared_core.atlas`).

>>> from shared_core import ElasticMemoryAtlas, HashingEmbedder
>>> atlas = ElasticMemoryAtlas(embedder=HashingEmbedder())
>>> old = atlas.add_memory("User lives in Paris", namespace="alice")
>>> new = atlas.update_memory(old.id, "User lives in Lyon")
>>> [n.content for n in atlas.history(new.id)]
['User lives in Paris', 'User lives in Lyon']
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import numpy.typing as npt

from ._atlas_core import AtlasCore
from ._atlas_mixins import Relations
from .engine import writes
from .engine.lifecycle.maintenance import summarize_session
from .engine.writes import MemorySpec, build_spec, insert_batches, insert_memory, specs_from_items
from .formulas.subqueries import labelled
from .store.contract import Partition
from .values import _validate as check
from .values.errors import InvalidInputError, InvalidMemoryError, MemoryNotFoundError, NamespaceViolationError
from .values.model import MemoryEdge, MemoryNode, Relation

__all__ = ["LinkSpec", "Writes"]

LinkSpec = str | tuple[str, str] | tuple[str, str, float]


class Writes(Relations, AtlasCore):
    """The facade's writes (`add_memory`, `add_memories`, `link`, `update_memory`, `forget`, `end_session`)."""

    def add_memory(self, content: str, *, namespace: str, session_id: str | None = None,
                   timestamp: Any = None, metadata: Mapping[str, Any] | None = None,
                   importance: float | None = None, pinned: bool = False, ttl: float | None = None,
                   links_to: Sequence[LinkSpec] = (), embedding: Any = None, keep: bool = False,
                   valid_from: Any = None) -> MemoryNode:
        """Store one memory and link it: ``before`` from the session's previous memory,
        ``similar_to`` to the closest memories of the namespace, and any ``links_to`` given.

        ``timestamp`` is when the remembered thing happened (default: now); ``ttl`` seconds
        until it expires; ``embedding`` skips the model; ``importance`` is the starting weight
        (default 1.0); ``valid_from`` (a datetime, ISO string or POSIX seconds; default: now)
        is when the fact became true, which ``as_of`` recall reads. Returns the stored node.

        A turn whose speaker is only in ``metadata`` (``{"speaker": "Kate"}``, no ``"Kate: "``
        label in ``content``) is embedded as the labelled line ``"Kate: ..."``
        (`shared_core.formulas.subqueries.labelled`), so that its vector carries the speaker as a
        labelled turn's does, and the keyword index holds that line too
        (`shared_core.formulas.subqueries.keyword_text`); the stored content is exactly ``content``.

        With the write filter on (`AtlasConfig.managed`), a turn it scores as unimportant is held
        in working memory instead and comes back with ``kind="working"`` and a ``wm-`` id, which
        `get`, `update_memory` and `forget` accept (other calls raise `HeldInWorkingMemoryError`).
        A write that states intent always passes the filter: ``keep=True``, an explicit
        ``importance``, ``pinned=True`` or ``links_to``.
        """
        spec = build_spec(self.config, self.embedder.dim, content, namespace=namespace,
                          session_id=session_id, timestamp=timestamp, metadata=metadata,
                          importance=importance, pinned=pinned, ttl=ttl, links_to=links_to,
                          embedding=embedding, keep=keep, valid_from=valid_from)
        return self._write([spec], progress=False)[0]

    def add_memories(self, items: Sequence[str | Mapping[str, Any]], *, namespace: str,
                     session_id: str | None = None, progress: bool | None = None) -> list[MemoryNode]:
        """Store many memories with one embedding call; all or nothing.

        Items are strings or dicts with the keyword arguments of `add_memory` (``content``
        required; ``namespace`` and ``session_id`` default to this call's). A progress bar shows
        by default for 256+ items in a terminal or notebook.
        """
        with writes.collector_paused():  # for the validation too (see _write)
            specs = specs_from_items(self.config, self.embedder.dim, items, namespace=namespace, session_id=session_id)
        show = len(specs) >= 256 and (sys.stderr.isatty() or "ipykernel" in sys.modules)
        return self._write(specs, progress=show if progress is None else bool(progress))

    def _write(self, specs: Sequence[MemorySpec], *, progress: bool) -> list[MemoryNode]:
        held = self._life.hold_back(specs)  # the write filter: unimportant turns stay in working memory only
        specs = [s for i, s in enumerate(specs) if i not in held]
        missing = [i for i, s in enumerate(specs) if s.embedding is None]
        vectors: dict[int, npt.NDArray[np.float32]] = {}
        if missing:  # the model runs with the collector on: it is process-wide, and a model call can be long
            embedded = self._embed([labelled(specs[i].content, specs[i].metadata) for i in missing],
                                   progress=progress)
            vectors = dict(zip(missing, embedded, strict=True))
        mentions = writes.entity_keys([s.content for s in specs], self.config, llm=self._life.llm)  # outside the lock
        with writes.collector_paused(), self._lock:  # no cycles to find (see collector_paused)
            self._check_links(specs)
            self._life.namespaces.check_limit((s.namespace for s in specs), self.config.max_namespaces)
            now = self.clock.now()
            written: list[tuple[Partition, MemoryNode]] = []
            try:
                batch = [spec.embedding if spec.embedding is not None else vectors[i]
                         for i, spec in enumerate(specs)]
                where = self._state.where
                for part, nodes in insert_batches(self.backend, specs, batch, now, self.config,
                                                  on_rollback=self._life.remove, mentions=mentions):
                    for node in nodes:  # each group is all-or-nothing; earlier groups are undone below
                        where[node.id] = part.namespace
                        if node.expires_at is not None:
                            self._life.schedule_expiry(node)
                        written.append((part, node))
            except BaseException:
                for part, node in reversed(written):
                    self._life.remove(part, node, kind=None, reason="rollback")
                first: dict[str, tuple[Partition, int]] = {}  # each namespace's first turn this write took
                for part, node in written:
                    first.setdefault(part.namespace, (part, node.turn))
                for part, turn in first.values():
                    part.turn = turn - 1
                self._life.drop_empty(also={s.namespace for s in specs})  # a namespace the failed write made
                raise
            self._learn_speakers(node for _, node in written)
            self.events.emit_many("add", namespaces=[part.namespace for part, _ in written],
                                  node_ids=[node.id for _, node in written], at=now, reason="add_memory",
                                  session_id=[node.session_id for _, node in written])
            self._life.after_write(now, protect={node.id for _, node in written})
            kept = writes.returned_nodes(written, batch, self._where)  # the batch's rows: no read back
            out = self._life.hold(held, kept, now)
        self._life.settle(kept)  # the contradiction check and due compression, outside the lock
        return out

    def _insert(self, spec: MemorySpec, vec: npt.NDArray[np.float32], now: float, *,
                mentions: Sequence[Sequence[str]] | None = None) -> tuple[Partition, MemoryNode]:
        part = self.backend.partition(spec.namespace, create=True)
        assert part is not None
        node = insert_memory(part, spec, vec, now, self.config, on_rollback=self._life.remove, mentions=mentions)
        self._where[node.id] = spec.namespace
        if node.expires_at is not None:
            self._life.schedule_expiry(node)
        return part, node

    def _check_links(self, specs: Sequence[MemorySpec]) -> None:
        for spec in specs:
            for target, _, _ in spec.links:
                ns = self._where.get(target)
                if ns is None:
                    raise MemoryNotFoundError(f"links_to: no memory with id {target!r}")
                if ns != spec.namespace:
                    raise NamespaceViolationError(
                        f"links_to: memory {target!r} is not in namespace {spec.namespace!r}")

    def link(self, source: str, target: str, *, relation: str | Relation = "related_to",
             strength: float = 1.0, metadata: Mapping[str, Any] | None = None,
             namespace: str | None = None) -> MemoryEdge:
        """Add (or replace) a typed edge between two memories of the same namespace."""
        rel = self._relation(relation)
        strength = check.number(strength, "strength", minimum=0.0)
        meta = check.metadata(metadata)
        with self._lock:
            part, _ = self._locate(source, namespace, "source")
            ns_target = self._where.get(check.node_id(target, "target"))
            if ns_target is None and self._held(target, None) is not None:
                self._locate(target, None, "target")  # raises HeldInWorkingMemoryError
            if ns_target is None:
                raise MemoryNotFoundError(f"no memory with id {target!r}")
            if ns_target != part.namespace:
                raise NamespaceViolationError(
                    f"cannot link {source!r} to {target!r}: they are in different namespaces")
            if source == target:
                raise InvalidInputError(f"cannot link memory {source!r} to itself")
            now = self.clock.now()
            edge = MemoryEdge(source=source, target=target, relation=rel, strength=strength,
                              created_at=now, metadata=meta)
            part.graph.put_edge(edge)
            self._life.namespaces.touch((part.namespace,))
            self.events.emit("link", namespace=part.namespace, node_id=source, at=now,
                             reason=rel.value, target=target)
            return edge

    def update_memory(self, node_id: str, content: str, *, metadata: Mapping[str, Any] | None = None,
                      importance: float | None = None, embedding: Any = None,
                      namespace: str | None = None, session_id: str | None = None,
                      reason: str = "update", valid_from: Any = None) -> MemoryNode:
        """Store a corrected version: a new node that ``supersedes`` the old one.

        The old node is kept, with ``valid_to`` set, and leaves recall unless
        ``include_history=True``; `history` returns the chain. Metadata merges into the old;
        the new version stays in the old one's session unless ``session_id`` names the session
        in which the correction was made. ``valid_from`` (default: now) is when the correction
        became true: the old version is valid until then (it must not be before the old one's
        own ``valid_from``).

        A held turn's ``wm-`` id is accepted: the correction is stored as a new memory (the
        caller asked for it: the write filter passes it) and the held turn leaves working memory.
        """
        with self._lock:
            held = self._held(node_id, None if namespace is None else check.namespace(namespace))
        if held is not None:
            node = self.add_memory(content, namespace=held.namespace, session_id=held.session_id if session_id is None
                                   else session_id, metadata={**held.metadata, **check.metadata(metadata)},
                                   importance=held.importance if importance is None else importance,
                                   embedding=embedding, keep=True)
            with self._lock:
                self._life.held.remove(held.id)
            return node
        with self._lock:
            part, old = self._newest(node_id, namespace)
            merged = {**old.metadata, **check.metadata(metadata)}
            spec = build_spec(self.config, self.embedder.dim, content, namespace=old.namespace,
                              session_id=old.session_id if session_id is None else session_id,
                              metadata=merged,
                              importance=old.importance if importance is None else importance,
                              pinned=old.pinned, embedding=embedding, valid_from=valid_from)
            if spec.valid_from is not None and spec.valid_from < old.valid_from:
                raise InvalidMemoryError(f"valid_from {spec.valid_from!r} is before the old version's "
                                         f"valid_from {old.valid_from!r}")
        vec = spec.embedding if spec.embedding is not None else self._embed([labelled(spec.content, spec.metadata)])[0]
        mentions = writes.entity_keys([spec.content], self.config, llm=self._life.llm)  # outside the lock
        with self._lock:
            part, old = self._newest(node_id, namespace)
            now = self.clock.now()
            new_part, new = self._insert(spec, vec, now, mentions=mentions)
            ends = new.valid_from if spec.valid_from is not None else now
            marked = False
            try:  # all or nothing: a failure below removes the new version and restores the old
                part.graph.put_edge(MemoryEdge(source=new.id, target=old.id, relation=Relation.SUPERSEDES,
                                               strength=1.0, created_at=now))
                part.graph.put_node(replace(old, valid_to=ends))
                marked = True
                part.inactive.add(old.id)
            except BaseException:
                self._life.remove(new_part, new, kind=None, reason="rollback")  # its edges go with it
                part.turn = new.turn - 1  # the turn the new version took
                if marked:
                    part.graph.put_node(old)
                    part.inactive.discard(old.id)
                raise
            self._learn_speakers((new,))
            self.events.emit("update", namespace=part.namespace, node_id=new.id, at=now,
                             reason=reason, supersedes=old.id)
            self._life.after_write(now, protect={new.id})
            return self._public(new_part, new)

    def _newest(self, node_id: str, namespace: str | None) -> tuple[Partition, MemoryNode]:
        """The memory to update (`_locate`), refused if a newer version superseded it."""
        part, old = self._locate(node_id, namespace)
        if old.valid_to is not None:
            raise InvalidInputError(f"memory {node_id!r} was already superseded; update its newest version")
        return part, old

    def forget(self, node_id: str, *, namespace: str | None = None) -> None:
        """Delete a memory and its edges for good (unlike `update_memory`, which keeps history).
        A held turn's ``wm-`` id is accepted: the turn leaves working memory."""
        with self._lock:
            held = self._held(node_id, None if namespace is None else check.namespace(namespace))
            if held is not None:
                self._life.held.remove(held.id)
                self.events.emit("forget", namespace=held.namespace, node_id=held.id, at=self.clock.now(),
                                 reason="forget", session_id=held.session_id)
                return
            part, node = self._locate(node_id, namespace)
            self._life.remove(part, node, kind="forget", reason="forget")
            self._life.drop_empty()

    def end_session(self, session_id: str, *, namespace: str, mode: str = "fade",
                    fade_factor: float = 0.5, summarize: bool = False) -> int:
        """End a session: ``"delete"`` its memories (pinned ones stay) or ``"fade"`` their weights.

        With ``summarize=True`` a session summary is written first, whatever the session's length
        (``kind="summary"``, ``metadata["summary"] == "session"``, ``summarizes`` edges to the
        session's current memories; see `shared_core.engine.lifecycle.maintenance`); it is kept
        by either mode. Returns the number of memories deleted or faded.
        """
        session = check.session(session_id)
        ns = check.namespace(namespace)
        if mode not in ("delete", "fade"):
            raise InvalidInputError(f"mode must be 'delete' or 'fade', got {mode!r}")
        factor = check.number(fade_factor, "fade_factor", minimum=0.0, maximum=1.0)
        summary = summarize_session(self._life, ns, session) \
            if check.flag(summarize, "summarize") and session is not None else None
        with self._lock:
            part = self._part(ns)
            self._life.held.drop(ns, session)
            if part is None or session not in part.sessions:
                return 0
            now = self.clock.now()
            touched = 0
            for nid in list(part.sessions[session]):
                node = part.graph.get_node(nid)
                if node is None or node.pinned or (summary is not None and nid == summary.id):
                    continue
                if mode == "delete":
                    self._life.remove(part, node, kind="forget", reason="end_session")
                else:
                    part.fade(nid, factor, now=now, config=self.config)  # one atomic step
                    self.events.emit("fade", namespace=ns, node_id=nid, at=now, reason="end_session")
                touched += 1
            self.events.emit("end_session", namespace=ns, node_id=None, at=now, reason=mode,
                             session_id=session, count=touched)
            self._life.drop_empty()
            return touched
