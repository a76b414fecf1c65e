"""Offline stand-ins for LangChain models and embeddings, shared by the LangChain tests."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler, CallbackManagerForLLMRun
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

from shared_core import HashingEmbedder

__all__ = ["HashingEmbeddings", "PromptRecorder", "ScriptedChatModel"]


class HashingEmbeddings(Embeddings):
    """A LangChain ``Embeddings`` over the core's deterministic hashing embedder; counts its calls."""

    def __init__(self, dim: int = 256) -> None:
        self._inner = HashingEmbedder(dim=dim)
        self.calls = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        return self._inner.embed(texts).tolist()  # type: ignore[no-any-return]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


class PromptRecorder(BaseCallbackHandler):
    """Captures every prompt sent to an LLM (``prompts``) or chat model (``chats``)."""

    def __init__(self) -> None:
        self.prompts: list[str] = []
        self.chats: list[list[BaseMessage]] = []

    def on_llm_start(self, serialized: dict[str, Any], prompts: list[str], **kwargs: Any) -> None:
        self.prompts.extend(prompts)

    def on_chat_model_start(self, serialized: dict[str, Any], messages: list[list[BaseMessage]],
                            **kwargs: Any) -> None:
        self.chats.extend(list(m) for m in messages)


class ScriptedChatModel(BaseChatModel):
    """A tool-calling chat model whose next message is computed by ``policy(messages)``.

    It stands in for a real model in agent loops: the policy reads the conversation so far (tool
    results included) and returns the next ``AIMessage``, with or without tool calls.
    """

    policy: Callable[[list[BaseMessage]], AIMessage]
    bound_tools: list[str] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted-chat-model"

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self.policy(list(messages)))])

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:  # type: ignore[override]
        names = [getattr(t, "name", getattr(t, "__name__", str(t))) for t in tools]
        return self.model_copy(update={"bound_tools": names})
