"""The `GraphStore` seam, the in-process default `DictGraphStore` and `NetworkXGraphStore`.

A graph store holds the memories and typed edges of *one* namespace; the backend gives each
namespace its own store, so no walk can leave a namespace: there is no edge to follow.

`DictGraphStore` is the default because memory per node and the cost of `edges` (the inner loop
of spreading activation) matter at 100k memories: a networkx ``MultiDiGraph`` keeps, per node,
an attribute dict plus successor and predecessor dicts, and per edge nested dicts on each side:
2.2 KB per memory with four edges (tracemalloc, 10k memories, the node and edge objects themselves
not counted); the dict store keeps one list of edges per node, each edge object shared by both
ends: 0.18 KB. networkx stays available for users who want its algorithms on the store.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from .model import MemoryEdge, MemoryNode, Relation

if TYPE_CHECKING:
    import networkx as nx

__all__ = ["DictGraphStore", "GraphStore", "NetworkXGraphStore"]


@runtime_checkable
class GraphStore(Protocol):
    """Nodes and typed edges of one namespace."""

    def put_node(self, node: MemoryNode) -> None:
        """Insert or replace a node (same id)."""

    def get_node(self, node_id: str) -> MemoryNode | None: ...

    def remove_node(self, node_id: str) -> list[MemoryEdge]:
        """Remove a node and its edges; return the removed edges."""

    def put_edge(self, edge: MemoryEdge) -> None:
        """Insert or replace the edge (source, target, relation)."""

    def remove_edge(self, source: str, target: str, relation: Relation) -> bool: ...

    def edges(self, node_id: str) -> list[MemoryEdge]:
        """Every edge into or out of a node."""

    def neighbors(self, node_id: str) -> list[tuple[str, float]]:
        """(neighbour id, edge strength) for every edge into or out of a node."""

    def nodes(self) -> Iterator[MemoryNode]: ...

    def node_count(self) -> int: ...

    def edge_count(self) -> int: ...

    def degree(self, node_id: str) -> int: ...


class DictGraphStore:
    """Nodes in a dict, and for each node one list of its edges (in and out).

    An edge object sits in both its ends' lists; at most one edge per (source, target, relation).

    >>> from shared_core.model import MemoryEdge, MemoryNode, Relation
    >>> g = DictGraphStore()
    >>> for i in "ab":
    ...     g.put_node(MemoryNode(id=i, content=i, namespace="u"))
    >>> g.put_edge(MemoryEdge(source="a", target="b", relation=Relation.BEFORE))
    >>> g.neighbors("b"), g.edge_count()
    ([('a', 1.0)], 1)
    >>> [e.relation.value for e in g.remove_node("a")], g.edges("b")
    (['before'], [])
    """

    __slots__ = ("_adj", "_edges", "_nodes")

    def __init__(self) -> None:
        self._nodes: dict[str, MemoryNode] = {}
        self._adj: dict[str, list[MemoryEdge]] = {}  # only nodes that have edges
        self._edges = 0

    def put_node(self, node: MemoryNode) -> None:
        self._nodes[node.id] = node

    def get_node(self, node_id: str) -> MemoryNode | None:
        return self._nodes.get(node_id)

    def remove_node(self, node_id: str) -> list[MemoryEdge]:
        if self._nodes.pop(node_id, None) is None:
            return []
        removed = self._adj.pop(node_id, [])
        for edge in removed:
            other = edge.target if edge.source == node_id else edge.source
            if other != node_id:
                self._drop(other, edge)
        self._edges -= len(removed)
        return removed

    def put_edge(self, edge: MemoryEdge) -> None:
        old = self._find(edge.source, edge.target, edge.relation)
        if old is not None:
            self._drop(edge.source, old)
            if edge.target != edge.source:
                self._drop(edge.target, old)
            self._edges -= 1
        self._adj.setdefault(edge.source, []).append(edge)
        if edge.target != edge.source:
            self._adj.setdefault(edge.target, []).append(edge)
        self._edges += 1

    def remove_edge(self, source: str, target: str, relation: Relation) -> bool:
        old = self._find(source, target, relation)
        if old is None:
            return False
        self._drop(source, old)
        if target != source:
            self._drop(target, old)
        self._edges -= 1
        return True

    def edges(self, node_id: str) -> list[MemoryEdge]:
        """Out-edges first, then in-edges, each in insertion order (as networkx lists them)."""
        edges = self._adj.get(node_id)
        if not edges:
            return []
        out = [e for e in edges if e.source == node_id]
        if len(out) < len(edges):
            out.extend(e for e in edges if e.source != node_id)
        return out

    def neighbors(self, node_id: str) -> list[tuple[str, float]]:
        return [(e.target if e.source == node_id else e.source, e.strength) for e in self._adj.get(node_id, ())]

    def nodes(self) -> Iterator[MemoryNode]:
        return iter(list(self._nodes.values()))  # a snapshot: callers may remove while iterating

    def node_count(self) -> int:
        return len(self._nodes)

    def edge_count(self) -> int:
        return self._edges

    def degree(self, node_id: str) -> int:
        return len(self._adj.get(node_id, ()))

    def _find(self, source: str, target: str, relation: Relation) -> MemoryEdge | None:
        for edge in self._adj.get(source, ()):
            if edge.source == source and edge.target == target and edge.relation == relation:
                return edge
        return None

    def _drop(self, node_id: str, edge: MemoryEdge) -> None:
        edges = self._adj.get(node_id)
        if edges is None:
            return
        for i, e in enumerate(edges):
            if e is edge:
                del edges[i]
                break
        if not edges:
            del self._adj[node_id]


class NetworkXGraphStore:
    """A `networkx.MultiDiGraph` keyed by relation: at most one edge per (source, target, relation)."""

    __slots__ = ("graph",)

    def __init__(self) -> None:
        import networkx as nx  # imported on use: the default store does not need it

        self.graph: nx.MultiDiGraph = nx.MultiDiGraph()

    def put_node(self, node: MemoryNode) -> None:
        if node.id in self.graph:
            self.graph.nodes[node.id]["m"] = node
        else:
            self.graph.add_node(node.id, m=node)

    def get_node(self, node_id: str) -> MemoryNode | None:
        data = self.graph._node.get(node_id)  # direct dict access: this is the hot path
        if data is None:
            return None
        node: MemoryNode = data["m"]
        return node

    def remove_node(self, node_id: str) -> list[MemoryEdge]:
        if node_id not in self.graph:
            return []
        removed = self.edges(node_id)
        self.graph.remove_node(node_id)
        return removed

    def put_edge(self, edge: MemoryEdge) -> None:
        self.graph.add_edge(edge.source, edge.target, key=edge.relation.value, e=edge)

    def remove_edge(self, source: str, target: str, relation: Relation) -> bool:
        if self.graph.has_edge(source, target, key=relation.value):
            self.graph.remove_edge(source, target, key=relation.value)
            return True
        return False

    def edges(self, node_id: str) -> list[MemoryEdge]:
        if node_id not in self.graph:
            return []
        out = [d["e"] for _, _, d in self.graph.out_edges(node_id, data=True)]
        out.extend(d["e"] for _, _, d in self.graph.in_edges(node_id, data=True)
                   if d["e"].source != d["e"].target)
        return out

    def neighbors(self, node_id: str) -> list[tuple[str, float]]:
        g = self.graph
        if node_id not in g:
            return []
        out = [(v, d["e"].strength) for v, keyed in g._succ[node_id].items() for d in keyed.values()]
        out.extend((u, d["e"].strength) for u, keyed in g._pred[node_id].items() for d in keyed.values())
        return out

    def nodes(self) -> Iterator[MemoryNode]:
        for _, data in self.graph.nodes(data=True):
            yield data["m"]

    def node_count(self) -> int:
        return int(self.graph.number_of_nodes())

    def edge_count(self) -> int:
        return int(self.graph.number_of_edges())

    def degree(self, node_id: str) -> int:
        return int(self.graph.degree(node_id)) if node_id in self.graph else 0
