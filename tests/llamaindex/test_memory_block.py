"""AtlasMemoryBlock inside LlamaIndex's `Memory`: ingestion of flushed turns, recall, truncation."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.memory import Memory, StaticMemoryBlock
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from llamaindex_atlas import AtlasMemoryBlock
from shared_core import ElasticMemoryAtlas, ManualClock
from tests.llamaindex._helpers import FACT, QUESTION, filler


@pytest.fixture
async def engine() -> AsyncIterator[AsyncEngine]:
    """The SQLite engine of Memory's short-term store, closed after the test (else aiosqlite warns)."""
    engine = create_async_engine("sqlite+aiosqlite:///:memory:")
    yield engine
    await engine.dispose()


def _memory(engine: AsyncEngine, *blocks: object, session_id: str = "chat", token_limit: int = 400,
            **kwargs: object) -> Memory:
    options: dict[str, object] = {"chat_history_token_ratio": 0.5, "token_flush_size": 60, **kwargs}
    return Memory.from_defaults(session_id=session_id, token_limit=token_limit, memory_blocks=list(blocks),
                                async_engine=engine, **options)  # type: ignore[arg-type]


async def _chat(memory: Memory, clock: ManualClock, turns: int = 30) -> None:
    await memory.aput_messages([ChatMessage(role=MessageRole.USER, content=FACT),
                                ChatMessage(role=MessageRole.ASSISTANT, content="Noted.")])
    for turn in range(2, turns):
        clock.advance(minutes=1)
        await memory.aput_messages([ChatMessage(role=MessageRole.USER, content=filler(turn)),
                                    ChatMessage(role=MessageRole.ASSISTANT, content=f"Details for turn {turn}.")])


def _text(messages: list[ChatMessage]) -> str:
    return "\n".join(m.content or "" for m in messages)


async def test_flushed_turns_are_stored_and_recalled(atlas: ElasticMemoryAtlas, clock: ManualClock,
                                                   engine: AsyncEngine) -> None:
    memory = _memory(engine, AtlasMemoryBlock(atlas=atlas, namespace="alice", token_limit=150))
    await _chat(memory, clock)
    stored = atlas.memories(namespace="alice", session_id="chat")  # the Memory's own session
    assert stored and stored[0].content == FACT
    assert all("session_id" not in m.metadata for m in stored)  # Memory's stamp is not kept
    short_term = await memory.aget()
    assert FACT not in _text(short_term[1:])  # long gone from the short-term buffer

    messages = await memory.aget(input=QUESTION)
    assert messages[0].role == MessageRole.SYSTEM
    assert "<long_term_memory>" in (messages[0].content or "") and FACT in (messages[0].content or "")

    plain = _memory(engine, session_id="plain")
    await _chat(plain, ManualClock())
    assert FACT not in _text(await plain.aget(input=QUESTION))  # the same Memory without the block has lost it


async def test_the_block_stays_within_its_token_limit(atlas: ElasticMemoryAtlas, clock: ManualClock,
                                                      engine: AsyncEngine) -> None:
    memory = _memory(engine, AtlasMemoryBlock(atlas=atlas, namespace="alice", token_limit=60, style="bullet"))
    await _chat(memory, clock)
    content = (await memory.aget(input=QUESTION))[0].content or ""
    inner = content.split("<long_term_memory>")[1].split("</long_term_memory>")[0].strip()
    assert 0 < atlas.count_tokens(inner) <= 60


async def test_an_explicit_session_wins_and_other_sessions_are_recalled(
        atlas: ElasticMemoryAtlas, clock: ManualClock, engine: AsyncEngine) -> None:
    await _chat(_memory(engine, AtlasMemoryBlock(atlas=atlas, namespace="alice", session_id="pinned"),
                        session_id="x"), clock)
    assert atlas.sessions(namespace="alice") == ["pinned"]

    later = _memory(engine, AtlasMemoryBlock(atlas=atlas, namespace="alice"), session_id="tuesday")
    recalled = (await later.aget(input=QUESTION))[0].content or ""
    assert FACT in recalled and "(from session pinned)" in recalled
    private = _memory(engine, AtlasMemoryBlock(atlas=atlas, namespace="alice", cross_session=False),
                      session_id="wednesday")
    assert await private.aget(input=QUESTION) == []
    stranger = _memory(engine, AtlasMemoryBlock(atlas=atlas, namespace="bob"), session_id="tuesday")
    assert await stranger.aget(input=QUESTION) == []


async def test_truncation_follows_priority(atlas: ElasticMemoryAtlas, engine: AsyncEngine) -> None:
    atlas.add_memories([f"Pixel the cat fact number {i}: she likes box number {i}." for i in range(12)],
                       namespace="alice", session_id="old")
    history = [ChatMessage(role=MessageRole.USER, content=filler(t)) for t in range(8)]

    async def rendered(priority: int) -> str:
        block = AtlasMemoryBlock(atlas=atlas, namespace="alice", priority=priority, token_limit=600,
                                 reinforce=False)
        memory = _memory(engine, block, session_id=f"p{priority}", token_limit=260)
        await memory.aset(history)
        out = await memory.aget(input="What does Pixel the cat like?")
        return out[0].content or ""

    untouched, truncated = await rendered(0), await rendered(1)
    assert untouched.count("Pixel the cat fact") == 12  # priority 0: never truncated
    assert 0 < truncated.count("Pixel the cat fact") < 12  # cut down, not dropped whole


async def test_atruncate_drops_lowest_scored_memories_first(atlas: ElasticMemoryAtlas) -> None:
    atlas.add_memories(["Pixel likes sardines.", "Pixel sleeps in a box.", "The weather was mild."],
                       namespace="alice")
    block = AtlasMemoryBlock(atlas=atlas, namespace="alice", style="bullet", reinforce=False)
    content = await block.aget([ChatMessage(role="user", content="What does Pixel like? sardines")])
    full = atlas.count_tokens(content)
    smaller = await block.atruncate(content, 12)
    assert smaller is not None and atlas.count_tokens(smaller) <= full - 12
    assert "Pixel likes sardines." in smaller
    assert await block.atruncate(content, full) is None
    assert await block.atruncate("text this block never rendered", 1) is None
    assert await block.aget([]) == ""


async def test_works_beside_other_blocks(atlas: ElasticMemoryAtlas, engine: AsyncEngine) -> None:
    memory = _memory(engine, StaticMemoryBlock(name="profile", static_content="The user is Alice."),
                     AtlasMemoryBlock(atlas=atlas, namespace="alice"), token_limit=200, token_flush_size=20,
                     chat_history_token_ratio=0.3)
    await memory.aput(ChatMessage(role="user", content=FACT))
    for turn in range(2, 12):
        await memory.aput(ChatMessage(role="user", content=filler(turn)))
    system = (await memory.aget(input=QUESTION))[0].content or ""
    assert "<profile>" in system and "The user is Alice." in system
    assert FACT in system


def test_from_defaults_and_fields(atlas: ElasticMemoryAtlas) -> None:
    block = AtlasMemoryBlock.from_defaults(atlas=atlas, namespace="alice", token_limit=50,
                                           retrieval_context_window=2, name="recall")
    assert (block.name, block.token_limit, block.retrieval_context_window) == ("recall", 50, 2)
    assert block.priority == 1 and block.accept_short_term_memory
