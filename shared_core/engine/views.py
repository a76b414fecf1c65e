"""Seeing the memory: an interactive graph page, static matplotlib plots, and their data.

`to_html` writes one self-contained page (no network): vis-network's JavaScript is read from the
``pyvis`` wheel (installed by the ``notebooks`` extra) and inlined, nodes are coloured by session
or type and sized by weight, edges are coloured by relation (with a legend), and hovering a node
shows its text, weight and timestamps. Entities (`shared_core.text.entities`) that two or more of
the drawn memories mention are drawn as dark diamonds, linked to those memories by dotted
``mentions`` edges (both in the legend). A memory replaced by a newer version (``valid_to`` passed)
is drawn hollow and dashed, labelled "superseded". Edges between the same two memories (a new
version's ``supersedes`` and ``similar_to``, say) curve apart instead of lying on top of each
other. The graph fills the window below a one-line header.

In Jupyter, typing ``atlas`` shows the same page in an ``iframe``; there the library is embedded
gzip-compressed (base64) and unpacked by the browser (``DecompressionStream``), so each display
carries about a third of the page's bytes and still needs no network and no other cell.
"""

from __future__ import annotations

import base64
import functools
import gzip
import html
import importlib.util
import json
import math
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..formulas.decay import decayed_weight, effective_weight
from ..values import _validate as check
from ..values.errors import InvalidInputError, MissingDependencyError
from ..values.model import AnyRelation, MemoryEdge, MemoryNode, Relation, iso

if TYPE_CHECKING:
    from .state import EngineState

__all__ = ["EntityNode", "GraphView", "graph_view", "plot_graph", "plot_weights", "render_html"]

PALETTE = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
           "#9c755f", "#bab0ac")
RELATION_COLOURS = {
    Relation.BEFORE: "#c7c7c7", Relation.AFTER: "#c7c7c7", Relation.SIMILAR_TO: "#76b7b2",
    Relation.RELATED_TO: "#8c8c8c", Relation.CAUSED_BY: "#e15759", Relation.PART_OF: "#59a14f",
    Relation.CONTRADICTS: "#d62728", Relation.SUPERSEDES: "#b07aa1", Relation.SUMMARIZES: "#edc948",
    Relation.RESPONDS_TO: "#9c755f",
}


#: How entity nodes and their ``mentions`` edges are drawn.
ENTITY_COLOUR = "#3b3b3b"
MENTIONS_COLOUR = "#9e9e9e"

#: Colours of custom relations (`CustomRelation`), chosen by a stable hash of the name.
CUSTOM_COLOURS = ("#4e79a7", "#f28e2b", "#17becf", "#bcbd22", "#ff9da7", "#1f77b4")


def relation_colour(relation: AnyRelation) -> str:
    """A relation's edge colour: the built-in's, else one of `CUSTOM_COLOURS` by its name."""
    if isinstance(relation, Relation):
        return RELATION_COLOURS.get(relation, "#8c8c8c")
    return CUSTOM_COLOURS[zlib.crc32(relation.value.encode()) % len(CUSTOM_COLOURS)]


@dataclass(frozen=True, slots=True)
class EntityNode:
    """An entity of the view: its key, its namespace and the drawn memories that mention it."""

    key: str
    namespace: str
    mentions: tuple[str, ...]

    @property
    def id(self) -> str:
        """The node id in a drawing (no memory id has a colon)."""
        return f"entity:{self.namespace}:{self.key}"


@dataclass(frozen=True, slots=True)
class GraphView:
    """A consistent snapshot of (part of) the graph, with each memory's current weight, and the
    entities that link two or more of its memories."""

    nodes: tuple[MemoryNode, ...]
    edges: tuple[MemoryEdge, ...]
    weights: dict[str, float]
    truncated: int
    entities: tuple[EntityNode, ...] = field(default=())


