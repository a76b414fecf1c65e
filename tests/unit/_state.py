"""A full, comparable snapshot of an atlas, to check that failed calls change nothing."""

from __future__ import annotations

from typing import Any

from shared_core import ElasticMemoryAtlas


def snapshot(atlas: ElasticMemoryAtlas) -> dict[str, Any]:
    state: dict[str, Any] = {"where": dict(atlas._where), "events": len(atlas.events)}
    for ns in sorted(atlas.backend.namespaces()):
        part = atlas.backend.partition(ns)
        assert part is not None
        nodes = sorted(part.graph.nodes(), key=lambda n: n.id)
        state[ns] = {
            "turn": part.turn,
            "nodes": [n.as_dict() for n in nodes],
            "edges": sorted((e.source, e.target, e.relation.value, e.strength)
                            for n in nodes for e in part.graph.edges(n.id)),
            "vectors": {n.id: part.vectors.get(n.id).tobytes() for n in nodes},  # type: ignore[union-attr]
            "keywords": len(part.keywords),
            "sessions": {s: list(ids) for s, ids in part.sessions.items()},
            "inactive": sorted(part.inactive),
        }
    return state
