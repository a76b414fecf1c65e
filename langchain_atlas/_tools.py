"""`create_memory_tools`: remember, recall and forget as tools for tool-calling agents."""

from __future__ import annotations

from typing import Any

from langchain_core.documents import Document
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from pydantic import BaseModel, Field

from shared_core import ElasticMemoryAtlas, MemoryNotFoundError, ScoredMemory
from shared_core.values import _validate as check

from ._convert import to_document

__all__ = ["create_memory_tools"]


class RememberInput(BaseModel):
    """Arguments of the ``remember`` tool."""

    content: str = Field(min_length=1, description="The fact, preference or event to remember, as one sentence.")
    importance: float = Field(default=1.0, ge=0.0, le=10.0,
                              description="How much it matters: 1 is normal, higher resists forgetting.")


class RecallInput(BaseModel):
    """Arguments of the ``recall`` tool."""

    query: str = Field(min_length=1, description="What to look for, in natural language.")
    k: int = Field(default=5, ge=1, le=50, description="Maximum number of memories to return.")


class ForgetInput(BaseModel):
    """Arguments of the ``forget`` tool."""

    memory_id: str = Field(min_length=1, description="The id of the memory to delete, as shown by recall.")


def _format(hits: list[ScoredMemory]) -> tuple[str, list[Document]]:
    if not hits:
        return "No matching memories.", []
    lines = [f"[{hit.node.id}] {' '.join(hit.node.content.split())} (score {hit.score:.2f})" for hit in hits]
    return "\n".join(lines), [to_document(hit) for hit in hits]


def create_memory_tools(atlas: ElasticMemoryAtlas | None = None, *, namespace: str,
                        session_id: str | None = None) -> list[BaseTool]:
    """Three `StructuredTool`s over one namespace of the atlas: ``remember``, ``recall``, ``forget``.

    ``remember`` stores a memory (in ``session_id``, when given) and returns its id; the agent
    asked to keep it, so the atlas's write filter (`AtlasConfig.managed`) never holds it back; ``recall``
    returns the best memories for a query as ``[id] text (score)`` lines, with the matching
    `Document`s as the tool message's artifact; ``forget`` deletes a memory by id. Every tool has
    a sync and an async form, and none can reach another namespace: a ``forget`` of an id from
    elsewhere fails as an unknown id, reported to the model as a tool error.

    Setup:
        ```bash
        pip install ".[langchain]"   # in a checkout of elastic-atlas (not on PyPI)
        ```

    Key init args:
        atlas: ElasticMemoryAtlas | None
            Where memories live (default: a new atlas with the offline MiniLM embedder).
        namespace: str
            The user or tenant the agent acts for.
        session_id: str | None
            Session new memories belong to; recall always searches the whole namespace.

    Instantiate:
        >>> from shared_core import ElasticMemoryAtlas, HashingEmbedder
        >>> from langchain_atlas import create_memory_tools
        >>> atlas = ElasticMemoryAtlas(embedder=HashingEmbedder())  # omit embedder= for MiniLM
        >>> remember, recall, forget = create_memory_tools(atlas, namespace="alice")

    Invoke:
        >>> remember.invoke({"content": "Alice is allergic to peanuts"})  # doctest: +ELLIPSIS
        'Remembered as ...'
        >>> print(recall.invoke({"query": "allergies", "k": 1}))  # doctest: +ELLIPSIS
        [...] Alice is allergic to peanuts (score ...)

    Bind to a chat model:
        ```python
        model_with_tools = model.bind_tools(create_memory_tools(atlas, namespace="alice"))
        ```
    """
    store = atlas if atlas is not None else ElasticMemoryAtlas()
    check.namespace(namespace)  # the core's rule (InvalidInputError, a ValueError), checked at once
    check.session(session_id)

    def remember(content: str, importance: float = 1.0) -> str:
        node = store.add_memory(content, namespace=namespace, session_id=session_id, importance=importance,
                                keep=True)
        return f"Remembered as {node.id}."

    async def aremember(content: str, importance: float = 1.0) -> str:
        node = await store.aadd_memory(content, namespace=namespace, session_id=session_id,
                                           importance=importance, keep=True)
        return f"Remembered as {node.id}."

    def recall(query: str, k: int = 5) -> tuple[str, list[Document]]:
        return _format(store.retrieve(query, namespace=namespace, top_k=k))

    async def arecall(query: str, k: int = 5) -> tuple[str, list[Document]]:
        return _format(await store.aretrieve(query, namespace=namespace, top_k=k))

    def forget(memory_id: str) -> str:
        try:
            store.forget(memory_id, namespace=namespace)
        except MemoryNotFoundError as exc:
            raise ToolException(str(exc)) from None
        return f"Forgot {memory_id}."

    async def aforget(memory_id: str) -> str:
        try:
            await store.aforget(memory_id, namespace=namespace)
        except MemoryNotFoundError as exc:
            raise ToolException(str(exc)) from None
        return f"Forgot {memory_id}."

    common: dict[str, Any] = {"handle_tool_error": True}
    return [
        StructuredTool.from_function(
            remember, coroutine=aremember, name="remember", args_schema=RememberInput, **common,
            description="Save a durable fact, preference or event about the user for future conversations."),
        StructuredTool.from_function(
            recall, coroutine=arecall, name="recall", args_schema=RecallInput,
            response_format="content_and_artifact", **common,
            description="Search long-term memory for facts relevant to a query; returns ids and texts."),
        StructuredTool.from_function(
            forget, coroutine=aforget, name="forget", args_schema=ForgetInput, **common,
            description="Delete a memory that is wrong or that the user asked to forget, by its id."),
    ]
