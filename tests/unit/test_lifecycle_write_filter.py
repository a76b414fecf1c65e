"""The write filter: unimportant turns stay in working memory only, bounded, and nothing else changes."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest

from shared_core import (
    AtlasConfig,
    ElasticMemoryAtlas,
    HashingEmbedder,
    InvalidInputError,
    LLMWriteFilter,
    ManualClock,
    importance_score,
)
from shared_core.engine.lifecycle.capacity import NODE_OVERHEAD
from shared_core.engine.lifecycle.write_filter import WorkingBuffer, parse_score

Build = Callable[..., ElasticMemoryAtlas]


@pytest.mark.parametrize(("text", "low"), [
    ("ok thanks!", True), ("hi", True), ("How are you?", True), ("lol", True), ("sounds good", True),
    ("the weather is nice", True),
    ("What time is my dentist appointment?", False), ("I love jazz", False), ("Alice lives in Porto", False),
    ("Remember that the wifi password is hunter2", False), ("We decided to move the launch to June 3", False),
])
def test_the_importance_score_separates_small_talk_from_facts(text: str, low: bool) -> None:
    assert (importance_score(text) < 0.3) is low


def test_held_turns_stay_in_working_memory_only(make_atlas: Build, clock: ManualClock) -> None:
    atlas = make_atlas(write_filter=True)
    fact = atlas.add_memory("My flight to Lisbon is on June 12", namespace="u", session_id="s")
    clock.advance(1)
    chat = atlas.add_memory("ok thanks!", namespace="u", session_id="s")
    assert chat.kind == "working" and chat.id.startswith("wm-") and chat.embedding is None
    assert [n.id for n in atlas.memories(namespace="u")] == [fact.id] and len(atlas) == 1
    assert atlas.working_memory(namespace="u", session_id="s") == [chat]
    assert all(h.node.id != chat.id for h in atlas.retrieve("thanks", namespace="u", reinforce=False))
    ctx = atlas.build_context("flight", namespace="u", session_id="s", token_budget=200, style="bullet")
    working = [m.node.content for m in ctx.memories if m.paths == ("working",)]
    assert working == ["My flight to Lisbon is on June 12", "ok thanks!"]  # in order, in the first tier
    assert "ok thanks!" in ctx.text.split("\n\n")[0]
    [hold] = atlas.events.events(kind="hold")
    assert hold.node_id == chat.id and "working memory only" in hold.reason and "0.00 < 0.3" in hold.reason
    other = atlas.build_context("flight", namespace="u", session_id="other", token_budget=200, style="bullet")
    assert "ok thanks" not in other.text  # another session's working memory
    assert atlas.end_session("s", namespace="u") == 1 and atlas.working_memory(namespace="u", session_id="s") == []


def test_batches_keep_their_order_and_some_turns_always_pass(make_atlas: Build) -> None:
    atlas = make_atlas(write_filter=True)
    anchor = atlas.add_memory("Project Atlas kickoff is on May 2", namespace="u")
    out = atlas.add_memories(["hi", "The budget is 4000 euros", {"content": "ok", "pinned": True},
                              {"content": "cool", "links_to": [anchor.id]}, "thanks"], namespace="u", session_id="s")
    assert [n.content for n in out] == ["hi", "The budget is 4000 euros", "ok", "cool", "thanks"]
    assert [n.kind for n in out] == ["working", "memory", "memory", "memory", "working"]
    assert atlas.count(namespace="u") == 4


def test_the_filter_is_off_by_default_and_pluggable(make_atlas: Build, clock: ManualClock,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    plain = make_atlas()
    assert plain.add_memory("ok thanks!", namespace="u").kind == "memory"

    class LengthFilter:
        def score(self, text: str) -> float:
            return min(1.0, len(text) / 20)

    custom = ElasticMemoryAtlas(embedder=HashingEmbedder(dim=32), clock=clock, write_filter=LengthFilter())
    assert custom.add_memory("short", namespace="u").kind == "working"
    assert custom.add_memory("a long enough sentence", namespace="u").kind == "memory"

    class Broken:
        def score(self, text: str) -> float:
            raise RuntimeError("scorer down")

    broken = ElasticMemoryAtlas(embedder=HashingEmbedder(dim=32), clock=clock, write_filter=Broken())
    with caplog.at_level(logging.ERROR, logger="shared_core"):
        assert broken.add_memory("hi", namespace="u").kind == "memory"  # a failing filter never drops a turn
    assert "scorer down" in caplog.text


def test_an_llm_filter_falls_back_to_the_heuristic_on_a_bad_answer(caplog: pytest.LogCaptureFixture) -> None:
    assert LLMWriteFilter(lambda p: '{"importance": 0.9}').score("hi") == 0.9
    assert LLMWriteFilter(lambda p: "0.05").score("We decided to move to Porto in May") == 0.05
    with caplog.at_level(logging.WARNING, logger="shared_core"):
        assert LLMWriteFilter(lambda p: "very important!").score("ok") == importance_score("ok")
        assert LLMWriteFilter(lambda p: "7").score("I love jazz") == importance_score("I love jazz")
    assert caplog.text.count("malformed") == 2
    assert [parse_score(a) for a in ("1", "true", "-0.1", "```json\n0.5\n```")] == [1.0, None, None, 0.5]


def test_the_buffer_is_bounded_per_session_and_in_sessions() -> None:
    from shared_core import MemoryNode

    buffer = WorkingBuffer(per_session=3, max_sessions=2)
    for s in range(4):
        for i in range(5):
            buffer.add(MemoryNode(id=f"{s}-{i}", content=f"turn {i}", namespace="u", session_id=f"s{s}"))
    assert len(buffer) == 6 and buffer.count == 6 and buffer.text_bytes == 6 * len("turn 0")
    assert [n.id for n in buffer.latest("u", "s3", 10)] == ["3-4", "3-3", "3-2"]
    assert buffer.latest("u", "s0", 10) == []  # least recently written session dropped
    assert buffer.drop("u", "s3") == 3 and len(buffer) == 3


def test_held_turns_are_kept_for_the_transcript_and_count_toward_bytes(clock: ManualClock) -> None:
    atlas = ElasticMemoryAtlas(config=AtlasConfig(write_filter=True, working_memory=4),
                               embedder=HashingEmbedder(dim=16), clock=clock)
    for i in range(2000):
        atlas.add_memory("ok", namespace="u", session_id=f"s{(i // 4) % 500}")
    assert len(atlas) == 0 and len(atlas._life.held) == 2000  # every held turn: it is part of a transcript
    assert atlas.stats().held == 2000 and atlas.stats().bytes_used > 2000 * NODE_OVERHEAD
    assert len(atlas.working_memory(namespace="u", session_id="s0")) == 4
    assert atlas.end_session("s0", namespace="u") == 0 and atlas.stats().held == 2000 - 4


def test_an_explicit_importance_or_keep_passes_the_filter_and_the_default_does_not(make_atlas: Build) -> None:
    atlas = make_atlas(write_filter=True, contradiction_check=True)
    assert atlas.add_memory("sounds good to me", namespace="u").kind == "working"  # the filter's call
    assert atlas.add_memory("sounds good to me", namespace="u", importance=10.0).kind == "memory"
    assert atlas.add_memory("ok", namespace="u", keep=True).kind == "memory"
    with pytest.raises(InvalidInputError):
        atlas.add_memory("ok", namespace="u", keep="yes")  # type: ignore[arg-type]
    assert len(atlas) == 2 and len(atlas.working_memory(namespace="u", session_id=None)) == 1


def test_the_buffer_finds_and_removes_a_held_turn_by_id() -> None:
    from shared_core import MemoryNode

    buffer = WorkingBuffer()
    for i in range(40):
        buffer.add(MemoryNode(id=f"wm-{i}", content="ok", namespace="u", session_id="s"))
    assert len(buffer) == 40 and buffer.find("wm-7") is not None and buffer.find("wm-x") is None
    assert buffer.remove("wm-7") is not None and buffer.remove("wm-7") is None
    assert len(buffer) == 39 and buffer.text_bytes == 39 * 2 and "wm-7" not in [n.id for n in buffer]
    assert [n.id for n in buffer.latest("u", "s", 2)] == ["wm-39", "wm-38"]


def test_held_turns_are_bounded_by_max_bytes_oldest_first(clock: ManualClock) -> None:
    cap = 200 * NODE_OVERHEAD
    atlas = ElasticMemoryAtlas(config=AtlasConfig(write_filter=True, max_bytes=cap),
                               embedder=HashingEmbedder(dim=16), clock=clock)
    kept = atlas.add_memory("Alice lives in Porto", namespace="u", keep=True)
    for i in range(3000):
        atlas.add_memory("ok", namespace="u", session_id=f"s{i // 10}")
    assert atlas.stats().bytes_used <= cap
    assert 0 < atlas.stats().held < 3000
    assert atlas.get(kept.id).content == "Alice lives in Porto"  # small talk went before the fact
    assert atlas.memories(namespace="u", session_id="s299", include_held=True)  # the newest stayed
    assert not atlas.memories(namespace="u", session_id="s0", include_held=True)  # the oldest went
