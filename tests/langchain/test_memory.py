"""AtlasMemory: budgeted recall for the legacy ConversationChain and LLMChain."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from langchain_classic.chains import ConversationChain, LLMChain
from langchain_classic.memory import ConversationTokenBufferMemory
from langchain_core.language_models import FakeListLLM
from langchain_core.messages import SystemMessage
from langchain_core.prompts import PromptTemplate
from pydantic import ValidationError

from langchain_atlas import AtlasMemory
from shared_core import ElasticMemoryAtlas, ManualClock, Relation

from ._fakes import PromptRecorder

# These tests use LangChain's deprecated legacy chains on purpose; only they silence its notice, and only
# for those classes (the token buffer builds an InMemoryChatMessageHistory, deprecated too).
LEGACY_CHAIN = pytest.mark.filterwarnings(
    "ignore:The class `(ConversationChain|LLMChain|ConversationTokenBufferMemory|InMemoryChatMessageHistory)`"
    ":langchain_core._api.deprecation.LangChainDeprecationWarning")

FACT = "My sister Ingrid lives in Tromsø and works as a marine biologist."
QUESTION = "Remind me, where is my sister based these days?"
TOPICS = [
    "the espresso machine at the office", "a flaky test in the billing service", "my tomato seedlings",
    "the quarterly planning deck", "learning the cello", "our kitchen renovation", "a podcast about Rome",
    "the car's winter tyres", "my running shoes", "the new laptop's battery", "a sourdough starter",
    "the team offsite in May", "my tax return", "a board game for six players", "the balcony herbs",
    "a Python packaging question", "the dentist appointment", "my bike's squeaky chain", "a birthday gift for Sam",
]
TURNS = [FACT] + [f"{prefix} {topic}?" for topic in TOPICS
                  for prefix in ("Any quick thoughts on", "What would you do about")] + [QUESTION]
BUDGET = 300


def _replies() -> list[str]:
    return [f"Reply {i}: here is what I think." for i in range(1, len(TURNS) + 1)]


def _history_in(prompt: str) -> str:
    """The {history} part of ConversationChain's default prompt."""
    return prompt.split("Current conversation:\n", 1)[1].rsplit("\nHuman: ", 1)[0]


def _converse(memory: object, clock: ManualClock) -> list[str]:
    recorder = PromptRecorder()
    chain = ConversationChain(llm=FakeListLLM(responses=_replies()), memory=memory)
    for turn in TURNS:
        clock.advance(minutes=1)
        chain.invoke({"input": turn}, config={"callbacks": [recorder]})
    return recorder.prompts


@LEGACY_CHAIN
def test_a_fact_from_turn_1_is_in_the_prompt_at_turn_40_where_a_buffer_has_lost_it(
        atlas: ElasticMemoryAtlas, clock: ManualClock) -> None:
    assert len(TURNS) == 40
    memory = AtlasMemory(atlas=atlas, namespace="alice", session_id="chat", token_budget=BUDGET, working_memory=4)
    prompts = _converse(memory, clock)
    assert len(prompts) == 40
    history = _history_in(prompts[-1])
    assert "Tromsø" in history
    assert "What would you do about a birthday gift for Sam?" in history  # the working memory is there too
    assert atlas.count_tokens(history) <= BUDGET
    assert all(atlas.count_tokens(_history_in(p)) <= BUDGET for p in prompts)

    buffer = ConversationTokenBufferMemory(
        llm=FakeListLLM(responses=["unused"], custom_get_token_ids=lambda text: [0] * atlas.count_tokens(text)),
        max_token_limit=BUDGET)
    buffer_prompts = _converse(buffer, clock)
    buffer_history = _history_in(buffer_prompts[-1])
    assert "Tromsø" not in buffer_history  # same budget, first in first out: the fact is gone
    assert atlas.count_tokens(buffer_history) <= BUDGET
    assert "Tromsø" in _history_in(buffer_prompts[1])  # ... though the buffer did hold it early on


@LEGACY_CHAIN
def test_works_as_llmchain_memory_with_a_custom_prompt(atlas: ElasticMemoryAtlas) -> None:
    prompt = PromptTemplate.from_template("Known facts:\n{memories}\n\nQuestion: {question}\nAnswer:")
    memory = AtlasMemory(atlas=atlas, namespace="alice", memory_key="memories", style="bullet", token_budget=200)
    recorder = PromptRecorder()
    chain = LLMChain(llm=FakeListLLM(responses=["Noted.", "Oat milk."]), prompt=prompt, memory=memory)
    chain.invoke({"question": "I only drink oat milk."}, config={"callbacks": [recorder]})
    out = chain.invoke({"question": "What milk do I drink?"}, config={"callbacks": [recorder]})
    assert out["text"] == "Oat milk."
    assert "Human: I only drink oat milk." in recorder.prompts[1]


async def test_async_load_and_save(atlas: ElasticMemoryAtlas) -> None:
    memory = AtlasMemory(atlas=atlas, namespace="alice", session_id="s")
    await memory.asave_context({"input": "I keep bees"}, {"output": "How many hives?"})
    loaded = await memory.aload_memory_variables({"input": "tell me about the bees"})
    assert "Human: I keep bees" in loaded["history"] and "AI: How many hives?" in loaded["history"]


