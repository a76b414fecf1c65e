"""create_memory_tools: the standard tool suites, and the tools driven by an agent loop."""

from __future__ import annotations

import functools
import re
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool
from langchain_tests.integration_tests import ToolsIntegrationTests
from langchain_tests.unit_tests import ToolsUnitTests
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from langchain_atlas import create_memory_tools
from shared_core import AtlasConfig, ElasticMemoryAtlas, HashingEmbedder

from ._fakes import ScriptedChatModel


@functools.cache
def _standard_tools() -> dict[str, BaseTool]:
    atlas = ElasticMemoryAtlas(embedder=HashingEmbedder(dim=256))
    atlas.add_memory("Alice is allergic to peanuts", namespace="alice")
    return {t.name: t for t in create_memory_tools(atlas, namespace="alice", session_id="standard")}


class _Remember:
    @property
    def tool_constructor(self) -> BaseTool:
        return _standard_tools()["remember"]

    @property
    def tool_invoke_params_example(self) -> dict[str, Any]:
        return {"content": "Alice's favourite colour is teal", "importance": 2.0}


class _Recall:
    @property
    def tool_constructor(self) -> BaseTool:
        return _standard_tools()["recall"]

    @property
    def tool_invoke_params_example(self) -> dict[str, Any]:
        return {"query": "allergies", "k": 2}


class _Forget:
    @property
    def tool_constructor(self) -> BaseTool:
        return _standard_tools()["forget"]

    @property
    def tool_invoke_params_example(self) -> dict[str, Any]:
        return {"memory_id": "0123456789abcdef"}  # unknown: reported to the model as a tool error


class TestRememberToolUnit(_Remember, ToolsUnitTests):
    pass


class TestRememberToolIntegration(_Remember, ToolsIntegrationTests):
    pass


class TestRecallToolUnit(_Recall, ToolsUnitTests):
    pass


class TestRecallToolIntegration(_Recall, ToolsIntegrationTests):
    pass


class TestForgetToolUnit(_Forget, ToolsUnitTests):
    pass


class TestForgetToolIntegration(_Forget, ToolsIntegrationTests):
    pass


def _policy(messages: list[BaseMessage]) -> AIMessage:
    """A stand-in for a tool-calling model: remembers, recalls, then forgets what it recalled."""
    last = messages[-1]
    request = next(m for m in reversed(messages) if isinstance(m, HumanMessage)).text
    if isinstance(last, HumanMessage):
        if request.startswith("Remember: "):
            args: dict[str, Any] = {"content": request.removeprefix("Remember: "), "importance": 2.0}
            return AIMessage("", tool_calls=[{"name": "remember", "args": args, "id": "t1"}])
        if request.startswith("Forget "):
            return AIMessage("", tool_calls=[{"name": "recall", "args": {"query": request[7:], "k": 1}, "id": "t2"}])
        if request.startswith("Delete id "):
            return AIMessage("", tool_calls=[{"name": "forget", "args": {"memory_id": request[10:]}, "id": "t4"}])
        return AIMessage("", tool_calls=[{"name": "recall", "args": {"query": request}, "id": "t2"}])
    assert isinstance(last, ToolMessage)
    ids = re.findall(r"\[([\w-]{24})\]", last.text)  # the atlas's ids: 24 base64url characters
    if last.name == "recall" and request.startswith("Forget ") and ids:
        return AIMessage("", tool_calls=[{"name": "forget", "args": {"memory_id": ids[0]}, "id": "t3"}])
    return AIMessage(f"({last.status}) {last.text}")


def _agent(atlas: ElasticMemoryAtlas, namespace: str) -> Any:
    tools = create_memory_tools(atlas, namespace=namespace, session_id="agent-run")
    model = ScriptedChatModel(policy=_policy).bind_tools(tools)

    def call_model(state: MessagesState) -> dict[str, list[BaseMessage]]:
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", call_model)
    builder.add_node("tools", ToolNode(tools))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile()