def graph_view(state: EngineState, *, namespace: str | None = None, max_nodes: int = 400,
               max_entities: int = 100) -> GraphView:
    """The heaviest ``max_nodes`` memories of one namespace (or all, with None), the edges among
    them, and the ``max_entities`` entities that most of them mention (at least two each). A
    namespace that is not a non-empty string raises `InvalidInputError` (an empty one is not "all
    namespaces")."""
    if namespace is not None:
        namespace = check.namespace(namespace)
    if isinstance(max_nodes, bool) or not isinstance(max_nodes, int) or max_nodes < 1:
        raise InvalidInputError(f"max_nodes must be >= 1, got {max_nodes!r}")
    if isinstance(max_entities, bool) or not isinstance(max_entities, int) or max_entities < 0:
        raise InvalidInputError(f"max_entities must be >= 0, got {max_entities!r}")
    with state.lock:
        now = state.clock.now()
        names = [namespace] if namespace is not None else list(state.backend.namespaces())
        scored: list[tuple[float, MemoryNode, Any]] = []
        for ns in names:
            part = state.backend.partition(ns)
            if part is None:
                continue
            for node in part.graph.nodes():
                w = effective_weight(node, now=now, turn=part.turn, config=state.config)
                scored.append((w, node, part))
        scored.sort(key=lambda t: (-t[0], t[1].created_at))
        kept = scored[:max_nodes]
        ids = {node.id for _, node, _ in kept}
        edges = [e for _, node, part in kept for e in part.graph.edges(node.id)
                 if e.source == node.id and e.target in ids]
        entities = _entities(kept, max_entities) if max_entities else ()
        return GraphView(tuple(n for _, n, _ in kept), tuple(edges), {n.id: w for w, n, _ in kept},
                         len(scored) - len(kept), entities)


def _entities(kept: list[tuple[float, MemoryNode, Any]], limit: int) -> tuple[EntityNode, ...]:
    """The entities two or more of the kept memories mention, the most mentioned ``limit``
    first (ties by key), from each partition's `EntityIndex` (one call per namespace)."""
    by_part: dict[str, tuple[Any, list[str]]] = {}
    for _, node, part in kept:
        by_part.setdefault(node.namespace, (part, []))[1].append(node.id)
    found: list[EntityNode] = []
    for ns, (part, ids) in by_part.items():
        mentions: dict[str, list[str]] = {}
        for node_id, keys in part.entities.entities_of(ids).items():
            for key in keys:
                mentions.setdefault(key, []).append(node_id)
        found.extend(EntityNode(key, ns, tuple(m)) for key, m in mentions.items() if len(m) >= 2)
    found.sort(key=lambda e: (-len(e.mentions), e.namespace, e.key))
    return tuple(found[:limit])


@functools.cache
def _vis_js() -> str:
    spec = importlib.util.find_spec("pyvis")  # located, not imported: we only need its bundled file
    if spec is None or spec.origin is None:
        raise MissingDependencyError.for_extra("pyvis", "notebooks")
    lib = Path(spec.origin).parent / "lib"
    candidates = sorted(lib.glob("vis-*/vis-network.min.js"))
    if not candidates:
        raise MissingDependencyError("pyvis is installed without vis-network.min.js; reinstall it")
    return candidates[-1].read_text(encoding="utf-8")


@functools.cache
def _vis_js_packed() -> str:
    """vis-network's code gzip-compressed and base64-encoded (``mtime=0``: the same bytes every time)."""
    return base64.b64encode(gzip.compress(_vis_js().encode("utf-8"), compresslevel=9, mtime=0)).decode("ascii")


def _group_key(node: MemoryNode, color_by: str, *, several_namespaces: bool = False) -> str:
    if color_by == "type":
        return node.type or node.kind
    if color_by == "namespace":
        return node.namespace
    # sessions are named per namespace: two users' "monday" are different sessions
    return f"{node.namespace} · {node.session_id}" if several_namespaces else str(node.session_id)


def _several_namespaces(view: GraphView) -> bool:
    return len({n.namespace for n in view.nodes}) > 1


