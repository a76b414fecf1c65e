"""The chroma store keeps each memory's entity mentions in its record: a reopened directory,
checkpointed or replayed from the log, has the same entities, and a forgotten memory's are gone."""

from __future__ import annotations

from pathlib import Path

import pytest

from shared_core import AtlasConfig, ElasticMemoryAtlas, HashingEmbedder, ManualClock

pytest.importorskip("chromadb")

from shared_core.store.chroma import ChromaBackend


def _open(path: Path) -> ElasticMemoryAtlas:
    return ElasticMemoryAtlas(embedder=HashingEmbedder(dim=32), clock=ManualClock(1_700_000_000.0),
                              backend=ChromaBackend(path, durability="sync"),
                              config=AtlasConfig(entity_extraction="keyphrases"))


def _entities(atlas: ElasticMemoryAtlas) -> list[tuple[str, int]]:
    part = atlas.backend.partition("a")
    return [] if part is None else sorted(part.entities.entities())


@pytest.mark.parametrize("checkpoint", [True, False])
def test_entities_survive_a_reopen(tmp_path: Path, checkpoint: bool) -> None:
    atlas = _open(tmp_path / "mem")
    first, _ = atlas.add_memories(["Caroline: we camped near Lake Tahoe.", "Melanie: Lake Tahoe was cold."],
                                  namespace="a")
    atlas.add_memory("Caroline: the Pride parade in June.", namespace="a")
    atlas.forget(first.id)
    before = _entities(atlas)
    assert ("lake tahoe", 1) in before and ("caroline", 1) in before
    if checkpoint:
        atlas.close()
    else:  # the process "dies" after its last sync: the log alone restores it
        atlas.flush()
        backend = atlas.backend
        assert isinstance(backend, ChromaBackend)
        backend._release_lock()
    again = _open(tmp_path / "mem")
    assert _entities(again) == before
    again.close()
