"""A chroma directory whose bookkeeping carries the lifecycle's ``indexed`` map (as the library
wrote it before save format version 2: each merged memory's keyword text) reopens as one
without it, and scores and counts bytes alike; the library no longer writes the map."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

from shared_core import ElasticMemoryAtlas, HashingEmbedder, ManualClock
from shared_core.formulas.subqueries import keyword_text
from shared_core.store.chroma import ChromaBackend
from shared_core.store.chroma._store import DB_NAME

QUERIES = ["what colour is the garage door", "where did Kate go hiking"]


def _open(path: Path) -> ElasticMemoryAtlas:
    return ElasticMemoryAtlas(embedder=HashingEmbedder(dim=64), clock=ManualClock(1_700_000_000.0),
                              backend=ChromaBackend(path, durability="sync"))


def _figures(atlas: ElasticMemoryAtlas) -> list[Any]:
    return [atlas.stats().bytes_used, [[(h.node.content, h.score) for h in atlas.retrieve(q, namespace="u")]
                                       for q in QUERIES]]


def _kept(path: Path) -> dict[str, Any]:
    with sqlite3.connect(path / DB_NAME) as db:
        return json.loads(db.execute("SELECT value FROM meta WHERE key = 'bookkeeping'").fetchone()[0])  # type: ignore[no-any-return]


def test_a_directory_with_the_old_keyword_map_reopens_alike(tmp_path: Path) -> None:
    atlas = _open(tmp_path / "new")
    atlas.add_memories([{"content": "went hiking near the lake", "metadata": {"speaker": "Kate"}},
                        {"content": "the garage door is painted green", "metadata": {"speaker": "Kate"}},
                        {"content": "The garage door is painted green!", "metadata": {"speaker": "Kate"}}],
                       namespace="u", session_id="s")
    assert atlas.compress().absorbed == 1
    merged = [n for n in atlas.memories(namespace="u") if "merged_from" in n.metadata]
    atlas.close()
    kept = _kept(tmp_path / "new")
    assert "indexed" not in kept["lifecycle"]
    old = {n.id: keyword_text(n.content, n.metadata) for n in merged}  # what the library wrote before
    assert len(old) == 1 and all(text != n.content for text, n in zip(old.values(), merged, strict=True))
    shutil.copytree(tmp_path / "new", tmp_path / "old")
    with sqlite3.connect(tmp_path / "old" / DB_NAME) as db:
        db.execute("UPDATE meta SET value = ? WHERE key = 'bookkeeping'",
                   (json.dumps({**kept, "lifecycle": {**kept["lifecycle"], "indexed": old}}),))
    assert _kept(tmp_path / "old")["lifecycle"]["indexed"] == old
    figures = {}
    for name in ("new", "old"):
        reopened = _open(tmp_path / name)
        figures[name] = _figures(reopened)
        reopened.close()
    assert figures["old"] == figures["new"]
    assert "indexed" not in _kept(tmp_path / "old")["lifecycle"]  # written back without it
