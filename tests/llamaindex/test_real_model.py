"""With the real MiniLM model: recall by meaning, where the question shares no content word with the fact."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms.mock import MockFunctionCallingLLM

from llamaindex_atlas import AtlasMemory
from shared_core import ElasticMemoryAtlas, ManualClock
from tests.llamaindex._helpers import FACT, filler

pytestmark = pytest.mark.integration


def test_a_paraphrased_question_recalls_turn_1_at_turn_40(clock: ManualClock) -> None:
    sent: list[list[ChatMessage]] = []

    def reply(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        sent.append(list(messages))  # a mock that answers each turn differently, as a real model would
        topic = (messages[-1].content or "").split("about ")[-1].split(",")[0]
        return ChatMessage(role=MessageRole.ASSISTANT, content=f"Here is what I know about {topic}.")

    atlas = ElasticMemoryAtlas(clock=clock)  # the default offline MiniLM embedder
    memory = AtlasMemory(atlas=atlas, namespace="alice", session_id="chat", token_limit=300)
    engine = SimpleChatEngine.from_defaults(llm=MockFunctionCallingLLM(response_generator=reply), memory=memory)
    engine.chat(FACT)
    for turn in range(2, 40):
        clock.advance(minutes=1)
        engine.chat(filler(turn))
    engine.chat("Which pet do I own, and what does it like to eat?")
    assert FACT in "\n".join(m.content or "" for m in sent[-1])
