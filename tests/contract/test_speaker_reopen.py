"""A speaker stored only in the metadata (``{"speaker": "Kate"}``, content "went hiking") on the
keyword side, and the speakers an atlas knows after a reopen, on every backend.

- The keyword index holds the memory's labelled line (`shared_core.formulas.subqueries.keyword_text`):
  a search for the speaker's name finds the turn, after a write, an update and a merge, and a
  reopened atlas (a save file loaded, a chroma directory opened again, a FalkorDB prefix
  reconnected) scores keywords exactly as the live one did.
- A reopened atlas knows the namespace's speakers (labels and metadata) before any recall, so a
  question typed in lower case runs the speaker path as it did before the reopen.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from shared_core import AtlasConfig, ElasticMemoryAtlas, HashingEmbedder, ManualClock
from shared_core.store.base import PartitionBase

Make = Callable[..., ElasticMemoryAtlas]
DIM = 256
TURNS = [
    {"content": "went hiking near the lake", "metadata": {"speaker": "Kate"}},
    {"content": "I bought new boots for it", "metadata": {"speaker": "Tom"}},
    {"content": "Kate: the lake was cold"},
    {"content": "painted a sunset over the hills", "metadata": {"speaker": "Kate"}},
]
# the speaker path's fixture (tests/contract/test_speaker_path.py): Melanie's own turn is buried
# under turns addressing her, and only the speaker path reaches it
SPEAKER_PATH = {"similar_top": 0, "link_temporal": False, "candidate_min": 3, "candidate_ratio": 1.0,
                "feedback_weight": 0.0, "speaker_min_k": 0, "speaker_weight": 2.0}
MELANIE = [
    {"content": "Melanie, Melanie! What does Melanie do for fun, Melanie?", "metadata": {"speaker": "Caroline"}},
    "Caroline: hey Melanie, what does Melanie do for fun these days, Melanie?",
    "Caroline: Melanie, tell me what Melanie does for fun, Melanie",
    {"content": "I am Melanie, and what does Melanie do for fun? Melanie asks herself",
     "metadata": {"speaker": "Melanie"}},
    *(f"Caroline said hello on day {i}" for i in range(8)),
    {"content": "swimming with the kids is my fun", "metadata": {"speaker": "Melanie"}},
]


@pytest.fixture
def reopen(backend_name: str, tmp_path: Path, clock: ManualClock) -> Callable[..., ElasticMemoryAtlas]:
    """``reopen(atlas, **config)``: a new atlas over what ``atlas`` stored (a save file loaded, the
    chroma directory opened again, the FalkorDB prefix connected to again)."""
    opened: list[Any] = []

    def again(atlas: ElasticMemoryAtlas, **config: Any) -> ElasticMemoryAtlas:
        cfg, embedder = AtlasConfig(**config), HashingEmbedder(dim=DIM)
        if backend_name == "memory":
            path = atlas.save(tmp_path / f"saved-{len(opened)}.atlas")
            opened.append(None)
            return ElasticMemoryAtlas.load(path, config=cfg, embedder=embedder, clock=clock)
        backend: Any = atlas._state.backend
        if backend_name == "chroma":
            from shared_core.store.chroma import ChromaBackend

            atlas.close()
            new: Any = ChromaBackend(backend.path, durability="sync", dim=DIM)
        else:
            from shared_core.store.falkordb import FalkorDBBackend

            new = FalkorDBBackend.from_url(f"{backend.url.split('?')[0]}?prefix={backend.settings.prefix}", dim=DIM)
        opened.append(new)
        return ElasticMemoryAtlas(config=cfg, embedder=embedder, clock=clock, backend=new)

    yield again  # type: ignore[misc]
    for backend in opened:
        if backend is not None:
            backend.close()


def _keywords(atlas: ElasticMemoryAtlas, query: str, namespace: str = "a") -> list[tuple[str, float]]:
    part = atlas._state.backend.partition(namespace)
    assert part is not None
    return sorted(((i, round(s, 6)) for i, s in part.keywords.search(query, 10)), key=lambda h: (-h[1], h[0]))


def test_a_metadata_speaker_is_on_the_keyword_side(make_atlas: Make) -> None:
    atlas = make_atlas()
    nodes = atlas.add_memories(TURNS, namespace="a")
    assert {i for i, _ in _keywords(atlas, "kate")} == {nodes[0].id, nodes[2].id, nodes[3].id}
    assert [i for i, _ in _keywords(atlas, "tom")] == [nodes[1].id]
    assert nodes[0].content == "went hiking near the lake"  # the stored content is the caller's
    one = atlas.add_memory("cooked dinner for everyone", namespace="a", metadata={"speaker": "Tom"})
    assert one.id in {i for i, _ in _keywords(atlas, "tom")}
    hits = atlas.retrieve("Kate", namespace="a", top_k=4, reinforce=False)
    assert any("keyword" in h.paths for h in hits if h.node.id == nodes[0].id)


def test_an_update_indexes_the_labelled_correction(make_atlas: Make) -> None:
    atlas = make_atlas()
    old = atlas.add_memory("went hiking near the lake", namespace="a", metadata={"speaker": "Kate"})
    new = atlas.update_memory(old.id, "went climbing near the lake", namespace="a")
    assert new.content == "went climbing near the lake"
    assert new.id in {i for i, _ in _keywords(atlas, "kate")}


def test_a_merge_keeps_each_sources_speaker_on_the_keyword_side(make_atlas: Make) -> None:
    atlas = make_atlas(merge_threshold=0.8)
    atlas.add_memory("we went to the lake on Sunday", namespace="a", metadata={"speaker": "Kate"})
    atlas.add_memory("we went to the lake on Sunday", namespace="a", metadata={"speaker": "Tom"})
    report = atlas.compress(namespace="a")
    assert report.absorbed == 1
    survivor = report.merged[0].survivor
    assert {i for i, _ in _keywords(atlas, "kate")} == {survivor} == {i for i, _ in _keywords(atlas, "tom")}


def test_a_reopened_atlas_scores_keywords_as_the_live_one(make_atlas: Make, reopen: Callable[..., Any]) -> None:
    atlas = make_atlas(merge_threshold=0.8)
    nodes = atlas.add_memories(TURNS, namespace="a")
    sunrise = atlas.update_memory(nodes[3].id, "painted a sunrise over the hills", namespace="a")
    atlas.add_memory("went hiking near the lake", namespace="a", metadata={"speaker": "Tom"})
    report = atlas.compress(namespace="a")  # the two hikes merge: Kate's and Tom's wording both stay indexed
    assert report.merged[0].absorbed == (nodes[0].id,)
    queries = ["kate", "tom lake", "kate painted sunrise", "hiking"]
    live = {q: _keywords(atlas, q) for q in queries}
    assert {sunrise.id, report.merged[0].survivor} <= {i for i, _ in live["kate"]} and live["tom lake"]
    again = reopen(atlas, merge_threshold=0.8)
    assert {q: _keywords(again, q) for q in queries} == live


def test_a_reopened_atlas_knows_its_speakers(make_atlas: Make, reopen: Callable[..., Any]) -> None:
    atlas = make_atlas(**SPEAKER_PATH)
    target = atlas.add_memories(MELANIE, namespace="a")[-1]
    atlas.add_memory("Jon Reyes: hello there", namespace="b")
    query = "what does melanie do for fun?"  # lower case: the speaker is named through the SpeakerBook
    before = [(h.node.id, h.paths) for h in atlas.retrieve(query, namespace="a", top_k=3, reinforce=False)]
    assert target.id in [i for i, _ in before] and any("speaker" in p for _, p in before)
    again = reopen(atlas, **SPEAKER_PATH)
    after = [(h.node.id, h.paths) for h in again.retrieve(query, namespace="a", top_k=3, reinforce=False)]
    assert after == before
    assert again._state.known_speakers("a") == {"Caroline", "Melanie"}
    assert again._state.known_speakers("b") == {"Jon Reyes"}


def test_a_partitions_speakers_are_its_memories_speakers(make_atlas: Make) -> None:
    atlas = make_atlas()
    atlas.add_memories([*TURNS, {"content": "note: buy oat milk"},
                        {"content": "Jo: hi", "metadata": {"speaker": "Joanna"}},
                        {"content": "a quote", "metadata": {"speaker": 'Ren\u00e9e "R" Roy'}},
                        {"content": "fine", "metadata": {"speaker": "Zoë", "mood": "calm"}}], namespace="a")
    part = atlas._state.backend.partition("a")
    assert part is not None
    every = {"Kate", "Tom", "Joanna", 'Ren\u00e9e "R" Roy', "Zoë"}
    assert PartitionBase.speakers(part) == every  # one pass over the memories
    assert every - {'Ren\u00e9e "R" Roy'} <= part.speakers() <= every  # a server may skip a name with a quote


def test_a_session_summary_says_who_said_what(make_atlas: Make) -> None:
    atlas = make_atlas()
    turns = [("Kate", "Hi there!"), ("Tom", "We booked the hotel in Porto for May 3."),
             ("Kate", "The train to Porto leaves at 7:05 on May 2."), ("Tom", "Ana will meet us at the station.")]
    atlas.add_memories([{"content": text, "metadata": {"speaker": who}} for who, text in turns],
                       namespace="a", session_id="trip")
    atlas.end_session("trip", namespace="a", summarize=True)
    [summary] = [n for n in atlas.memories(namespace="a") if n.kind == "summary"]
    assert summary.content.startswith("Tom: We booked the hotel in Porto for May 3.")
