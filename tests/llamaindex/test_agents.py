"""AtlasMemory as ``memory=`` of FunctionAgent and AgentWorkflow runs (async methods only)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from llama_index.core.agent.workflow import AgentWorkflow, FunctionAgent
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.tools import FunctionTool

from llamaindex_atlas import AtlasMemory
from shared_core import ElasticMemoryAtlas, ManualClock
from tests.llamaindex._helpers import FACT, QUESTION, filler

# llama-index-workflows scans each agent with inspect.getmembers (on construction and on every
# run), touching pydantic's deprecated `__fields__`, `__fields_set__` and `model_computed_fields`
# attributes. Those warnings, attributed to `inspect`, are the only ones ignored here.
pytestmark = pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecationWarning:inspect")


class ScriptedLLM:
    """A function-calling mock: calls ``get_weather`` when asked about weather, otherwise acknowledges;
    records every message list it is sent."""

    def __init__(self) -> None:
        self.calls: list[list[ChatMessage]] = []

    def __call__(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        self.calls.append(list(messages))
        last = messages[-1]
        if last.role == MessageRole.TOOL:
            return ChatMessage(role=MessageRole.ASSISTANT, content=f"The forecast: {last.content}")
        if "weather" in (last.content or "") and kwargs.get("tools"):
            call = ToolCallBlock(tool_call_id=f"call-{len(self.calls)}", tool_name="get_weather",
                                 tool_kwargs={"city": "Lyon"})
            return ChatMessage(role=MessageRole.ASSISTANT, blocks=[call])
        return ChatMessage(role=MessageRole.ASSISTANT, content="Noted.")

    def seen_last(self) -> str:
        return "\n".join(m.content or "" for m in self.calls[-1])


def get_weather(city: str) -> str:
    """The weather forecast for a city."""
    return f"sunny in {city}"


def _agent(script: ScriptedLLM) -> FunctionAgent:
    return FunctionAgent(tools=[FunctionTool.from_defaults(get_weather)],
                         llm=MockFunctionCallingLLM(response_generator=script), system_prompt="Be brief.")


async def test_function_agent_recalls_turn_1_at_turn_40(atlas: ElasticMemoryAtlas, clock: ManualClock) -> None:
    script = ScriptedLLM()
    agent = _agent(script)
    memory = AtlasMemory(atlas=atlas, namespace="alice", session_id="agent", token_limit=300)
    await agent.run(FACT, memory=memory)
    for turn in range(2, 40):
        clock.advance(minutes=1)
        await agent.run(filler(turn), memory=memory)
    clock.advance(minutes=1)
    await agent.run(QUESTION, memory=memory)
    assert FACT in script.seen_last()
    sent = script.calls[-1]
    assert sent[0].content == "Be brief." and sent[-1].content == QUESTION
    assert sum(atlas.count_tokens(m.content or "") for m in sent[1:]) <= 300
    assert sum(m.role == MessageRole.USER for m in memory.get_all()) == 40


async def test_tool_calls_are_stored_and_replayed_in_order(atlas: ElasticMemoryAtlas) -> None:
    script = ScriptedLLM()
    agent = _agent(script)
    memory = AtlasMemory(atlas=atlas, namespace="alice", session_id="agent")
    response = await agent.run("What's the weather in Lyon?", memory=memory)
    assert str(response) == "The forecast: sunny in Lyon"
    history = await memory.aget_all()
    assert [m.role for m in history] == [MessageRole.USER, MessageRole.ASSISTANT, MessageRole.TOOL,
                                         MessageRole.ASSISTANT]
    call = history[1].blocks[0]
    assert isinstance(call, ToolCallBlock) and call.tool_name == "get_weather"
    assert history[2].additional_kwargs["tool_call_id"] == call.tool_call_id

    await agent.run("And what did the tool say?", memory=memory)
    replayed = script.calls[-1]  # the next run sends the call and its result, still paired
    roles = [m.role for m in replayed]
    assert roles.index(MessageRole.TOOL) == roles.index(MessageRole.ASSISTANT) + 1
    assert any(isinstance(b, ToolCallBlock) for b in replayed[roles.index(MessageRole.ASSISTANT)].blocks)


async def test_agent_workflow_remembers_across_sessions(atlas: ElasticMemoryAtlas) -> None:
    script = ScriptedLLM()
    agent = _agent(script)
    workflow = AgentWorkflow(agents=[agent])
    await workflow.run(user_msg=FACT, memory=AtlasMemory(atlas=atlas, namespace="alice", session_id="monday"))
    tuesday = AtlasMemory(atlas=atlas, namespace="alice", session_id="tuesday")
    await workflow.run(user_msg=QUESTION, memory=tuesday)
    assert FACT in script.seen_last() and "(from session monday)" in script.seen_last()
    assert [m.content for m in await tuesday.aget_all()] == [QUESTION, "Noted."]

    await workflow.run(user_msg=QUESTION, memory=AtlasMemory(atlas=atlas, namespace="bob", session_id="monday"))
    assert "Pixel" not in script.seen_last()
