"""The `GraphStore` seam and its in-process default on networkx.

A graph store holds the memories and typed edges of *one* namespace; the backend gives each
namespace its own store, so no walk can leave a namespace: there is no edge to follow.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol, runtime_checkable

import networkx as nx

from .model import MemoryEdge, MemoryNode, Relation

__all__ = ["GraphStore", "NetworkXGraphStore"]


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


class NetworkXGraphStore:
    """A `networkx.MultiDiGraph` keyed by relation: at most one edge per (source, target, relation)."""

    __slots__ = ("graph",)

    def __init__(self) -> None:
        self.graph = nx.MultiDiGraph()

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
