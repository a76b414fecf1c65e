"""Session summaries (`end_session(summarize=True)`), `maintain()` on demand and its timer."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from shared_core import (
    ElasticMemoryAtlas,
    HashingEmbedder,
    InvalidInputError,
    MaintenanceReport,
    ManualClock,
    Relation,
)
from shared_core.engine.lifecycle.maintenance import MaintenanceTimer
from shared_core.engine.lifecycle.summarize import word_count

Make = Callable[..., ElasticMemoryAtlas]
TRIP = ["Hi there!", "We booked the hotel in Porto for May 3.", "The train to Porto leaves at 7:05 on May 2.",
        "Ana will meet us at the station with her car.", "Thanks, bye!"]


def _session(atlas: ElasticMemoryAtlas) -> list[str]:
    return [atlas.add_memory(t, namespace="u", session_id="trip").id for t in TRIP]


@pytest.mark.parametrize("mode", ["fade", "delete"])
def test_end_session_writes_a_session_summary_under_chapter_size(make_atlas: Make, mode: str) -> None:
    atlas = make_atlas()
    ids = _session(atlas)
    assert len(ids) < atlas.config.chapter_size
    atlas.end_session("trip", namespace="u", mode=mode, summarize=True)
    [summary] = [n for n in atlas.memories(namespace="u") if n.kind == "summary"]
    assert summary.metadata["summary"] == "session" and summary.session_id == "trip"
    assert word_count(summary.content) <= 0.5 * sum(word_count(t) for t in TRIP)
    assert "Porto" in summary.content and "Thanks" not in summary.content and "Hi there" not in summary.content
    if mode == "fade":
        assert {e.target for e in atlas.edges(summary.id) if e.relation is Relation.SUMMARIZES} == set(ids)
        assert all(atlas.get(i).weight < 1.0 for i in ids) and atlas.get(summary.id).weight == 1.0
    else:  # the details are gone, the summary stays
        assert [n.id for n in atlas.memories(namespace="u")] == [summary.id]
    assert [e.kind for e in atlas.events.events(kind="summarize")] == ["summarize"]


def test_end_session_without_summarize_writes_none(atlas: ElasticMemoryAtlas) -> None:
    _session(atlas)
    atlas.end_session("trip", namespace="u")
    assert all(n.kind == "memory" for n in atlas.memories(namespace="u"))
    with pytest.raises(InvalidInputError):
        atlas.end_session("trip", namespace="u", summarize="yes")  # type: ignore[arg-type]


def test_a_session_summary_can_come_from_the_llm(clock: ManualClock) -> None:
    prompts: list[str] = []

    def llm(prompt: str) -> str:
        prompts.append(prompt)
        return "Porto trip: hotel May 3, train 7:05 May 2."

    atlas = ElasticMemoryAtlas(embedder=HashingEmbedder(dim=64), clock=clock, llm=llm)
    _session(atlas)
    atlas.end_session("trip", namespace="u", summarize=True)
    [summary] = [n for n in atlas.memories(namespace="u") if n.kind == "summary"]
    assert summary.content == "Porto trip: hotel May 3, train 7:05 May 2." and "Ana will meet us" in prompts[-1]


def test_a_failing_model_writes_no_summary_and_ends_nothing(clock: ManualClock) -> None:
    class Flaky(HashingEmbedder):
        fail = False

        def embed(self, texts: list[str]):  # type: ignore[no-untyped-def, override]
            if self.fail:
                raise RuntimeError("model down")
            return super().embed(texts)

    embedder = Flaky(dim=64)
    atlas = ElasticMemoryAtlas(embedder=embedder, clock=clock)
    ids = _session(atlas)
    embedder.fail = True
    with pytest.raises(RuntimeError):
        atlas.end_session("trip", namespace="u", summarize=True)
    assert [atlas.get(i).weight for i in ids] == [1.0] * len(ids) and len(atlas) == len(ids)


def test_a_one_memory_session_gets_no_summary(atlas: ElasticMemoryAtlas) -> None:
    atlas.add_memory("We booked the hotel in Porto for May 3.", namespace="u", session_id="s")
    atlas.end_session("s", namespace="u", summarize=True)
    assert all(n.kind == "memory" for n in atlas.memories(namespace="u"))


def test_maintain_cleans_an_idle_memory_that_no_write_would(make_atlas: Make, clock: ManualClock) -> None:
    atlas = make_atlas(prune_below=0.2, prune_idle=10 * 86_400.0, prune_every=200)
    old = atlas.add_memory("The printer on floor 2 jams", namespace="u")
    kept = atlas.add_memory("Keep this one", namespace="u", pinned=True)
    short = atlas.add_memory("The door code is 4411 today", namespace="u", ttl=3600)
    clock.advance(days=120)  # weight 1 -> 1/16 after four half-lives, idle for 120 days; no write since
    report = atlas.maintain()
    assert isinstance(report, MaintenanceReport)
    assert (report.expired, report.pruned) == (1, 1)
    assert [n.id for n in atlas.memories(namespace="u")] == [kept.id]
    assert {e.node_id for e in atlas.events.events(kind="expire")} == {short.id}
    assert old.id in {e.node_id for e in atlas.events.events(kind="evict")}
    again = atlas.maintain()
    assert (again.expired, again.pruned, again.evicted) == (0, 0, 0)


def test_maintain_compresses_and_reports_it(make_atlas: Make, clock: ManualClock) -> None:
    atlas = make_atlas(merge_threshold=0.9)
    atlas.add_memory("Alice likes oat milk in her coffee", namespace="u")
    atlas.add_memory("Alice likes oat milk in her coffee", namespace="u")
    report = atlas.maintain(namespace="u")
    assert report.compression.absorbed == 1 and atlas.count(namespace="u") == 1
    assert atlas.maintain(namespace="u", compress=False).compression.absorbed == 0
    with pytest.raises(InvalidInputError):
        atlas.maintain(namespace="")


def test_the_timer_runs_maintain_until_closed(atlas: ElasticMemoryAtlas) -> None:
    ran = threading.Event()

    def run() -> MaintenanceReport:
        ran.set()
        return atlas.maintain()

    timer = MaintenanceTimer(run, every=0.01)
    try:
        assert ran.wait(10.0)
    finally:
        timer.close()
    runs = timer.runs
    assert runs >= 1 and not timer._thread.is_alive()  # type: ignore[union-attr]
    off = MaintenanceTimer(run, every=0)
    assert off._thread is None
    with pytest.raises(InvalidInputError):
        MaintenanceTimer(run, every=-1)


def test_a_session_summary_of_a_chat_says_who_said_what(make_atlas: Make) -> None:
    atlas = make_atlas()
    for who, text in zip(("Kate", "Tom", "Kate", "Tom", "Kate"), TRIP, strict=True):
        atlas.add_memory(text, namespace="u", session_id="trip", metadata={"speaker": who})
    atlas.end_session("trip", namespace="u", summarize=True)
    [summary] = [n for n in atlas.memories(namespace="u") if n.kind == "summary"]
    assert summary.content.startswith("Tom: We booked the hotel in Porto for May 3.")
    assert summary.content.count(": ") == summary.content.count(". ") + 1  # every sentence labelled
