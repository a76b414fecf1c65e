"""The graph view for notebooks: `graph_view` of an atlas, and the renderers of `shared_core.engine.views`.

>>> from shared_core import ElasticMemoryAtlas, HashingEmbedder
>>> atlas = ElasticMemoryAtlas(embedder=HashingEmbedder())
>>> _ = atlas.add_memory("User prefers oat milk", namespace="alice")
>>> [n.content for n in graph_view(atlas, namespace="alice").nodes]
['User prefers oat milk']
"""

from __future__ import annotations

from ..atlas import ElasticMemoryAtlas
from ..engine import views
from ..engine.views import EntityNode, GraphView, plot_graph, plot_weights, render_html

__all__ = ["EntityNode", "GraphView", "graph_view", "plot_graph", "plot_weights", "render_html"]


def graph_view(atlas: ElasticMemoryAtlas, *, namespace: str | None = None, max_nodes: int = 400,
               max_entities: int = 100) -> GraphView:
    """The heaviest ``max_nodes`` memories of one namespace (or all) and the edges among them,
    each with its current weight, and the ``max_entities`` entities that link most of them
    (`shared_core.engine.views.graph_view` over the atlas's state)."""
    state = atlas._state  # an app on the facade: the one reader of its state besides the facade itself
    return views.graph_view(state, namespace=namespace, max_nodes=max_nodes, max_entities=max_entities)
