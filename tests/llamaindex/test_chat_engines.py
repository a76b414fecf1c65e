"""AtlasMemory inside LlamaIndex's chat engines, checked on what the (mock) LLM receives."""

from __future__ import annotations

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.chat_engine import CondensePlusContextChatEngine, SimpleChatEngine
from llama_index.core.llms.mock import MockLLMWithChatMemoryOfLastCall
from llama_index.core.memory import BaseMemory, ChatMemoryBuffer

from llamaindex_atlas import AtlasMemory, AtlasRetriever
from shared_core import ElasticMemoryAtlas, ManualClock
from tests.llamaindex._helpers import FACT, QUESTION, filler

TOKEN_LIMIT = 300
SYSTEM_PROMPT = "You are a helpful assistant."


def _llm() -> MockLLMWithChatMemoryOfLastCall:
    return MockLLMWithChatMemoryOfLastCall(max_tokens=8, is_chat_model=True)  # replies "text text …"


def _talk_for_40_turns(engine: SimpleChatEngine, clock: ManualClock) -> None:
    engine.chat(FACT)
    for turn in range(2, 40):
        clock.advance(minutes=1)
        engine.chat(filler(turn))
    clock.advance(minutes=1)
    engine.chat(QUESTION)


def _seen(llm: MockLLMWithChatMemoryOfLastCall) -> str:
    assert llm.last_chat_messages is not None
    return "\n".join(m.content or "" for m in llm.last_chat_messages)


def test_turn_40_still_sees_the_fact_from_turn_1_where_a_buffer_has_lost_it(
        atlas: ElasticMemoryAtlas, clock: ManualClock) -> None:
    llm = _llm()
    memory = AtlasMemory(atlas=atlas, namespace="alice", session_id="chat", token_limit=TOKEN_LIMIT)
    engine = SimpleChatEngine.from_defaults(llm=llm, memory=memory, system_prompt=SYSTEM_PROMPT)
    _talk_for_40_turns(engine, clock)
    sent = list(llm.last_chat_messages or [])
    assert FACT in _seen(llm)
    assert sent[0].content == SYSTEM_PROMPT and sent[-1].content == QUESTION
    # the system prompt, the recalled memories and the recent turns all fit in the limit
    assert sum(atlas.count_tokens(m.content or "") for m in sent) <= TOKEN_LIMIT
    assert len(memory.get_all()) == 80

    buffer_llm = _llm()
    buffer = ChatMemoryBuffer.from_defaults(token_limit=TOKEN_LIMIT)
    buffer_engine = SimpleChatEngine.from_defaults(llm=buffer_llm, memory=buffer, system_prompt=SYSTEM_PROMPT)
    _talk_for_40_turns(buffer_engine, ManualClock())
    assert FACT not in _seen(buffer_llm)
    assert (buffer_llm.last_chat_messages or [])[-1].content == QUESTION


async def test_async_chat_sees_the_fact_too(atlas: ElasticMemoryAtlas, clock: ManualClock) -> None:
    llm = _llm()
    memory = AtlasMemory(atlas=atlas, namespace="alice", session_id="chat", token_limit=TOKEN_LIMIT)
    engine = SimpleChatEngine.from_defaults(llm=llm, memory=memory)
    await engine.achat(FACT)
    for turn in range(2, 40):
        clock.advance(minutes=1)
        await engine.achat(filler(turn))
    await engine.achat(QUESTION)
    assert FACT in _seen(llm)
    assert llm.last_called_chat_function[-1] == "achat"
    assert (await memory.aget_all())[-2:] == [ChatMessage(role=MessageRole.USER, content=QUESTION),
                                              ChatMessage(role=MessageRole.ASSISTANT, content=" ".join(["text"] * 8))]


def test_an_empty_memory_is_kept_by_the_engine(atlas: ElasticMemoryAtlas) -> None:
    memory = AtlasMemory(atlas=atlas)
    engine = SimpleChatEngine.from_defaults(llm=_llm(), memory=memory)
    assert engine._memory is memory
    engine.chat("hello")
    assert [m.role for m in memory.get_all()] == [MessageRole.USER, MessageRole.ASSISTANT]
    engine.reset()
    assert memory.get_all() == []


def test_a_new_session_remembers_the_previous_one(atlas: ElasticMemoryAtlas) -> None:
    SimpleChatEngine.from_defaults(
        llm=_llm(), memory=AtlasMemory(atlas=atlas, namespace="alice", session_id="monday")).chat(FACT)
    llm = _llm()
    tuesday = AtlasMemory(atlas=atlas, namespace="alice", session_id="tuesday")
    SimpleChatEngine.from_defaults(llm=llm, memory=tuesday).chat(QUESTION)
    assert FACT in _seen(llm) and "(from session monday)" in _seen(llm)
    assert tuesday.get_all()[0].content == QUESTION

    other_llm = _llm()
    SimpleChatEngine.from_defaults(
        llm=other_llm, memory=AtlasMemory(atlas=atlas, namespace="bob", session_id="tuesday")).chat(QUESTION)
    assert "Pixel" not in _seen(other_llm)


def _memory_is_recalled_with_input(memory: BaseMemory, question: str) -> str:
    messages = memory.get(input=question)
    return messages[0].content or "" if messages else ""


def test_condense_plus_context_engine(atlas: ElasticMemoryAtlas, clock: ManualClock) -> None:
    atlas.add_memories(["The office opens at 8:30 on weekdays.", "The office is closed on public holidays."],
                       namespace="handbook")
    memory = AtlasMemory(atlas=atlas, namespace="alice", session_id="chat", token_limit=TOKEN_LIMIT)
    llm = _llm()
    engine = CondensePlusContextChatEngine.from_defaults(
        retriever=AtlasRetriever(atlas=atlas, namespace="handbook", similarity_top_k=2),
        llm=llm, memory=memory, skip_condense=True)
    engine.chat(FACT)
    for turn in range(2, 30):
        clock.advance(minutes=1)
        engine.chat(filler(turn))
    response = engine.chat("When does the office open? And what is my cat called?")
    assert {n.node.text for n in response.source_nodes} >= {"The office opens at 8:30 on weekdays."}
    seen = _seen(llm)
    assert "The office opens at 8:30 on weekdays." in seen  # the retriever's context
    assert FACT in seen  # the memory's recall, although turn 1 is far out of the recent window
    assert len(memory.get_all()) == 60
    assert FACT in _memory_is_recalled_with_input(memory, QUESTION)


async def test_condense_plus_context_engine_async(atlas: ElasticMemoryAtlas) -> None:
    memory = AtlasMemory(atlas=atlas, namespace="alice", session_id="chat", token_limit=TOKEN_LIMIT)
    llm = _llm()
    engine = CondensePlusContextChatEngine.from_defaults(
        retriever=AtlasRetriever(atlas=atlas, namespace="alice"), llm=llm, memory=memory, skip_condense=True)
    await engine.achat(FACT)
    await engine.achat(QUESTION)
    assert FACT in _seen(llm)
    assert [m.role for m in await memory.aget_all()] == [MessageRole.USER, MessageRole.ASSISTANT] * 2
