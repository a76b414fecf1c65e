"""`NamespaceBook`: what the lifecycle keeps per namespace, so that many namespaces cost what
they hold.

Three jobs, all called under the atlas's lock:

- **bytes besides the memories.** A partition's edges (`shared_core.engine.lifecycle.capacity.EDGE_OVERHEAD`
  each), its vector index's spare or missing bytes (`partition_extra`) and, in process, the
  partition's own objects (`shared_core.engine.lifecycle.capacity.PARTITION_OVERHEAD`, when
  `Backend.keeps_partitions_in_process`). Summing them over every
  namespace on each write made a write's cost grow with the number of namespaces, so each
  namespace's figure is cached and recomputed only for the namespaces a write, a removal or a
  link has touched (`touch`), plus a full recount after as many writes as there are namespaces
  (so a change that no path reported is counted within that many writes, at O(1) a write).
- **empty namespaces are dropped.** A removal that leaves a partition without memories
  (`removed`) marks its namespace; `drop_empty` drops the marked ones that are still empty, at
  points where no caller holds their partition (the end of a write, a forget, a compression).
  The atlas's lock covers both the drop and every write, so a write never lands in a dropped
  partition: it either finds the partition before the drop (and the drop then finds it not
  empty) or creates a new one after it. Only backends that keep their partitions in this
  process drop them (`Backend.keeps_partitions_in_process`): a server's namespace may be
  shared with other processes, which could be writing to it.
- **the namespace limit** (`AtlasConfig.max_namespaces`): `check_limit` refuses a write that
  would bring the namespaces holding memories past it, before anything is stored.

>>> from shared_core import AtlasConfig, ElasticMemoryAtlas, HashingEmbedder
>>> atlas = ElasticMemoryAtlas(embedder=HashingEmbedder(), config=AtlasConfig(max_namespaces=1))
>>> node = atlas.add_memory("hello", namespace="a")
>>> atlas.add_memory("hello", namespace="b")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
shared_core.values.errors.NamespaceLimitError: namespace 'b' would be the atlas's 2nd namespace with memories; ...
>>> atlas.forget(node.id)
>>> atlas.backend.partition("a") is None, atlas.add_memory("hello", namespace="b").namespace
(True, 'b')
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from ...values.errors import NamespaceLimitError
from .capacity import EDGE_OVERHEAD, PARTITION_OVERHEAD

if TYPE_CHECKING:
    from ...store.contract import Backend, Partition

__all__ = ["NamespaceBook", "partition_extra"]


def partition_extra(part: Partition, *, in_process: bool) -> int:
    """A partition's bytes besides its memories' own: its edges, its vector index's bytes beyond
    (or, negative, short of) its rows as each memory counts them, and, ``in_process`` (the
    backend keeps its partitions in this process), the partition's own objects."""
    extra = part.graph.edge_count() * EDGE_OVERHEAD + _vector_slack(part)
    return extra + PARTITION_OVERHEAD if in_process else extra


class NamespaceBook:
    """Per-namespace accounting, the drop of empty namespaces and the namespace limit (see the
    module docstring); ``backend`` gives the atlas's backend (made on first use)."""

    __slots__ = ("_backend", "_emptied", "_extra", "_since_full", "_stale", "_total")

    def __init__(self, backend: Callable[[], Backend]) -> None:
        self._backend = backend
        self._extra: dict[str, int] = {}  # namespace -> its `partition_extra`, as last counted
        self._total = 0  # their sum
        self._stale: set[str] | None = None  # namespaces to recount (None: all)
        self._since_full = 0
        self._emptied: set[str] = set()

    def extra_of(self, part: Partition) -> int:
        """`partition_extra` of ``part``, a partition of the atlas's backend."""
        return partition_extra(part, in_process=self._backend().keeps_partitions_in_process())

    def touch(self, namespaces: Iterable[str]) -> None:
        """Recount these namespaces' extra bytes at the next `extra_bytes`."""
        if self._stale is not None:
            self._stale.update(namespaces)

    def touch_all(self) -> None:
        self._stale = None

    def wrote(self, count: int) -> None:
        """Count ``count`` written memories towards the periodic full recount."""
        self._since_full += count
        if self._since_full > max(1024, len(self._extra)):
            self._stale = None

    def extra_bytes(self) -> int:
        """The sum of `partition_extra` over every namespace (recounting the touched ones)."""
        backend = self._backend()
        if self._stale is None:
            self._extra, self._total, self._since_full = {}, 0, 0
            names: Iterable[str] = backend.namespaces()
        else:
            names = self._stale
        for ns in list(names):
            part = backend.partition(ns)
            new = 0 if part is None else partition_extra(part, in_process=backend.keeps_partitions_in_process())
            old = self._extra.pop(ns, 0)
            if part is not None:
                self._extra[ns] = new
            self._total += new - old
        self._stale = set()
        return self._total

    def removed(self, part: Partition) -> None:
        """After a removal from ``part``: mark its namespace if it holds no memory now."""
        self.touch((part.namespace,))
        if part.graph.node_count() == 0:
            self._emptied.add(part.namespace)

    def drop_empty(self, also: Iterable[str] = ()) -> list[str]:
        """Drop the marked namespaces, and ``also`` these, that are empty (in process only);
        returns them."""
        marked, self._emptied = self._emptied | set(also), set()
        if not marked:
            return []
        backend = self._backend()
        if not backend.keeps_partitions_in_process():
            return []
        dropped = []
        for ns in marked:
            part = backend.partition(ns)
            if part is not None and part.graph.node_count() == 0:
                backend.drop(ns)
                dropped.append(ns)
        self.touch(dropped)
        return dropped

    def check_limit(self, namespaces: Iterable[str], limit: int | None) -> None:
        """Raise `NamespaceLimitError` if writing to ``namespaces`` would bring the namespaces
        that hold memories past ``limit`` (None: no limit). Costs nothing while every namespace
        written already holds memories."""
        if limit is None:
            return
        backend = self._backend()
        new = sorted(ns for ns in set(namespaces) if not _holds_memories(backend, ns))
        if not new:
            return
        self.drop_empty()
        held = sum(1 for ns in backend.namespaces() if _holds_memories(backend, ns))
        if held + len(new) > limit:
            first = max(0, limit - held)  # the first new namespace that does not fit
            raise NamespaceLimitError(
                f"namespace {new[first]!r} would be the atlas's {_ordinal(held + first + 1)} namespace with "
                f"memories; AtlasConfig.max_namespaces is {limit} (forget a namespace's memories to free its place)")


def _holds_memories(backend: Backend, namespace: str) -> bool:
    part = backend.partition(namespace)
    return part is not None and part.graph.node_count() > 0


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _vector_slack(part: Partition) -> int:
    """Bytes the vector index holds beyond (or, negative, short of) its rows as accounted.

    A row is counted as 4 bytes a dimension (`shared_core.engine.lifecycle.capacity.node_bytes`, whatever index
    holds it, so the running total needs no re-basing when a namespace moves between indexes);
    this corrects the sum to what the index holds (``nbytes``): a growing matrix's spare
    capacity, an approximate index's lists (with their spare room), labels, direct map and
    centroids. With float16 storage (``AtlasConfig.ann_vector_dtype``) a row takes ``2 dim + 16``
    bytes, so the correction is negative: counting 4 a dimension there would overstate each
    memory and a capped atlas would evict memories before it must."""
    nbytes = part.vectors.nbytes()
    if nbytes is None:
        return 0
    return int(nbytes) - len(part.vectors) * part.vectors.dim * 4