def _payload(view: GraphView, color_by: str, now: float | None = None) -> dict[str, Any]:
    groups: dict[str, str] = {}
    several = _several_namespaces(view)
    nodes = []
    for node in view.nodes:
        key = _group_key(node, color_by, several_namespaces=several)
        colour = groups.setdefault(key, PALETTE[len(groups) % len(PALETTE)])
        weight = view.weights.get(node.id, node.weight)
        tip = (f"{node.content}\n\nweight {weight:.2f} (importance {node.importance:g}, "
               f"{node.access_count} recalls){' · pinned' if node.pinned else ''}\n"
               f"happened {iso(node.timestamp)}\nstored {iso(node.created_at)}\n"
               f"last recalled {iso(node.last_accessed_at)}\n"
               f"{node.namespace} · session {node.session_id} · {node.kind}")
        label = node.content if len(node.content) <= 28 else node.content[:27] + "…"
        item: dict[str, Any] = {
            "id": node.id, "label": label, "title": tip, "value": round(8 + 14 * math.sqrt(weight), 2),
            "color": colour, "shape": "star" if node.kind == "summary" else "dot",
            "borderWidth": 3 if node.pinned else 1}
        if _superseded(node, now):  # an older version: hollow, dashed, greyed label
            item.update(title=f"superseded on {iso(node.valid_to or 0.0)}\n{tip}", label=f"(superseded) {label}",
                        color={"background": "#ffffff", "border": colour}, borderWidth=2,
                        shapeProperties={"borderDashes": [4, 3]}, font={"color": "#999999"}, superseded=True)
        nodes.append(item)
    mentions: list[dict[str, Any]] = []
    for entity in view.entities:
        nodes.append({"id": entity.id, "label": entity.key, "shape": "diamond", "color": ENTITY_COLOUR,
                      "value": round(6 + 3 * math.sqrt(len(entity.mentions)), 2), "entity": True,
                      "title": f"entity '{entity.key}' · {entity.namespace}\nmentioned by "
                               f"{len(entity.mentions)} of the memories shown"})
        mentions.extend({"from": entity.id, "to": node_id, "title": "mentions", "relation": "mentions",
                         "color": {"color": MENTIONS_COLOUR}, "width": 0.8, "dashes": [2, 3], "arrows": "to",
                         "smooth": False} for node_id in entity.mentions)
    return {"nodes": nodes, "edges": _edges(view.edges) + mentions, "groups": groups,
            "relations": {r.value: relation_colour(r)
                          for r in sorted({e.relation for e in view.edges}, key=lambda r: r.value)}}


def _superseded(node: MemoryNode, now: float | None) -> bool:
    return node.valid_to is not None and (now is None or node.valid_to <= now)


def _edges(edges: Iterable[MemoryEdge]) -> list[dict[str, Any]]:
    """Edges for vis-network. The i-th edge between the same two memories (either direction)
    curves with roundness ``0.15 * i`` (the first stays straight), so none hides another."""
    seen: dict[frozenset[str], int] = {}
    out = []
    for e in edges:
        pair = frozenset((e.source, e.target))
        i = seen.get(pair, 0)
        seen[pair] = i + 1
        out.append({"from": e.source, "to": e.target, "title": f"{e.relation.value} ({e.strength:.2f})",
                    "relation": e.relation.value, "color": {"color": relation_colour(e.relation)},
                    "width": round(0.5 + 2 * min(e.strength, 1.5), 2), "arrows": "to",
                    "dashes": e.relation in (Relation.BEFORE, Relation.AFTER),
                    "smooth": {"enabled": True, "type": "curvedCW", "roundness": round(0.15 * i + 0.15, 2)}
                    if i else False})
    return out


def render_html(view: GraphView, *, color_by: str = "session", title: str = "Elastic Atlas",
                compressed: bool = False, now: float | None = None) -> str:
    """A complete, self-contained HTML page drawing ``view`` with vis-network.

    ``compressed`` embeds the library gzip-compressed, unpacked by the browser (for notebook
    outputs); ``now`` (the atlas clock's time) decides which superseded versions are past.
    """
    if color_by not in ("session", "type", "namespace"):
        raise InvalidInputError(f"color_by must be 'session', 'type' or 'namespace', got {color_by!r}")
    payload = _payload(view, color_by, now)
    # "<" as \u003c: no user text can end the script element or open an HTML comment in it
    data = json.dumps(payload).replace("<", "\\u003c").replace(">", "\\u003e")
    legend = "".join(f'<span class="key"><i style="background:{c}"></i>{html.escape(k)}</span>'
                     for k, c in payload["groups"].items())
    edge_legend = "".join(f'<span class="key"><b style="border-color:{c}"></b>{html.escape(r)}</span>'
                          for r, c in payload["relations"].items())
    superseded = sum(1 for n in payload["nodes"] if n.get("superseded"))
    if superseded:
        edge_legend += '<span class="key"><i class="old"></i>superseded version</span>'
    if view.entities:
        edge_legend += (f'<span class="key"><i class="entity" style="background:{ENTITY_COLOUR}"></i>entity</span>'
                        f'<span class="key"><b class="mentions" style="border-color:{MENTIONS_COLOUR}"></b>'
                        'mentions</span>')
    note = f" · {view.truncated} lighter memories not shown" if view.truncated else ""
    entity_note = f", {len(view.entities)} entities" if view.entities else ""
    if compressed:
        library = f"""<script>
const packed = "{_vis_js_packed()}";
const bytes = Uint8Array.from(atob(packed), c => c.charCodeAt(0));
new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"))).text().then(code => {{
  const lib = document.createElement("script");
  lib.text = code;
  document.head.appendChild(lib);
  draw();
}});
</script>"""
    else:
        library = f"<script>{_vis_js()}</script>\n<script>draw();</script>"
    return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>