def _ask(graph: Any, text: str) -> list[BaseMessage]:
    return graph.invoke({"messages": [HumanMessage(text)]})["messages"]  # type: ignore[no-any-return]


def test_an_agent_remembers_recalls_and_forgets(atlas: ElasticMemoryAtlas) -> None:
    graph = _agent(atlas, "alice")
    reply = _ask(graph, "Remember: Alice's passport expires in March 2027")[-1]
    assert reply.text.startswith("(success) Remembered as ")
    (node,) = atlas.memories(namespace="alice")
    assert (node.content, node.importance, node.session_id) == (
        "Alice's passport expires in March 2027", 2.0, "agent-run")

    messages = _ask(graph, "when does my passport expire?")
    tool_message = messages[-2]
    assert isinstance(tool_message, ToolMessage) and tool_message.name == "recall"
    assert f"[{node.id}] Alice's passport expires in March 2027" in tool_message.text
    assert isinstance(tool_message.artifact, list) and isinstance(tool_message.artifact[0], Document)
    assert tool_message.artifact[0].metadata["id"] == node.id

    messages = _ask(graph, "Forget passport")
    assert [m.name for m in messages if isinstance(m, ToolMessage)] == ["recall", "forget"]
    assert messages[-1].text == f"(success) Forgot {node.id}."
    assert atlas.count(namespace="alice") == 0


def test_tools_cannot_cross_namespaces(atlas: ElasticMemoryAtlas) -> None:
    secret = atlas.add_memory("Alice's bank PIN hint: birthday", namespace="alice")
    bob = _agent(atlas, "bob")
    assert _ask(bob, "bank PIN hint")[-1].text == "(success) No matching memories."
    reply = _ask(bob, f"Delete id {secret.id}")[-1]
    assert reply.text.startswith("(error)") and secret.id in reply.text  # the model sees the error ...
    assert atlas.get(secret.id).content == "Alice's bank PIN hint: birthday"  # ... and nothing happened


async def test_async_agent_loop(atlas: ElasticMemoryAtlas) -> None:
    graph = _agent(atlas, "carol")
    await graph.ainvoke({"messages": [HumanMessage("Remember: Carol's train leaves at 07:12")]})
    out = await graph.ainvoke({"messages": [HumanMessage("train time?")]})
    assert "Carol's train leaves at 07:12" in out["messages"][-1].text


def test_schemas_validate_arguments(atlas: ElasticMemoryAtlas) -> None:
    remember, recall, forget = create_memory_tools(atlas, namespace="alice")
    assert (remember.name, recall.name, forget.name) == ("remember", "recall", "forget")
    assert set(remember.tool_call_schema.model_json_schema()["properties"]) == {"content", "importance"}  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="content"):
        remember.invoke({"content": ""})
    with pytest.raises(ValueError, match="k"):
        recall.invoke({"query": "x", "k": 0})
    with pytest.raises(ValueError, match="namespace"):
        create_memory_tools(atlas, namespace=" ")


def test_remember_under_the_managed_preset_stores_and_recall_finds_it() -> None:
    atlas = ElasticMemoryAtlas(config=AtlasConfig.managed(), embedder=HashingEmbedder(dim=256))
    remember, recall, forget = create_memory_tools(atlas, namespace="u")
    answer = remember.invoke({"content": "the user owns a hamster", "importance": 3.0})
    assert len(atlas) == 1 and "wm-" not in answer
    assert "the user owns a hamster" in recall.invoke({"query": "hamster"})
    remember.invoke({"content": "ok thanks"})  # small talk, but the agent asked to keep it
    assert len(atlas) == 2
    memory_id = answer.removeprefix("Remembered as ").removesuffix(".")
    assert forget.invoke({"memory_id": memory_id}) == f"Forgot {memory_id}." and len(atlas) == 1
