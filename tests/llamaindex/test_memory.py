"""AtlasMemory on its own: storage round trips, the token budget, recall, sessions, async forms."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.llms.mock import MockLLM
from llama_index.core.vector_stores.types import FilterOperator, MetadataFilter, MetadataFilters

from llamaindex_atlas import AtlasMemory
from shared_core import ElasticMemoryAtlas, HashingEmbedder, ManualClock
from tests.llamaindex._helpers import FACT, QUESTION, filler

AtlasFactory = Callable[..., ElasticMemoryAtlas]


def _user(text: str) -> ChatMessage:
    return ChatMessage(role=MessageRole.USER, content=text)


def _assistant(text: str) -> ChatMessage:
    return ChatMessage(role=MessageRole.ASSISTANT, content=text)


def _tokens(atlas: ElasticMemoryAtlas, messages: list[ChatMessage]) -> int:
    return sum(atlas.count_tokens(m.content or "") for m in messages)


def _conversation(memory: AtlasMemory, clock: ManualClock, turns: int) -> None:
    memory.put_messages([_user(FACT), _assistant("Noted.")])
    for turn in range(2, turns):
        clock.advance(minutes=1)
        memory.put_messages([_user(filler(turn)), _assistant(f"Here are some details for turn {turn}.")])


def test_an_empty_memory_is_truthy(atlas: ElasticMemoryAtlas) -> None:
    memory = AtlasMemory(atlas=atlas)
    assert memory.get_all() == []
    assert memory.get() == []
    assert bool(memory) is True


def test_messages_round_trip_in_order_with_tool_calls(atlas: ElasticMemoryAtlas) -> None:
    call = ToolCallBlock(tool_call_id="call-1", tool_name="weather", tool_kwargs={"city": "Lyon"})
    messages = [
        ChatMessage(role=MessageRole.SYSTEM, content="Be brief."),
        _user("What's the weather in Lyon?"),
        ChatMessage(role=MessageRole.ASSISTANT, blocks=[call]),
        ChatMessage(role=MessageRole.TOOL, content="Sunny, 24°C", additional_kwargs={"tool_call_id": "call-1"}),
        _assistant("It is sunny in Lyon."),
    ]
    memory = AtlasMemory(atlas=atlas, namespace="alice", session_id="s1")
    memory.put(messages[0])
    memory.put_messages(messages[1:])
    assert memory.get_all() == messages
    stored = atlas.memories(namespace="alice", session_id="s1")
    assert [m.content for m in stored][2] == 'Called weather({"city": "Lyon"})'
    assert [m.metadata["role"] for m in stored] == ["system", "user", "assistant", "tool", "assistant"]


def test_get_returns_recent_turns_after_one_recall_message(atlas: ElasticMemoryAtlas, clock: ManualClock) -> None:
    memory = AtlasMemory(atlas=atlas, namespace="alice", session_id="s1", token_limit=250)
    _conversation(memory, clock, turns=30)
    memory.put(_user(QUESTION))
    messages = memory.get()
    recall, recent = messages[0], messages[1:]
    assert recall.role == MessageRole.SYSTEM
    assert FACT in recall.content
    assert recent[-1].content == QUESTION
    assert recent[0].role == MessageRole.USER
    assert recent == memory.get_all()[-len(recent):]
    assert all(m.content not in recall.content for m in recent)  # shown turns are not recalled again
    assert FACT not in [m.content for m in recent]


@pytest.mark.parametrize("token_limit", [40, 90, 200, 600])
@pytest.mark.parametrize("style", ["timeline", "bullet", "narrative"])
def test_get_stays_within_the_token_limit(atlas: ElasticMemoryAtlas, clock: ManualClock, token_limit: int,
                                          style: str) -> None:
    memory = AtlasMemory(atlas=atlas, session_id="s1", token_limit=token_limit, style=style)
    _conversation(memory, clock, turns=25)
    memory.put(_user(QUESTION))
    messages = memory.get()
    assert _tokens(atlas, messages) <= token_limit
    assert messages[-1].content == QUESTION


def test_initial_token_count_is_taken_off_the_budget(atlas: ElasticMemoryAtlas, clock: ManualClock) -> None:
    memory = AtlasMemory(atlas=atlas, session_id="s1", token_limit=200)
    _conversation(memory, clock, turns=20)
    assert _tokens(atlas, memory.get(QUESTION, initial_token_count=120)) <= 80
    with pytest.raises(ValueError, match="initial_token_count"):
        memory.get(QUESTION, initial_token_count=200)


def test_a_latest_message_over_the_limit_is_still_returned(atlas: ElasticMemoryAtlas) -> None:
    memory = AtlasMemory(atlas=atlas, token_limit=10)
    long = "please read this rather long message " * 10
    memory.put_messages([_user("hello"), _user(long)])
    assert memory.get() == [_user(long)]


def test_recent_turns_never_start_with_an_assistant_or_tool_message(atlas: ElasticMemoryAtlas) -> None:
    memory = AtlasMemory(atlas=atlas, token_limit=60, recent_token_ratio=1.0)
    call = ToolCallBlock(tool_call_id="c", tool_name="lookup", tool_kwargs={})
    memory.put_messages([
        _user("a question that is long enough to fall out of the window " * 6),
        ChatMessage(role=MessageRole.ASSISTANT, blocks=[call]),
        ChatMessage(role=MessageRole.TOOL, content="forty two", additional_kwargs={"tool_call_id": "c"}),
        _assistant("The answer is forty two."),
        _user("thanks"),
    ])
    recent = [m for m in memory.get() if m.role != MessageRole.SYSTEM]
    assert recent == [_user("thanks")]


def test_input_drives_recall_and_is_not_stored(atlas: ElasticMemoryAtlas, clock: ManualClock) -> None:
    memory = AtlasMemory(atlas=atlas, session_id="s1", token_limit=200)
    _conversation(memory, clock, turns=20)
    stored = len(memory.get_all())
    messages = memory.get(input=QUESTION)
    assert FACT in messages[0].content
    assert len(memory.get_all()) == stored
    assert memory.get(input=_user(QUESTION))[0].content == messages[0].content


def test_sessions_are_isolated_and_cross_session_recall_is_labelled(atlas: ElasticMemoryAtlas) -> None:
    first = AtlasMemory(atlas=atlas, namespace="alice", session_id="monday")
    first.put_messages([_user(FACT), _assistant("Noted.")])
    second = AtlasMemory(atlas=atlas, namespace="alice", session_id="tuesday")
    assert second.get_all() == []
    recall = second.get(QUESTION)
    assert len(recall) == 1
    assert FACT in recall[0].content and "(from session monday)" in recall[0].content

    private = AtlasMemory(atlas=atlas, namespace="alice", session_id="tuesday", cross_session=False)
    assert private.get(QUESTION) == []
    stranger = AtlasMemory(atlas=atlas, namespace="bob", session_id="monday")
    assert stranger.get_all() == [] and stranger.get(QUESTION) == []


def test_facts_written_to_the_atlas_directly_are_recalled_not_replayed(atlas: ElasticMemoryAtlas) -> None:
    atlas.add_memory("Alice is allergic to peanuts.", namespace="alice", session_id="s1")
    memory = AtlasMemory(atlas=atlas, namespace="alice", session_id="s1")
    assert memory.get_all() == []
    memory.put(_user("Can I eat peanuts?"))
    messages = memory.get()
    assert "allergic to peanuts" in messages[0].content
    assert messages[1:] == [_user("Can I eat peanuts?")]


def test_filters_accept_llama_index_metadata_filters(atlas: ElasticMemoryAtlas) -> None:
    atlas.add_memory("Alice's cat is called Pixel.", namespace="alice", metadata={"topic": "pets"})
    atlas.add_memory("Alice's car is called Pixel too.", namespace="alice", metadata={"topic": "cars"})
    filters = MetadataFilters(filters=[MetadataFilter(key="topic", value="pets", operator=FilterOperator.EQ)])
    memory = AtlasMemory(atlas=atlas, namespace="alice", filters=filters)
    assert memory.filters == {"topic": {"$eq": "pets"}}
    recall = memory.get("What is called Pixel?")[0].content
    assert "cat" in recall and "car" not in recall
    with pytest.raises(ValueError, match="AND only"):
        AtlasMemory(atlas=atlas, filters=MetadataFilters(filters=filters.filters, condition="or"))


def test_set_replaces_the_history_and_keeps_the_common_prefix(atlas: ElasticMemoryAtlas) -> None:
    memory = AtlasMemory(atlas=atlas, namespace="alice", session_id="s1")
    memory.put_messages([_user("one"), _assistant("two"), _user("three")])
    kept = [m.id for m in atlas.memories(namespace="alice", session_id="s1")][:2]
    memory.set([_user("one"), _assistant("two"), _user("four"), _assistant("five")])
    assert [m.content for m in memory.get_all()] == ["one", "two", "four", "five"]
    assert [m.id for m in atlas.memories(namespace="alice", session_id="s1")][:2] == kept
    memory.set([])
    assert memory.get_all() == []


def test_reset_clears_this_session_only(atlas: ElasticMemoryAtlas) -> None:
    mine = AtlasMemory(atlas=atlas, namespace="alice", session_id="s1")
    other = AtlasMemory(atlas=atlas, namespace="alice", session_id="s2")
    mine.put_messages([_user("hello"), _assistant("hi")])
    other.put(_user("bonjour"))
    atlas.add_memory("a fact, not a message", namespace="alice", session_id="s1")
    mine.reset()
    assert mine.get_all() == []
    assert other.get_all() == [_user("bonjour")]
    assert [m.content for m in atlas.memories(namespace="alice", session_id="s1")] == ["a fact, not a message"]


def test_from_defaults_takes_the_limit_from_the_llm_and_seeds_history(atlas: ElasticMemoryAtlas) -> None:
    memory = AtlasMemory.from_defaults(atlas=atlas, llm=MockLLM(), chat_history=[_user("hi")], session_id="s")
    assert memory.token_limit == int(MockLLM().metadata.context_window * 0.75)
    assert memory.get_all() == [_user("hi")]
    assert AtlasMemory.from_defaults(atlas=atlas).token_limit == 2000  # as the LangChain AtlasMemory
    with pytest.raises(ValueError, match="either atlas= or embed_model="):
        AtlasMemory.from_defaults(atlas=atlas, embed_model=object())  # type: ignore[arg-type]


def test_fields_are_validated(atlas: ElasticMemoryAtlas) -> None:
    for bad in ({"token_limit": 0}, {"style": "poem"}, {"namespace": ""}, {"recent_token_ratio": 1.5}):
        with pytest.raises(ValueError):
            AtlasMemory(atlas=atlas, **bad)


def test_tokenizer_fn_counts_like_the_atlas(atlas: ElasticMemoryAtlas) -> None:
    memory = AtlasMemory(atlas=atlas)
    text = "Elastic memories for agents."
    assert len(memory.tokenizer_fn(text)) == atlas.count_tokens(text)
    counted = AtlasMemory(atlas=ElasticMemoryAtlas(embedder=HashingEmbedder(dim=16), token_counter=lambda t: 7))
    assert len(counted.tokenizer_fn(text)) == 7


async def test_async_forms(atlas: ElasticMemoryAtlas, clock: ManualClock) -> None:
    memory = AtlasMemory(atlas=atlas, namespace="alice", session_id="s1", token_limit=200)
    await memory.aput(_user(FACT))
    await memory.aput_messages([_assistant("Noted.")] + [_user(filler(t)) for t in range(2, 20)])
    assert len(await memory.aget_all()) == 20
    messages = await memory.aget(input=QUESTION)
    assert FACT in messages[0].content
    await memory.aset([_user("fresh start")])
    assert await memory.aget_all() == [_user("fresh start")]
    await memory.areset()
    assert await memory.aget_all() == []


@pytest.mark.parametrize("style", ["timeline", "bullet", "narrative"])
@pytest.mark.parametrize("token_limit", [120, 300])
def test_only_the_recalled_memories_shown_are_reinforced(atlas: ElasticMemoryAtlas, clock: ManualClock,
                                                         style: str, token_limit: int) -> None:
    memory = AtlasMemory(atlas=atlas, namespace="alice", session_id="s1", token_limit=token_limit, style=style)
    _conversation(memory, clock, turns=25)
    memory.put(_user(QUESTION))
    reinforced: list[str] = []
    unsubscribe = atlas.subscribe(lambda e: reinforced.append(e.node_id) if e.kind == "reinforce" else None)
    messages = memory.get()
    unsubscribe()
    assert messages[0].role == MessageRole.SYSTEM and FACT in messages[0].content
    by_id = {m.id: m for m in atlas.memories(namespace="alice", session_id="s1")}
    shown_as_turns = {m.content for m in messages[1:]}
    assert reinforced, "recall reinforces what it shows"
    for node_id in reinforced:
        assert by_id[node_id].content not in shown_as_turns  # recent turns are working memory, not recalled
        assert by_id[node_id].content.rstrip(".") in messages[0].content  # and every memory reinforced is shown


def test_under_the_managed_preset_get_all_keeps_every_message(make_atlas: AtlasFactory) -> None:
    atlas = make_atlas(write_filter=True, contradiction_check=True, compress_every=200, prune_below=0.2)
    memory = AtlasMemory.from_defaults(atlas=atlas, namespace="u", session_id="s")
    for text in ("My flight is on June 12", "ok thanks!", "cool"):
        memory.put(_user(text))
    assert [m.content for m in memory.get_all()] == ["My flight is on June 12", "ok thanks!", "cool"]
    assert len(atlas) == 1  # only the fact became long-term memory
    memory.set([_user("My flight is on June 12"), _user("ok thanks!")])
    assert [m.content for m in memory.get_all()] == ["My flight is on June 12", "ok thanks!"]
    memory.reset()
    assert memory.get_all() == [] and len(atlas) == 0
