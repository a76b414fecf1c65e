"""`Directory`: the namespace of each stored memory, for an atlas whose backend keeps none.

A lookup by id (`ElasticMemoryAtlas.get`, ``links_to``, lifecycle bookkeeping) must find the
memory's namespace without asking every partition (a scan grows with the namespaces). So the
directory is a dict id -> namespace, except while every registered memory is in one namespace: then
that namespace's partition is the directory (its graph holds exactly the memories registered there:
a write registers what it stored, and a removal takes the memory out of the graph before it
unregisters it), and no entry per memory is kept. The first memory registered in a second namespace
builds the dict from the first namespace's graph (once, ``O(n)``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, MutableMapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..contract import Backend, Partition

__all__ = ["Directory"]


class Directory(MutableMapping[str, str]):
    """Memory id -> namespace (see the module docstring); ``backend`` gives the atlas's backend
    (made on first use), whose ``partition`` looks a namespace's partition up."""

    __slots__ = ("_backend", "_lookup", "_map", "_only")

    def __init__(self, backend: Callable[[], Backend]) -> None:
        self._backend = backend
        self._lookup: Callable[[str], Partition | None] | None = None  # the backend's `partition`
        self._only: str | None = None  # the one namespace holding every registered memory
        self._map: dict[str, str] | None = None  # id -> namespace, once a second namespace has memories

    def _single(self) -> Partition | None:
        if self._only is None:
            return None
        if self._lookup is None:
            self._lookup = self._backend().partition
        return self._lookup(self._only)

    def get(self, node_id: str, default: str | None = None) -> str | None:  # type: ignore[override]
        if self._map is not None:
            return self._map.get(node_id, default)
        only, lookup = self._only, self._lookup  # `_single`, inlined: the write path asks per memory
        part = None if only is None else lookup(only) if lookup is not None else self._single()
        return only if part is not None and part.graph.get_node(node_id) is not None else default

    def __getitem__(self, node_id: str) -> str:
        ns = self.get(node_id)
        if ns is None:
            raise KeyError(node_id)
        return ns

    def __contains__(self, node_id: object) -> bool:
        if self._map is not None:
            return node_id in self._map
        return isinstance(node_id, str) and self.get(node_id) is not None

    def __setitem__(self, node_id: str, namespace: str) -> None:
        if self._map is not None:
            self._map[node_id] = namespace
        elif self._only != namespace:
            part = self._single()
            if part is not None and part.graph.node_count():
                only = self._only
                self._map = {n.id: only for n in part.graph.nodes()} if only is not None else {}
                self._map[node_id] = namespace
                return
            self._only = namespace

    # With one namespace, unregistering is the graph's removal of the memory (which the atlas
    # does first): `__delitem__` and `pop` then only answer whether it was still there.
    def __delitem__(self, node_id: str) -> None:
        if self._map is not None:
            del self._map[node_id]
        elif node_id not in self:
            raise KeyError(node_id)

    def pop(self, node_id: str, default: object = None) -> object:  # type: ignore[override]
        if self._map is not None:
            return self._map.pop(node_id, default)
        return default if self.get(node_id) is None else self._only

    def __iter__(self) -> Iterator[str]:
        if self._map is not None:
            return iter(self._map)
        part = self._single()
        return iter([] if part is None else [n.id for n in part.graph.nodes()])

    def __len__(self) -> int:
        if self._map is not None:
            return len(self._map)
        part = self._single()
        return 0 if part is None else part.graph.node_count()
