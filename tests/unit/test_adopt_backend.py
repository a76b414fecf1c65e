"""An atlas made over an in-process backend that another atlas wrote takes its memories over as a
reopen does (`Lifecycle.adopt`): their speakers are known before any recall, their bytes count
towards the caps and their expiries are scheduled."""

from __future__ import annotations

from shared_core import AtlasConfig, ElasticMemoryAtlas, HashingEmbedder, InProcessBackend, ManualClock

DIM = 64


def _atlas(backend: InProcessBackend, clock: ManualClock, **config: object) -> ElasticMemoryAtlas:
    return ElasticMemoryAtlas(config=AtlasConfig(**config), embedder=HashingEmbedder(dim=DIM),  # type: ignore[arg-type]
                              clock=clock, backend=backend)


def test_a_second_atlas_knows_the_first_ones_speakers_and_bytes() -> None:
    clock, backend = ManualClock(1_000.0), InProcessBackend(dim=DIM)
    first = _atlas(backend, clock)
    first.add_memories([{"content": "went hiking near the lake", "metadata": {"speaker": "Kate"}},
                        "Tom: I bought new boots"], namespace="a")
    first.add_memory("Jon Reyes: hello there", namespace="b")
    second = _atlas(backend, clock)
    assert second._state.known_speakers("a") == {"Kate", "Tom"}
    assert second._state.known_speakers("b") == {"Jon Reyes"}
    assert second.stats().bytes_used == first.stats().bytes_used > 0


def test_a_second_atlas_expires_the_first_ones_memories() -> None:
    clock, backend = ManualClock(1_000.0), InProcessBackend(dim=DIM)
    first = _atlas(backend, clock)
    brief = first.add_memory("the door code is 4417 today", namespace="a", ttl=60.0)
    kept = first.add_memory("Kate likes tea", namespace="a")
    second = _atlas(backend, clock)
    clock.advance(120.0)
    second.maintain(compress=False)
    assert [n.id for n in second.memories(namespace="a")] == [kept.id]
    assert brief.id not in {n.id for n in second.memories(namespace="a")}


def test_a_second_atlas_over_an_empty_backend_starts_empty() -> None:
    clock, backend = ManualClock(1_000.0), InProcessBackend(dim=DIM)
    atlas = _atlas(backend, clock)
    assert atlas.stats().bytes_used == 0 and len(atlas) == 0
