"""`AtlasChatMessageHistory`: a session's messages, each also a memory of the atlas."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import BaseMessage

from shared_core import ElasticMemoryAtlas
from shared_core.values import _validate as check

from ._convert import memory_item, messages_of

__all__ = ["AtlasChatMessageHistory"]


class AtlasChatMessageHistory(BaseChatMessageHistory):
    """Chat message history kept in an `ElasticMemoryAtlas`, one memory per message.

    `messages` returns the session's messages in the order they were added, rebuilt exactly
    (type, content, tool calls, ids). Because every message is also a memory of the namespace,
    an `AtlasRetriever` or `AtlasMemory` over the same atlas can recall it later, from any
    session. Memories the atlas evicts under its capacity cap or expires leave the history too.

    The history keeps every message it is given, whatever the atlas's config: with the write
    filter on (`AtlasConfig.managed`), small talk ("ok thanks!") stays in the transcript, held in
    working memory, and only the rest becomes long-term memory that recall can find.

    Setup:
        ```bash
        pip install ".[langchain]"   # in a checkout of elastic-atlas (not on PyPI)
        ```

    Key init args:
        atlas: ElasticMemoryAtlas
            Where messages live (default: a new atlas with the offline MiniLM embedder).
        namespace: str
            The user or tenant.
        session_id: str
            The conversation whose messages this history holds.

    Instantiate:
        >>> from shared_core import ElasticMemoryAtlas, HashingEmbedder
        >>> from langchain_atlas import AtlasChatMessageHistory
        >>> atlas = ElasticMemoryAtlas(embedder=HashingEmbedder())  # omit embedder= for MiniLM
        >>> history = AtlasChatMessageHistory(atlas=atlas, namespace="alice", session_id="chat-1")

    Invoke:
        >>> history.add_user_message("I moved to Bergen last spring")
        >>> history.add_ai_message("Bergen! Bring an umbrella.")
        >>> [m.type for m in history.messages]
        ['human', 'ai']
        >>> atlas.retrieve("where do I live?", namespace="alice", top_k=1)[0].node.content
        'Human: I moved to Bergen last spring'

    Use with ``RunnableWithMessageHistory`` (deprecated upstream in favour of LangGraph
    persistence, still supported):
        ```python
        chain = RunnableWithMessageHistory(
            model, lambda session_id: AtlasChatMessageHistory(atlas=atlas, namespace="alice",
                                                              session_id=session_id))
        ```
    """

    def __init__(self, *, atlas: ElasticMemoryAtlas | None = None, namespace: str, session_id: str,
                 human_prefix: str = "Human", ai_prefix: str = "AI") -> None:
        check.namespace(namespace)  # the core's rule, so a bad name fails here, not at the first message
        check.name(session_id, "session_id")
        self.atlas = atlas if atlas is not None else ElasticMemoryAtlas()
        self.namespace = namespace
        self.session_id = session_id
        self.human_prefix = human_prefix
        self.ai_prefix = ai_prefix

    def __reduce__(self) -> Any:
        raise TypeError(
            "AtlasChatMessageHistory cannot be pickled: it holds a live ElasticMemoryAtlas (a model session "
            "and indexes). Save the atlas with atlas.save(path), keep (namespace, session_id), and rebuild it with "
            "AtlasChatMessageHistory(atlas=ElasticMemoryAtlas.load(path), namespace=..., session_id=...)")

    def __repr__(self) -> str:
        return f"AtlasChatMessageHistory(namespace={self.namespace!r}, session_id={self.session_id!r})"

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """The session's messages, oldest first."""
        nodes = self.atlas.memories(namespace=self.namespace, session_id=self.session_id, include_held=True)
        return messages_of([node.metadata for node in nodes])

    async def aget_messages(self) -> list[BaseMessage]:
        return await asyncio.to_thread(lambda: self.messages)

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Store messages in one write; an AI message ``responds_to`` the user message before it
        (when both became memories: a turn held in working memory has no edges). A user message
        with no text is not stored."""
        # a blank user turn (an empty input box) is no memory: it would only crowd recall
        messages = [m for m in messages if not (m.type == "human" and isinstance(m.content, str)
                                                and not m.content.strip())]
        if not messages:
            return
        items = [memory_item(m, human_prefix=self.human_prefix, ai_prefix=self.ai_prefix) for m in messages]
        nodes = self.atlas.add_memories(items, namespace=self.namespace, session_id=self.session_id)
        if len(nodes) != len(messages):  # some were evicted at once by a tiny capacity cap
            return
        for i in range(1, len(messages)):
            if messages[i].type == "ai" and messages[i - 1].type == "human" \
                    and nodes[i].kind != "working" and nodes[i - 1].kind != "working":
                self.atlas.link(nodes[i].id, nodes[i - 1].id, relation="responds_to", namespace=self.namespace)

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        await asyncio.to_thread(self.add_messages, messages)

    def clear(self) -> None:
        """Delete the session's memories (pinned ones stay)."""
        self.atlas.end_session(self.session_id, namespace=self.namespace, mode="delete")

    async def aclear(self) -> None:
        await asyncio.to_thread(self.clear)
