"""`NetworkXGraphStore`: the in-process graph store on a `networkx.MultiDiGraph`.

For users who want networkx's algorithms on a namespace's memories (paths, centrality,
communities); the default store (`DictGraphStore`) keeps edges in typed arrays instead, which
costs less memory and reads a node's links faster. One store holds one namespace.

>>> from shared_core.values.model import MemoryNode
>>> store = NetworkXGraphStore()
>>> store.put_node(MemoryNode(id="a", content="x", namespace="ns", turn=1, accessed_turn=1))
>>> store.node_count(), store.get_node("a").content
(1, 'x')
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from ...values.model import AnyRelation, MemoryEdge, MemoryNode
from ..base import GraphStoreBase
from ..contract import Link

if TYPE_CHECKING:
    import networkx as nx

__all__ = ["NetworkXGraphStore"]


class NetworkXGraphStore(GraphStoreBase):
    """A `networkx.MultiDiGraph` keyed by relation: at most one edge per (source, target, relation)."""

    __slots__ = ("chatter", "graph")

    def __init__(self) -> None:
        import networkx as nx  # imported on use: the default store does not need it

        self.graph: nx.MultiDiGraph = nx.MultiDiGraph()
        self.chatter: set[str] = set()  # the nodes flagged backchannels (`mark_chatter`)

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
        self.chatter.discard(node_id)
        return removed

    def mark_chatter(self, flags: Iterable[tuple[str, bool]]) -> None:
        for node_id, flag in flags:
            if flag and node_id in self.graph:
                self.chatter.add(node_id)
            else:
                self.chatter.discard(node_id)

    def is_chatter(self, node_id: str) -> bool:
        return node_id in self.chatter

    def put_edge(self, edge: MemoryEdge) -> None:
        self.graph.add_edge(edge.source, edge.target, key=edge.relation.value, e=edge)

    def remove_edge(self, source: str, target: str, relation: AnyRelation) -> bool:
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

    def links(self, node_id: str) -> list[Link]:
        g = self.graph
        if node_id not in g:
            return []
        out = [(v, d["e"].relation, d["e"].strength) for v, keyed in g._succ[node_id].items() for d in keyed.values()]
        out.extend((u, d["e"].relation, d["e"].strength) for u, keyed in g._pred[node_id].items()
                   for d in keyed.values() if u != node_id)
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
