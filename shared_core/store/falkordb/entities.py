"""`FalkorEntityIndex`: the entity layer of one namespace in its FalkorDB graph (`EntityIndex`).

Entities are ``(:Entity {key})`` nodes of the namespace's graph, linked to the memories that
name them by ``(:Entity)-[:MENTIONS]->(:Memory)`` edges; a range index on ``Entity.key`` is
created on the first write of each graph by this process (another process creating it at once
is fine). The memory queries of the other modules match ``(:Memory)`` nodes only, so entities
never show up among memories, edges or walks. Each operation is one statement: adding a
chunk's mentions, removing one memory's (and the entities left with none), reading the
entities of a batch of memories or the memories of a batch of keys.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...values.errors import BackendError
from .client import GraphKey

__all__ = ["ENTITY_INDEX", "FalkorEntityIndex"]

ENTITY_INDEX = "CREATE INDEX FOR (e:Entity) ON (e.key)"
ADD = ("UNWIND $rows AS row MATCH (m:Memory {id: row[0]}) UNWIND row[1] AS key "
       "MERGE (e:Entity {key: key}) MERGE (e)-[:MENTIONS]->(m)")
REMOVE = ("MATCH (e:Entity)-[r:MENTIONS]->(:Memory {id: $id}) DELETE r "
          "WITH DISTINCT e OPTIONAL MATCH (e)-[:MENTIONS]->(o:Memory) WITH e, count(o) AS left "
          "WHERE left = 0 DELETE e")
OF = "UNWIND $ids AS id MATCH (e:Entity)-[:MENTIONS]->(:Memory {id: id}) RETURN id, e.key"
MENTIONS = ("UNWIND $keys AS key MATCH (e:Entity {key: key})-[:MENTIONS]->(m:Memory) "
            "WITH key, collect(m.id) AS ids RETURN key, size(ids), ids[0..$limit]")
ALL = "MATCH (e:Entity) OPTIONAL MATCH (e)-[:MENTIONS]->(m:Memory) RETURN e.key, count(m)"
COUNT = "MATCH (e:Entity) RETURN count(e)"


class FalkorEntityIndex:
    """The namespace's ``(:Entity)`` nodes and ``MENTIONS`` edges (see the module docstring)."""

    def __init__(self, graph: GraphKey) -> None:
        self._g = graph
        self._indexed = False

    def _ensure_index(self) -> None:
        if self._indexed:
            return
        try:
            self._g.write(ENTITY_INDEX)
        except BackendError as exc:
            if "already indexed" not in str(exc):
                raise
        self._indexed = True

    def add_many(self, rows: Sequence[tuple[str, Sequence[str]]]) -> None:
        wanted = [[node_id, list(keys)] for node_id, keys in rows if keys]
        if wanted:
            self._ensure_index()
            self._g.write(ADD, {"rows": wanted})

    def remove(self, node_id: str) -> None:
        self._g.write(REMOVE, {"id": node_id})

    def entities_of(self, node_ids: Sequence[str]) -> dict[str, list[str]]:
        if not node_ids:
            return {}
        out: dict[str, list[str]] = {}
        for node_id, key in self._g.read(OF, {"ids": list(node_ids)}):
            out.setdefault(str(node_id), []).append(str(key))
        return out

    def mentions(self, keys: Sequence[str], *, limit: int) -> dict[str, tuple[int, list[str]]]:
        if not keys or limit < 0:
            return {}
        rows: list[list[Any]] = self._g.read(MENTIONS, {"keys": list(keys), "limit": int(limit)})
        return {str(key): (int(count), [str(i) for i in ids]) for key, count, ids in rows}

    def entities(self) -> list[tuple[str, int]]:
        return [(str(key), int(count)) for key, count in self._g.read(ALL)]

    def __len__(self) -> int:
        rows = self._g.read(COUNT)
        return int(rows[0][0]) if rows else 0

    def __repr__(self) -> str:
        return f"FalkorEntityIndex({self._g.key!r})"