def test_save_context_links_turns_to_what_was_recalled(atlas: ElasticMemoryAtlas) -> None:
    old = atlas.add_memory("Ingrid is my sister", namespace="alice", session_id="old-chat")
    memory = AtlasMemory(atlas=atlas, namespace="alice", session_id="new-chat", cross_session=True)
    context = memory.load_memory_variables({"input": "What does my sister Ingrid do?"})["history"]
    assert "Ingrid is my sister" in context
    memory.save_context({"input": "What does my sister Ingrid do?"}, {"response": "She is a marine biologist."})
    human, ai = atlas.memories(namespace="alice", session_id="new-chat")
    assert (human.content, ai.content) == ("Human: What does my sister Ingrid do?", "AI: She is a marine biologist.")
    assert (human.metadata["role"], ai.metadata["role"]) == ("human", "ai")
    edges = {(e.source, e.target, e.relation) for e in atlas.edges(human.id)}
    assert (human.id, old.id, Relation.RELATED_TO) in edges
    assert (ai.id, human.id, Relation.RESPONDS_TO) in edges


def test_budget_holds_for_every_style(make_atlas: Callable[..., ElasticMemoryAtlas]) -> None:
    rendered: set[str] = set()
    for style in ("timeline", "bullet", "narrative"):
        atlas = make_atlas()
        memory = AtlasMemory(atlas=atlas, namespace="n", token_budget=60, style=style)
        for i in range(12):
            memory.save_context({"input": f"Fact number {i} about the garden shed"}, {"output": f"Got fact {i}."})
        text = memory.load_memory_variables({"input": "the garden shed"})["history"]
        assert text and atlas.count_tokens(text) <= 60, style
        rendered.add(text)
    assert len(rendered) == 3  # the style reaches the atlas


def test_return_messages_gives_one_system_message(atlas: ElasticMemoryAtlas) -> None:
    memory = AtlasMemory(atlas=atlas, namespace="alice", return_messages=True)
    assert memory.load_memory_variables({"input": "hello"}) == {"history": []}
    memory.save_context({"input": "I live in Bergen"}, {"output": "Nice city."})
    (message,) = memory.load_memory_variables({"input": "where do I live?"})["history"]
    assert isinstance(message, SystemMessage) and "Human: I live in Bergen" in message.text


def test_clear_ends_the_session(atlas: ElasticMemoryAtlas) -> None:
    memory = AtlasMemory(atlas=atlas, namespace="alice", session_id="s1")
    memory.save_context({"input": "Remember the code word: pelican"}, {"output": "Pelican it is."})
    other = AtlasMemory(atlas=atlas, namespace="alice", session_id="s2")
    other.save_context({"input": "Unrelated chat"}, {"output": "Sure."})
    memory.clear()
    assert atlas.memories(namespace="alice", session_id="s1") == []
    assert len(atlas.memories(namespace="alice", session_id="s2")) == 2
    assert "pelican" not in memory.load_memory_variables({"input": "code word?"})["history"]

    fading = AtlasMemory(atlas=atlas, namespace="alice", session_id="s2", clear_mode="fade")
    fading.clear()
    assert [m.weight < 1.0 for m in atlas.memories(namespace="alice", session_id="s2")] == [True, True]


def test_input_and_output_keys(atlas: ElasticMemoryAtlas) -> None:
    memory = AtlasMemory(atlas=atlas, namespace="alice", input_key="q", output_key="a")
    memory.save_context({"q": "I like jazz", "user": "alice"}, {"a": "Me too", "trace": "…"})
    assert [m.content for m in atlas.memories(namespace="alice")] == ["Human: I like jazz", "AI: Me too"]
    inferred = AtlasMemory(atlas=atlas, namespace="bob")
    with pytest.raises(ValueError, match="output_key"):
        inferred.save_context({"input": "hi"}, {"a": "x", "b": "y"})
    with pytest.raises(ValueError, match="One input key expected"):
        inferred.load_memory_variables({"a": "x", "b": "y"})


def test_blank_input_loads_nothing_and_stores_nothing(atlas: ElasticMemoryAtlas) -> None:
    memory = AtlasMemory(atlas=atlas, namespace="alice")
    assert memory.load_memory_variables({"input": "  "}) == {"history": ""}
    memory.save_context({"input": " "}, {"output": ""})
    assert atlas.count(namespace="alice") == 0


def test_a_recalled_memory_forgotten_before_save_does_not_break_it(atlas: ElasticMemoryAtlas) -> None:
    gone = atlas.add_memory("The wifi password is hunter2", namespace="alice", session_id="old")
    memory = AtlasMemory(atlas=atlas, namespace="alice", cross_session=True)
    assert "hunter2" in memory.load_memory_variables({"input": "what is the wifi password?"})["history"]
    atlas.forget(gone.id)
    memory.save_context({"input": "what is the wifi password?"}, {"output": "I no longer know."})
    assert atlas.count(namespace="alice") == 2


@pytest.mark.parametrize("bad", [{"namespace": ""}, {"namespace": "a", "token_budget": -1},
                                 {"namespace": "a", "style": "haiku"}])
def test_invalid_arguments_fail_at_construction(atlas: ElasticMemoryAtlas, bad: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        AtlasMemory(atlas=atlas, **bad)


def test_memory_variables_and_defaults(atlas: ElasticMemoryAtlas) -> None:
    memory = AtlasMemory(atlas=atlas, namespace="alice", memory_key="chat_history")
    assert memory.memory_variables == ["chat_history"]
    assert memory.session_id != AtlasMemory(atlas=atlas, namespace="alice").session_id  # a fresh session each