html, body {{ height: 100%; margin: 0; }}
body {{ display: flex; flex-direction: column; font: 13px system-ui, sans-serif; }}
header {{ flex: none; padding: 6px 10px; border-bottom: 1px solid #ddd; line-height: 1.6; }}
#graph {{ flex: 1 1 auto; min-height: 300px; width: 100%; }}
.key {{ margin-right: 12px; white-space: nowrap; }}
.key i {{ display: inline-block; width: 10px; height: 10px; border-radius: 5px; margin-right: 4px; }}
.key i.old {{ background: #fff; border: 1px dashed #666; width: 8px; height: 8px; }}
.key b {{ display: inline-block; width: 18px; border-top: 3px solid; margin: 0 4px 3px 0; }}
.key i.entity {{ border-radius: 0; transform: rotate(45deg); width: 8px; height: 8px; }}
.key b.mentions {{ border-top-style: dotted; }}
div.vis-tooltip {{ white-space: pre-wrap; max-width: 420px; }}
</style></head>
<body><header><b>{html.escape(title)}</b> · {len(view.nodes)} memories, {len(view.edges)} edges{entity_note}{note}
<br>colour by {html.escape(color_by)}: {legend}
{f"<br>edges: {edge_legend}" if edge_legend else ""}</header>
<div id="graph"></div>
<script>
const data = {data};
function draw() {{
  const container = document.getElementById("graph");
  const network = new vis.Network(container,
    {{nodes: new vis.DataSet(data.nodes), edges: new vis.DataSet(data.edges)}},
    {{nodes: {{scaling: {{min: 8, max: 40}}, font: {{size: 11}}}},
      edges: {{smooth: false}}, interaction: {{hover: true, tooltipDelay: 80}},
      physics: {{stabilization: {{iterations: 200}}, barnesHut: {{springLength: 120}}}}}});
  network.once("stabilizationIterationsDone", () => {{
    document.body.setAttribute("data-drawn", String(data.nodes.length));
  }});
  if (data.nodes.length === 0) document.body.setAttribute("data-drawn", "0");
}}
</script>
{library}
</body></html>
"""


def plot_graph(view: GraphView, *, ax: Any = None, color_by: str = "session", seed: int = 7,
               labels: bool | None = None) -> Any:
    """A static matplotlib drawing of ``view`` (spring layout); returns the axes.

    Nodes are coloured by ``color_by`` and sized by weight, edges coloured by relation (dashed:
    ``before``/``after``), with a legend for each (for the nodes, when there are no more groups
    than colours); ``labels`` (default: when there are at most 24 nodes) writes the start of
    each memory's text next to its node.
    """
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - the notebooks extra
        raise MissingDependencyError.for_extra("matplotlib", "notebooks") from exc
    import networkx as nx

    g = nx.DiGraph()
    g.add_nodes_from(n.id for n in view.nodes)
    g.add_nodes_from(e.id for e in view.entities)
    g.add_edges_from((e.source, e.target) for e in view.edges)
    mention_pairs = [(e.id, node_id) for e in view.entities for node_id in e.mentions]
    g.add_edges_from(mention_pairs)
    from matplotlib.lines import Line2D

    pos = nx.spring_layout(g, seed=seed, k=1.5 / math.sqrt(max(1, len(view.nodes))))
    if ax is None:
        _, ax = plt.subplots(figsize=(9, 6.5))
    groups: dict[str, str] = {}
    several = _several_namespaces(view)
    keys = [_group_key(n, color_by, several_namespaces=several) for n in view.nodes]
    colours = [groups.setdefault(key, PALETTE[len(groups) % len(PALETTE)]) for key in keys]
    shrink = min(1.0, math.sqrt(60 / max(1, len(view.nodes))))  # large graphs: smaller nodes, less overlap
    sizes = [(40 + 160 * view.weights.get(n.id, n.weight)) * shrink for n in view.nodes]
    for dashed in (True, False):
        drawn = [e for e in view.edges if (e.relation in (Relation.BEFORE, Relation.AFTER)) is dashed]
        if drawn:
            nx.draw_networkx_edges(g, pos, ax=ax, edgelist=[(e.source, e.target) for e in drawn],
                                   edge_color=[relation_colour(e.relation) for e in drawn],
                                   style="dashed" if dashed else "solid", alpha=0.7, arrows=True, arrowsize=6,
                                   node_size=sizes)
    nx.draw_networkx_nodes(g, pos, ax=ax, nodelist=[n.id for n in view.nodes], node_color=colours,
                           node_size=sizes, linewidths=0.5, edgecolors="#333")
    if view.entities:
        nx.draw_networkx_edges(g, pos, ax=ax, edgelist=mention_pairs, edge_color=MENTIONS_COLOUR, style="dotted",
                               alpha=0.7, arrows=False)
        nx.draw_networkx_nodes(g, pos, ax=ax, nodelist=[e.id for e in view.entities], node_color=ENTITY_COLOUR,
                               node_shape="D", node_size=30 * shrink + 10)
        nx.draw_networkx_labels(g, pos, labels={e.id: e.key for e in view.entities}, ax=ax, font_size=7,
                                font_color=ENTITY_COLOUR, verticalalignment="bottom")
    if labels if labels is not None else len(view.nodes) <= 24:
        short = {n.id: n.content if len(n.content) <= 24 else n.content[:23] + "…" for n in view.nodes}
        nx.draw_networkx_labels(g, {k: (x, y - 0.045) for k, (x, y) in pos.items()}, labels=short, ax=ax,
                                font_size=7, verticalalignment="top", font_color="#333")
    if 0 < len(groups) <= len(PALETTE):  # beyond that, colours repeat and the legend would mislead
        handles = [Line2D([], [], marker="o", ls="", color=c, label=k) for k, c in groups.items()]
        ax.add_artist(ax.legend(handles=handles, title=color_by, loc="upper left", fontsize=8, title_fontsize=8))
    relations = sorted({e.relation for e in view.edges}, key=lambda r: r.value)
    handles = [Line2D([], [], color=relation_colour(r), label=r.value,
                      ls="--" if r in (Relation.BEFORE, Relation.AFTER) else "-") for r in relations]
    if view.entities:
        handles += [Line2D([], [], marker="D", ls="", color=ENTITY_COLOUR, label="entity"),
                    Line2D([], [], color=MENTIONS_COLOUR, ls=":", label="mentions")]
    if handles:
        ax.legend(handles=handles, title="edges", loc="upper right", fontsize=8, title_fontsize=8)
    coloured = f"colour = {color_by}" + (f", {len(groups)} groups" if len(groups) > len(PALETTE) else "")
    entities = f", {len(view.entities)} entities" if view.entities else ""
    ax.set_title(f"{len(view.nodes)} memories, {len(view.edges)} edges{entities} (size = weight, {coloured})")
    ax.margins(0.1)
    ax.set_axis_off()
    return ax


def plot_weights(weights: Iterable[float], *, half_life: float, floor: float, cap: float = 3.0,
                 unit: str = "seconds", axes: Any = None) -> Any:
    """The weight histogram next to the decay curve ``w(t) = max(floor, 2 ** (-t / half_life))``."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - the notebooks extra
        raise MissingDependencyError.for_extra("matplotlib", "notebooks") from exc
    import numpy as np

    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(10, 3.5))
    values = list(weights)
    axes[0].hist(values, bins=np.linspace(0.0, cap, 25), color=PALETTE[0])
    axes[0].set_title(f"current weights ({len(values)} memories)")
    axes[0].set_xlabel("weight")
    axes[0].set_ylabel("memories")
    scale = 86_400.0 if unit == "seconds" else 1.0
    t = np.linspace(0, 5 * half_life, 200)
    axes[1].plot(t / scale, [decayed_weight(1.0, x, half_life=half_life, floor=floor) for x in t], color=PALETTE[1])
    axes[1].set_title(f"decay: half-life {half_life / scale:g} {'days' if unit == 'seconds' else 'turns'}")
    axes[1].set_xlabel("days since last recall" if unit == "seconds" else "writes since last recall")
    axes[1].set_ylabel("weight of a memory at 1.0")
    axes[0].figure.tight_layout()
    return axes
