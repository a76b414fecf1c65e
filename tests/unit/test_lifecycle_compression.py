"""Compression: merges keep every source's provenance, faded clusters get summaries, long sessions
get chapters, and the summaries stay out of the working memory and the session's chain."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared_core import AtlasConfig, ElasticMemoryAtlas, HashingEmbedder, ManualClock, Relation
from shared_core.engine.lifecycle.compression import group_pairs, near_duplicate_pairs
from shared_core.engine.lifecycle.summarize import capped_summary, extractive_summary, word_count
from shared_core.formulas.chatter import contentless

from ._state import snapshot

Build = Callable[..., ElasticMemoryAtlas]
DIM = 32


def _near(base: np.ndarray, scale: float, seed: int) -> np.ndarray:
    """A unit vector at a controlled distance from ``base``."""
    noise = np.random.default_rng(seed).normal(size=base.shape)
    v = base + scale * noise / np.linalg.norm(noise)
    return v / np.linalg.norm(v)


def _atlas(clock: ManualClock, **config: object) -> ElasticMemoryAtlas:
    return ElasticMemoryAtlas(config=AtlasConfig(**config), embedder=HashingEmbedder(dim=DIM), clock=clock)


def test_a_merge_unions_edges_sums_accesses_and_keeps_provenance(make_atlas: Build, clock: ManualClock) -> None:
    atlas = make_atlas()
    other = atlas.add_memory("The dentist is Dr. Silva", namespace="u", session_id="s1")
    a = atlas.add_memory("User prefers oat milk", namespace="u", session_id="s1", metadata={"source": "chat"})
    atlas.link(a.id, other.id, relation="related_to")
    atlas.retrieve("oat milk", namespace="u", top_k=1)  # one access for a
    clock.advance(hours=1)
    b = atlas.add_memory("user prefers oat milk!", namespace="u", session_id="s2", metadata={"source": "email"})
    atlas.retrieve("oat milk", namespace="u", top_k=2)
    report = atlas.compress()
    assert report.absorbed == 1 and report.merged[0].survivor == b.id and report.merged[0].absorbed == (a.id,)
    survivor = atlas.get(b.id)
    assert atlas.count(namespace="u") == 2
    assert survivor.access_count == 3  # 2 + 1
    [source] = survivor.metadata["merged_from"]
    assert source["id"] == a.id and source["content"] == "User prefers oat milk"
    assert source["session_id"] == "s1" and source["metadata"] == {"source": "chat"}
    assert source["timestamp"] == a.timestamp and source["access_count"] == 2
    assert any(e.relation is Relation.RELATED_TO and e.target == other.id for e in atlas.edges(b.id))
    assert [e.kind for e in atlas.events.events(kind="merge")] == ["merge"]
    assert atlas.retrieve("oat milk", namespace="u", top_k=1, reinforce=False)[0].node.id == b.id


@settings(max_examples=25, deadline=None)
@given(copies=st.integers(2, 6), rounds=st.integers(1, 3), meta=st.dictionaries(st.sampled_from("abc"),
                                                                                 st.integers(), max_size=2))
def test_property_a_merge_loses_no_provenance(copies: int, rounds: int, meta: dict[str, int]) -> None:
    clock = ManualClock(1_700_000_000.0)
    atlas = _atlas(clock)
    written: dict[str, str] = {}
    for r in range(rounds):
        for i in range(copies):
            clock.advance(1)
            text = f"{'The' if i % 2 else 'the'} team decided to ship on Friday{'!' * i}"
            node = atlas.add_memory(text, namespace="u", session_id=f"s{r}-{i % 2}", metadata={**meta, "i": i})
            written[node.id] = text
        atlas.compress()
    [survivor] = atlas.memories(namespace="u")
    sources = survivor.metadata.get("merged_from", [])
    assert sorted([s["id"] for s in sources] + [survivor.id]) == sorted(written)  # each exactly once
    for s in sources:
        assert s["content"] == written[s["id"]] and s["metadata"]["i"] in range(copies)
    assert len(atlas.events.events(kind="merge")) == rounds


def test_values_that_differ_are_not_merged_and_pins_and_ttls_are_never_absorbed(clock: ManualClock) -> None:
    atlas = _atlas(clock)
    base = np.eye(DIM)[0]
    three = atlas.add_memory("The meeting is at 3pm", namespace="u", embedding=base)
    five = atlas.add_memory("The meeting is at 5pm", namespace="u", embedding=_near(base, 0.1, 1))
    pinned = atlas.add_memory("Remember: the door code is 4411", namespace="u", pinned=True,
                              embedding=np.eye(DIM)[1])
    copy = atlas.add_memory("remember the door code is 4411", namespace="u", embedding=_near(np.eye(DIM)[1], 0.05, 2))
    temp = atlas.add_memory("parking spot 12 today", namespace="u", ttl=3600, embedding=np.eye(DIM)[2])
    atlas.add_memory("parking spot 12 today!", namespace="u", embedding=_near(np.eye(DIM)[2], 0.05, 3))
    report = atlas.compress()
    assert [(m.survivor, m.absorbed) for m in report.merged] == [(pinned.id, (copy.id,))]
    assert {three.id, five.id, pinned.id, temp.id} <= {n.id for n in atlas.memories(namespace="u")}
    assert atlas.get(pinned.id).pinned


def _faded_cluster(atlas: ElasticMemoryAtlas, clock: ManualClock) -> list[str]:
    trip = np.eye(DIM)[3]
    texts = ["Hi! We booked the hotel in Porto for May 3.", "Thanks!", "Train to Porto leaves at 7:05 on May 2.",
             "Ana will meet us at Porto station.", "We booked the hotel in Porto for May 3."]
    ids = [atlas.add_memory(t, namespace="u", session_id="trip", embedding=_near(trip, 0.5, i)).id
           for i, t in enumerate(texts)]
    atlas.add_memory("Unrelated: the cat needs a vet appointment", namespace="u", session_id="trip",
                     embedding=np.eye(DIM)[9])
    clock.advance(days=40)  # half-life 30 days: weights fall below summary_below (0.5)
    return ids


def test_a_faded_cluster_gets_one_summary_and_its_details_fade(clock: ManualClock) -> None:
    atlas = _atlas(clock, similar_threshold=0.5, merge_threshold=0.999)
    ids = _faded_cluster(atlas, clock)
    before = {i: atlas.get(i).weight for i in ids}
    report = atlas.compress()
    [summary] = [s for s in report.summaries if s.kind == "cluster"]
    assert set(summary.members) == set(ids)
    node = atlas.get(summary.summary_id)
    assert node.kind == "summary" and node.metadata["summary"] == "cluster" and node.session_id == "trip"
    sources = [atlas.get(i).content for i in ids]
    assert word_count(node.content) <= 0.5 * sum(word_count(t) for t in sources)  # at most half the words
    assert "May 3" in node.content and ("7:05" in node.content or "Ana" in node.content)  # valuable sentences
    assert "Thanks" not in node.content and node.content.count("hotel") == 1  # greetings and repeats dropped
    assert {e.target for e in atlas.edges(node.id) if e.relation is Relation.SUMMARIZES} == set(ids)
    for i in ids:
        assert atlas.get(i).weight == pytest.approx(before[i] * 0.7)
    assert len(atlas.events.events(kind="decay")) == len(ids)
    assert all("summarized by" in e.reason for e in atlas.events.events(kind="decay"))
    assert atlas.compress().summaries == ()  # summarised once
    # the details that state something ("Thanks!" is a backchannel: recall's walk and the context
    # windows step over it, `shared_core.formulas.scoring.step_over`)
    facts = {i for i, text in zip(ids, sources, strict=True) if not contentless(text)}
    assert len(facts) == len(ids) - 1
    for budget in (30, 60, 100, 400):  # never the summary beside every one of its details
        ctx = atlas.build_context("when is the Porto hotel", namespace="u", token_budget=budget, style="bullet",
                                  reinforce=False)
        shown = {m.node.id for m in ctx.memories}
        assert node.id not in shown or not facts <= shown, budget
    assert facts <= shown and "Summaries:" not in ctx.text  # room for every detail: the details only


def test_an_llm_writes_the_summary_and_a_bad_answer_falls_back(clock: ManualClock) -> None:
    for answer, expected in (("Porto trip: hotel May 3, train 7:05 May 2, Ana meets us.", "Porto trip: hotel"),
                             ("", "May 3")):
        atlas = ElasticMemoryAtlas(config=AtlasConfig(similar_threshold=0.5, merge_threshold=0.999),
                                   embedder=HashingEmbedder(dim=DIM), clock=clock, llm=lambda p, a=answer: a)
        _faded_cluster(atlas, clock)
        [summary] = atlas.compress().summaries
        assert expected in atlas.get(summary.summary_id).content


def test_a_long_session_gets_chapters_that_stay_out_of_its_chain(clock: ManualClock) -> None:
    atlas = _atlas(clock, chapter_size=5, similar_top=0)
    ids = [atlas.add_memory(f"step {i}: configured server {i} on port {8000 + i}", namespace="u",
                            session_id="ops").id for i in range(12)]
    report = atlas.compress()
    chapters = [s for s in report.summaries if s.kind == "chapter"]
    assert [list(c.members) for c in chapters] == [ids[:5], ids[5:10]]
    order = [n.id for n in atlas.memories(namespace="u", session_id="ops")]
    assert order == [chapters[0].summary_id, *ids[:5], chapters[1].summary_id, *ids[5:]]
    assert "8000" in atlas.get(chapters[0].summary_id).content
    nxt = atlas.add_memory("step 12: done", namespace="u", session_id="ops")
    assert any(e.relation is Relation.BEFORE and e.source == ids[-1] for e in atlas.edges(nxt.id))
    ctx = atlas.build_context("server", namespace="u", session_id="ops", token_budget=500, working_memory=20)
    working = [m.node.id for m in ctx.memories if m.paths == ("working",)]
    assert working and not {c.summary_id for c in chapters} & set(working)
    assert atlas.compress().summaries == ()  # each chapter is written once


def test_compression_runs_every_n_writes_and_shows_progress(clock: ManualClock,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    atlas = _atlas(clock, compress_every=4)
    for i in range(3):
        atlas.add_memory(f"note {i} about the garden", namespace="u")
    assert not atlas.events.events(kind="compress")
    atlas.add_memory("note 0 about the garden!", namespace="u")  # 4th write: compress, which merges
    assert [e.data["merged"] for e in atlas.events.events(kind="compress")] == [1]
    report = atlas.compress(progress=True)
    assert "compressing memories" in capsys.readouterr().err
    assert "compressed 1 namespace(s)" in str(report)


def test_near_duplicate_search_and_grouping_are_exact() -> None:
    rng = np.random.default_rng(0)
    base = rng.normal(size=(300, 8)).astype(np.float32)
    base /= np.linalg.norm(base, axis=1, keepdims=True)
    sims = base @ base.T
    expected = {(i, j) for i, j in zip(*np.nonzero(sims >= 0.9), strict=True)}
    assert {(i, j) for i, j, _ in near_duplicate_pairs(base, base, threshold=0.9, block=7)} == expected
    assert group_pairs([("a", "b"), ("b", "c"), ("x", "y")]) == [["a", "b", "c"], ["x", "y"]]


def test_the_extractive_summary_keeps_facts_and_drops_small_talk() -> None:
    text = extractive_summary(["Hello!", "User: please remind me to call Ana on 12 May.", "ok thanks",
                               "We decided to take the 7:05 train.", "we decided to take the 7:05 train",
                               "The weather was nice."], max_chars=200)
    assert text == "please remind me to call Ana on 12 May. We decided to take the 7:05 train."
    assert len(extractive_summary(["A decision on 1 May."] * 3 + [f"Fact {i} on May {i}." for i in range(50)],
                                  max_chars=80)) <= 80


def test_a_failing_embedder_leaves_the_atlas_as_it_was(clock: ManualClock, monkeypatch: pytest.MonkeyPatch) -> None:
    atlas = _atlas(clock, similar_threshold=0.5, merge_threshold=0.999)
    _faded_cluster(atlas, clock)
    atlas.add_memories(["the garage door is green", "The garage door is green!"], namespace="u")
    before = snapshot(atlas)

    def broken(texts: object, **kwargs: object) -> object:
        raise ConnectionError("embedding service down")

    monkeypatch.setattr(atlas._state, "embed", broken)
    with pytest.raises(ConnectionError):
        atlas.compress()
    assert snapshot(atlas) == before  # neither the merge nor the summary was applied
    monkeypatch.undo()
    report = atlas.compress()
    assert report.absorbed == 1 and len(report.summaries) == 1


def test_a_failing_summarizer_falls_back_to_the_extractive_summary(clock: ManualClock,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    class Broken:
        def summarize(self, texts: object) -> str:
            raise RuntimeError("summarizer crashed")

    atlas = ElasticMemoryAtlas(config=AtlasConfig(similar_threshold=0.5, merge_threshold=0.999),
                               embedder=HashingEmbedder(dim=DIM), clock=clock, summarizer=Broken())
    _faded_cluster(atlas, clock)
    [summary] = atlas.compress().summaries
    assert "May 3" in atlas.get(summary.summary_id).content and "summarizer crashed" in caplog.text


def test_a_summary_holds_at_most_half_of_its_sources_words() -> None:
    texts = ["We paid 40 euros for the tickets.", "The train left at 9:15 from platform 3.",
             "It was 3 hours late because of the storm.", "Room 12 was cold and had no heating.",
             "Alice booked the hotel on May 3.", "Bob lost his passport at 7 pm."]
    every = extractive_summary(texts)  # six sentences that each hold a number: all six are "valuable"
    assert word_count(every) == sum(word_count(t) for t in texts)
    capped = capped_summary(every, texts)
    assert capped is not None and 0 < word_count(capped) <= 0.5 * sum(word_count(t) for t in texts)
    assert all(sentence in " ".join(texts) for sentence in capped.split(". ") if sentence)
    assert capped_summary("One long sentence that is the only source here.",
                          ["One long sentence that is the only source here."]) is None


def test_a_chats_chapter_and_its_summarizer_say_who_said_what(clock: ManualClock) -> None:
    prompts: list[str] = []

    def llm(prompt: str) -> str:
        prompts.append(prompt)
        return "Kate booked the Porto hotel for May 3."

    for model in (None, llm):
        atlas = ElasticMemoryAtlas(config=AtlasConfig(chapter_size=4, similar_top=0), llm=model,
                                   embedder=HashingEmbedder(dim=DIM), clock=clock)
        turns = [("Kate", "We booked the hotel in Porto for May 3."), ("Tom", "The train leaves at 7:05 on May 2."),
                 ("Kate", "Ana will meet us at the station."), ("Tom", "I packed 2 umbrellas for the rain.")]
        atlas.add_memories([{"content": text, "metadata": {"speaker": who}} for who, text in turns],
                           namespace="u", session_id="chat")
        [chapter] = atlas.compress().summaries
        if model is None:  # the extractive summary keeps each sentence's speaker
            text = atlas.get(chapter.summary_id).content
            assert text.startswith("Kate: We booked the hotel in Porto for May 3. ")
            assert text.count(": ") == text.count(". ") + 1  # every sentence labelled
    assert "- Kate: We booked the hotel" in prompts[-1] and "- Tom: The train leaves" in prompts[-1]


def test_the_extractive_summary_keeps_a_speaker_on_each_sentence() -> None:
    texts = ["Kate: Hi! We booked the hotel in Porto for May 3. I paid 40 euros.", "User: I need a taxi at 6."]
    assert extractive_summary(texts) == ("Kate: We booked the hotel in Porto for May 3. Kate: I paid 40 euros. "
                                         "I need a taxi at 6.")
