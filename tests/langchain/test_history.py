"""AtlasChatMessageHistory: exact, ordered, per-session history whose messages are also memories."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.language_models import FakeListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables.history import RunnableWithMessageHistory

from langchain_atlas import AtlasChatMessageHistory, AtlasRetriever
from shared_core import ElasticMemoryAtlas, InvalidInputError, Relation

from ._fakes import PromptRecorder

# RunnableWithMessageHistory is deprecated upstream; these tests use it on purpose.
LEGACY_RUNNABLE = pytest.mark.filterwarnings(
    "ignore:RunnableWithMessageHistory is deprecated:langchain_core._api.deprecation.LangChainDeprecationWarning")
# the fields of AtlasConfig.managed(), for the conftest's make_atlas
_MANAGED: dict[str, Any] = {"write_filter": True, "contradiction_check": True, "compress_every": 200,
                            "prune_below": 0.2}


@LEGACY_RUNNABLE
def test_runnable_with_message_history_keeps_sessions_in_order_and_apart(atlas: ElasticMemoryAtlas) -> None:
    prompt = ChatPromptTemplate.from_messages([
        ("system", "You are terse."), MessagesPlaceholder("history"), ("human", "{question}")])
    model = FakeListChatModel(responses=[f"answer {i}" for i in range(1, 7)])
    chain = RunnableWithMessageHistory(
        prompt | model,
        lambda session_id: AtlasChatMessageHistory(atlas=atlas, namespace="alice", session_id=session_id),
        input_messages_key="question", history_messages_key="history")
    recorder = PromptRecorder()
    script = [("a", "My name is Alice"), ("b", "I like sailing"), ("a", "What is my name?"),
              ("b", "What do I like?"), ("a", "Thanks"), ("b", "Bye")]
    for session, question in script:
        chain.invoke({"question": question},
                     config={"configurable": {"session_id": session}, "callbacks": [recorder]})

    history_a = AtlasChatMessageHistory(atlas=atlas, namespace="alice", session_id="a").messages
    assert [(m.type, m.text) for m in history_a] == [
        ("human", "My name is Alice"), ("ai", "answer 1"), ("human", "What is my name?"), ("ai", "answer 3"),
        ("human", "Thanks"), ("ai", "answer 5")]
    history_b = AtlasChatMessageHistory(atlas=atlas, namespace="alice", session_id="b").messages
    assert [m.text for m in history_b] == ["I like sailing", "answer 2", "What do I like?", "answer 4", "Bye",
                                            "answer 6"]
    # what the model saw at the 3rd call: its own session's history only, in order
    seen = [m.text for m in recorder.chats[2]]
    assert seen == ["You are terse.", "My name is Alice", "answer 1", "What is my name?"]
    assert all("sailing" not in text for chat in recorder.chats[::2] for text in (m.text for m in chat))


def test_messages_round_trip_exactly(atlas: ElasticMemoryAtlas) -> None:
    history = AtlasChatMessageHistory(atlas=atlas, namespace="alice", session_id="s")
    messages: list[BaseMessage] = [
        SystemMessage("Be brief."),
        HumanMessage("Look up my allergies", id="h1"),
        AIMessage("", tool_calls=[{"name": "recall", "args": {"query": "allergies"}, "id": "call-1"}], id="a1"),
        ToolMessage("peanuts", tool_call_id="call-1"),
        AIMessage([{"type": "text", "text": "You are allergic to peanuts."}], response_metadata={"model": "fake"}),
    ]
    history.add_messages(messages)
    assert history.messages == messages
    assert len(atlas.memories(namespace="alice", session_id="s")) == 5


def test_each_message_is_a_memory_recallable_from_elsewhere(atlas: ElasticMemoryAtlas) -> None:
    history = AtlasChatMessageHistory(atlas=atlas, namespace="alice", session_id="monday")
    history.add_messages([HumanMessage("I parked on level 3, spot 42"), AIMessage("Noted: level 3, spot 42.")])
    human, ai = atlas.memories(namespace="alice", session_id="monday")
    assert human.content == "Human: I parked on level 3, spot 42" and human.metadata["role"] == "human"
    assert (ai.id, human.id, Relation.RESPONDS_TO) in {(e.source, e.target, e.relation) for e in atlas.edges(ai.id)}
    docs = AtlasRetriever(atlas=atlas, namespace="alice", k=1).invoke("where did I park?")
    assert docs[0].page_content == "Human: I parked on level 3, spot 42"


def test_clear_deletes_one_session_only(atlas: ElasticMemoryAtlas) -> None:
    one = AtlasChatMessageHistory(atlas=atlas, namespace="alice", session_id="one")
    two = AtlasChatMessageHistory(atlas=atlas, namespace="alice", session_id="two")
    one.add_user_message("first")
    two.add_user_message("second")
    one.clear()
    assert one.messages == []
    assert [m.text for m in two.messages] == ["second"]


def test_namespaces_are_isolated(atlas: ElasticMemoryAtlas) -> None:
    AtlasChatMessageHistory(atlas=atlas, namespace="alice", session_id="s").add_user_message("alice's secret")
    assert AtlasChatMessageHistory(atlas=atlas, namespace="bob", session_id="s").messages == []


def test_other_memories_in_the_session_are_not_messages(atlas: ElasticMemoryAtlas) -> None:
    history = AtlasChatMessageHistory(atlas=atlas, namespace="alice", session_id="s")
    history.add_user_message("hello")
    atlas.add_memory("a fact stored directly", namespace="alice", session_id="s")
    history.add_ai_message("hi")
    assert [m.text for m in history.messages] == ["hello", "hi"]


async def test_async_forms(atlas: ElasticMemoryAtlas) -> None:
    history = AtlasChatMessageHistory(atlas=atlas, namespace="alice", session_id="s")
    await history.aadd_messages([HumanMessage("ping"), AIMessage("pong")])
    assert [m.text for m in await history.aget_messages()] == ["ping", "pong"]
    await history.aclear()
    assert await history.aget_messages() == []


def test_unserialisable_metadata_is_stored_as_text(atlas: ElasticMemoryAtlas) -> None:
    history = AtlasChatMessageHistory(atlas=atlas, namespace="alice", session_id="s")
    history.add_message(AIMessage("done", response_metadata={"finished": object()}))
    (message,) = history.messages
    assert message.text == "done" and isinstance(message.response_metadata["finished"], str)


@pytest.mark.parametrize("bad", [{"namespace": "", "session_id": "s"}, {"namespace": "a", "session_id": " "}])
def test_invalid_arguments(atlas: ElasticMemoryAtlas, bad: dict[str, str]) -> None:
    with pytest.raises(InvalidInputError):
        AtlasChatMessageHistory(atlas=atlas, **bad)


@LEGACY_RUNNABLE
def test_under_the_managed_preset_the_history_keeps_every_turn(make_atlas: Callable[..., ElasticMemoryAtlas],
                                                               caplog: pytest.LogCaptureFixture) -> None:
    atlas = make_atlas(**_MANAGED)
    model = FakeListChatModel(responses=["Noted: June 12.", "You're welcome!"])
    chain = RunnableWithMessageHistory(
        ChatPromptTemplate.from_messages([MessagesPlaceholder("history"), ("human", "{question}")]) | model,
        lambda session_id: AtlasChatMessageHistory(atlas=atlas, namespace="u", session_id=session_id),
        input_messages_key="question", history_messages_key="history")
    for question in ("My flight to Lisbon is on June 12", "ok thanks!"):
        chain.invoke({"question": question}, config={"configurable": {"session_id": "s"}})
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    history = AtlasChatMessageHistory(atlas=atlas, namespace="u", session_id="s")
    assert [(m.type, m.text) for m in history.messages] == [
        ("human", "My flight to Lisbon is on June 12"), ("ai", "Noted: June 12."), ("human", "ok thanks!"),
        ("ai", "You're welcome!")]
    # the filter decided what became long-term memory, not what the transcript holds
    assert "Human: ok thanks!" not in [n.content for n in atlas.memories(namespace="u")]


def test_add_messages_under_the_managed_preset_stores_the_whole_batch(
        make_atlas: Callable[..., ElasticMemoryAtlas]) -> None:
    atlas = make_atlas(**_MANAGED)
    history = AtlasChatMessageHistory(atlas=atlas, namespace="u", session_id="s")
    history.add_messages([HumanMessage("ok thanks!"), AIMessage("We booked the Alfama hotel for June 12")])
    history.add_messages([HumanMessage("I adopted a dog named Rex last May"), AIMessage("cool")])
    assert [m.text for m in history.messages] == [
        "ok thanks!", "We booked the Alfama hotel for June 12", "I adopted a dog named Rex last May", "cool"]
    history.clear()
    assert history.messages == [] and len(atlas) == 0
