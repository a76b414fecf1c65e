"""`DictEntityIndex`: the in-process entity layer of one namespace (`EntityIndex`).

Two dicts hold the ``mentions`` edges both ways: entity key -> the memories that mention it (an
id-dict, in mention order), and memory id -> its entity keys. An entity is the key of the first
dict: it goes when its last mention does.

>>> index = DictEntityIndex()
>>> index.add_many([("m1", ["caroline", "lake tahoe"]), ("m2", ["caroline"])])
>>> index.mentions(["caroline", "nobody"], limit=10)
{'caroline': (2, ['m1', 'm2'])}
>>> index.remove("m1"); sorted(index.entities())
[('caroline', 1)]
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

__all__ = ["DictEntityIndex"]


class DictEntityIndex:
    """Entity key -> mentioning ids and id -> keys, kept in step (see the module docstring)."""

    __slots__ = ("_by_id", "_by_key")

    def __init__(self) -> None:
        self._by_key: dict[str, dict[str, None]] = {}
        self._by_id: dict[str, tuple[str, ...]] = {}

    def add_many(self, rows: Sequence[tuple[str, Sequence[str]]]) -> None:
        by_key, by_id = self._by_key, self._by_id
        for node_id, keys in rows:
            if not keys:
                continue
            merged = tuple(dict.fromkeys((*by_id.get(node_id, ()), *keys)))
            by_id[node_id] = merged
            for key in keys:
                ids = by_key.get(key)
                if ids is None:
                    ids = by_key[key] = {}
                ids[node_id] = None

    def remove(self, node_id: str) -> None:
        keys = self._by_id.pop(node_id, ())
        by_key = self._by_key
        for key in keys:
            ids = by_key.get(key)
            if ids is not None:
                ids.pop(node_id, None)
                if not ids:
                    del by_key[key]

    def entities_of(self, node_ids: Sequence[str]) -> dict[str, list[str]]:
        by_id = self._by_id
        return {i: list(keys) for i in node_ids if (keys := by_id.get(i))}

    def mentions(self, keys: Sequence[str], *, limit: int) -> dict[str, tuple[int, list[str]]]:
        out: dict[str, tuple[int, list[str]]] = {}
        by_key = self._by_key
        for key in keys:
            ids = by_key.get(key)
            if ids:
                out[key] = (len(ids), list(itertools.islice(ids, limit)))
        return out

    def entities(self) -> list[tuple[str, int]]:
        return [(key, len(ids)) for key, ids in self._by_key.items()]

    def __len__(self) -> int:
        return len(self._by_key)

    def __repr__(self) -> str:
        return f"DictEntityIndex({len(self._by_key)} entities, {len(self._by_id)} memories)"
