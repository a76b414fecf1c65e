"""`AtlasMemory`: the atlas as a LlamaIndex chat memory (`BaseMemory`)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.base.llms.types import ChatMessage, MessageRole, TextBlock
from llama_index.core.bridge.pydantic import Field, PrivateAttr, field_validator
from llama_index.core.llms.llm import LLM
from llama_index.core.memory.types import BaseMemory

from shared_core import ElasticMemoryAtlas, InvalidInputError, MemoryNode
from shared_core.values._arguments import check_arguments

from ._convert import memory_to_message, message_text, message_to_memory, query_text, to_atlas_filters
from ._recall import context_beside

__all__ = ["AtlasMemory", "Style", "resolve_atlas"]

Style = Literal["timeline", "bullet", "narrative"]
DEFAULT_TOKEN_LIMIT = 2000  # the LangChain AtlasMemory's token_budget agrees
DEFAULT_TOKEN_LIMIT_RATIO = 0.75  # of the LLM's context window, as ChatMemoryBuffer does
_TRAILING_ROLES = (MessageRole.ASSISTANT, MessageRole.TOOL)
# Names from the core API or from LangChain that users bring here by habit.
_RENAMES = {"token_budget": "token_limit", "max_token_limit": "token_limit", "max_tokens": "token_limit"}


def resolve_atlas(atlas: ElasticMemoryAtlas | None, embed_model: BaseEmbedding | None = None) -> ElasticMemoryAtlas:
    """The atlas to use: the one given, else a new one (embedding with ``embed_model`` if given)."""
    if atlas is None:
        return ElasticMemoryAtlas(embedder=embed_model)
    if not isinstance(atlas, ElasticMemoryAtlas):
        raise TypeError(f"atlas must be an ElasticMemoryAtlas, got {type(atlas).__name__}")
    if embed_model is not None:
        raise ValueError("pass either atlas= or embed_model=, not both: the atlas already has its embedder")
    return atlas


def _blank_user(message: ChatMessage) -> bool:
    return (message.role == MessageRole.USER and not message.additional_kwargs
            and all(isinstance(b, TextBlock) and not b.text.strip() for b in message.blocks))


def _new_session() -> str:
    return uuid.uuid4().hex


class AtlasMemory(BaseMemory):
    """Chat memory backed by an `ElasticMemoryAtlas`: recent turns plus what the atlas recalls.

    Every message is stored in ``session_id`` of ``namespace`` and `get_all` returns them all,
    whatever the atlas's config: with the write filter on (`AtlasConfig.managed`), small talk is
    held in working memory (kept in the transcript, not recalled) and the rest becomes long-term
    memory. `get` returns what the
    LLM should see, within ``token_limit`` tokens (the atlas's exact count): one message holding
    the memories recalled for the latest input (earlier turns of this conversation and, with
    ``cross_session`` (the default), the namespace's other sessions), then the most recent turns.
    Where ``ChatMemoryBuffer`` forgets the start of a long conversation, this memory brings back
    the parts that matter to the question at hand.

    Use one namespace per user and one session per conversation; share one atlas between them.

    Works with ``SimpleChatEngine``, ``CondensePlusContextChatEngine`` and the agents
    (``FunctionAgent(...).run(msg, memory=memory)``, which use the async methods).

    Example:
        .. code-block:: python

            from llama_index.core.chat_engine import SimpleChatEngine
            from llamaindex_atlas import AtlasMemory

            memory = AtlasMemory.from_defaults(atlas=atlas, namespace="alice", session_id="chat-1",
                                               token_limit=2000)
            engine = SimpleChatEngine.from_defaults(llm=llm, memory=memory)

    A `reset` deletes this session's messages from the atlas; start a new ``session_id`` instead
    to begin a new conversation that still remembers this one.

    Serialization: the atlas is a live object (a model session, indexes), not a dict field. With
    ``atlas_path=`` the memory saves its atlas there on `to_dict` (and loads it from there when
    built without ``atlas=``), so ``AtlasMemory.from_dict(memory.to_dict())`` comes back with the
    same memories. Without it, `from_dict` needs the atlas (``from_dict(data, atlas=atlas)``) and
    raises `InvalidInputError` otherwise, rather than returning a memory over a new, empty atlas.
    """

    namespace: str = Field(
        default="default", min_length=1,
        description="Atlas namespace of the conversation, usually one per user; recall never leaves it.")
    session_id: str = Field(
        default_factory=_new_session, min_length=1,
        description="The conversation: its messages are stored in this session of the namespace. "
                    "Defaults to a new random id.")
    token_limit: int = Field(
        default=DEFAULT_TOKEN_LIMIT, gt=0,
        description="Most tokens `get` returns (recent turns and recalled memories together).")
    recent_token_ratio: float = Field(
        default=0.5, ge=0.0, le=1.0,
        description="Share of token_limit the recent turns may take; the rest, and whatever they leave "
                    "unused, holds the recalled memories. The latest message is always kept.")
    style: Style = Field(
        default="timeline",
        description="How recalled memories are rendered: 'timeline' (dated, oldest first), 'bullet' "
                    "(by relevance) or 'narrative' (one paragraph).")
    cross_session: bool = Field(
        default=True,
        description="Recall from the namespace's other sessions too (penalised and labelled), so a new "
                    "conversation remembers earlier ones.")
    filters: dict[str, Any] | None = Field(
        default=None,
        description="Atlas filters (or LlamaIndex MetadataFilters) that recalled memories must match.")
    reinforce: bool = Field(
        default=True,
        description="Strengthen the recalled memories shown to the LLM (the atlas's elastic weights); the "
                    "recent turns shown as messages are not reinforced.")
    memory_role: MessageRole = Field(
        default=MessageRole.SYSTEM, description="Role of the message that holds the recalled memories.")
    atlas_path: str | None = Field(
        default=None,
        description="A file for the atlas: `to_dict` saves the atlas there and `from_dict` (or a memory built "
                    "without atlas=) loads it, so the memory round-trips. None: the atlas is not serialized.")

    _atlas: ElasticMemoryAtlas = PrivateAttr()

    def __init__(self, *, atlas: ElasticMemoryAtlas | None = None, **data: Any) -> None:
        check_arguments("AtlasMemory", data, accepted=type(self).model_fields, renames=_RENAMES)
        super().__init__(**data)
        path = self.atlas_path
        if atlas is None and path is not None and Path(path).exists():
            self._atlas = ElasticMemoryAtlas.load(path)
        else:
            self._atlas = resolve_atlas(atlas)

    @field_validator("filters", mode="before")
    @classmethod
    def validate_filters(cls, value: Any) -> dict[str, Any] | None:
        return to_atlas_filters(value)

    @classmethod
    def class_name(cls) -> str:
        return "AtlasMemory"

    def to_dict(self, **kwargs: Any) -> dict[str, Any]:
        """The memory's settings; with ``atlas_path`` set, the atlas is saved there first."""
        if self.atlas_path is not None:
            self._atlas.save(self.atlas_path)
        return super().to_dict(**kwargs)

    @classmethod
    def from_dict(cls, data: dict[str, Any], **kwargs: Any) -> AtlasMemory:
        """A memory from `to_dict`'s output: over ``atlas=`` if given, else over the atlas saved at
        the dict's ``atlas_path``; `InvalidInputError` when there is neither."""
        data = {**data, **kwargs}
        data.pop("class_name", None)
        atlas = data.pop("atlas", None)
        path = data.get("atlas_path")
        if atlas is None:
            if path is None:
                raise InvalidInputError(
                    "AtlasMemory.from_dict: the dict holds no atlas; pass from_dict(data, atlas=atlas), or "
                    "build the memory with atlas_path=... so that to_dict saves the atlas there")
            if not os.path.exists(path):
                raise InvalidInputError(f"AtlasMemory.from_dict: no saved atlas at atlas_path={path!r}")
        return cls(atlas=atlas, **data)

    @classmethod
    def from_defaults(
        cls,
        *,
        atlas: ElasticMemoryAtlas | None = None,
        namespace: str = "default",
        session_id: str | None = None,
        token_limit: int | None = None,
        style: Style = "timeline",
        chat_history: Sequence[ChatMessage] | None = None,
        llm: LLM | None = None,
        embed_model: BaseEmbedding | None = None,
        **kwargs: Any,
    ) -> AtlasMemory:
        """Build a memory; ``token_limit`` defaults to 3/4 of ``llm``'s context window (else 2000).

        ``embed_model`` (any LlamaIndex ``BaseEmbedding``) is the embedder of the new atlas made when
        ``atlas`` is not given; ``chat_history`` replaces the session's stored messages.
        """
        if token_limit is None:
            token_limit = (int(llm.metadata.context_window * DEFAULT_TOKEN_LIMIT_RATIO) if llm is not None
                           else DEFAULT_TOKEN_LIMIT)
        if session_id is not None:
            kwargs["session_id"] = session_id
        memory = cls(atlas=resolve_atlas(atlas, embed_model), namespace=namespace, token_limit=token_limit,
                     style=style, **kwargs)
        if chat_history is not None:
            memory.set(list(chat_history))
        return memory

    @property
    def atlas(self) -> ElasticMemoryAtlas:
        """The atlas this memory reads and writes."""
        return self._atlas

    @property
    def tokenizer_fn(self) -> Callable[[str], list[int]]:
        """Tokens of a text by the atlas's counter. Chat engines call it to leave room for their
        system prompt (passed to `get` as ``initial_token_count``)."""
        counter = self._atlas.token_counter
        encode = getattr(counter, "encode", None)
        if callable(encode):
            return encode  # type: ignore[no-any-return]
        return lambda text: [0] * counter.count(text)  # callers only take len() of the tokens

    def __bool__(self) -> bool:
        # Engines and agents write `memory or ChatMemoryBuffer.from_defaults(...)`: an empty
        # memory must not be swapped for a default buffer.
        return True

    # -- reads --------------------------------------------------------------------------------
    def _turns(self) -> tuple[list[MemoryNode], list[tuple[int, ChatMessage]]]:
        """The session's memories in write order, and which of them are chat messages."""
        nodes = self._atlas.memories(namespace=self.namespace, session_id=self.session_id, include_held=True)
        turns = [(i, message) for i, node in enumerate(nodes) if (message := memory_to_message(node)) is not None]
        return nodes, turns

    def get_all(self) -> list[ChatMessage]:
        """Every message of the session, oldest first."""
        return [message for _, message in self._turns()[1]]

    def get(self, input: str | ChatMessage | None = None, initial_token_count: int = 0,
            **kwargs: Any) -> list[ChatMessage]:
        """The messages the LLM should see for ``input`` (default: the latest user message).

        Returns the recalled-memories message (if anything was recalled), then the latest turns,
        never starting on an assistant or tool message. Their tokens add up to at most
        ``token_limit - initial_token_count``; only a latest message longer than that on its own
        is returned anyway, as ``ChatMemoryBuffer`` does, so the LLM reports the overflow.
        Recall is for the last ``max_query_chars`` characters (the atlas config) of ``input``: a
        chat turn is cut, not refused as `ElasticMemoryAtlas.retrieve` refuses a longer query.
        """
        budget = self.token_limit - initial_token_count
        if budget <= 0:
            raise ValueError(f"initial_token_count ({initial_token_count}) leaves no room within "
                             f"token_limit ({self.token_limit})")
        nodes, turns = self._turns()
        costs = [self._atlas.count_tokens(message_text(m)) for _, m in turns]
        start, used = len(turns), 0
        while start > 0 and (start == len(turns) or used + costs[start - 1] <= budget * self.recent_token_ratio):
            start -= 1
            used += costs[start]
        while start < len(turns) - 1 and turns[start][1].role in _TRAILING_ROLES:
            used -= costs[start]
            start += 1
        recent = turns[start:]
        messages = [message for _, message in recent]

        query = query_text(input) or next(
            (message_text(m) for _, m in reversed(turns) if m.role == MessageRole.USER), "")
        query = query[-self._atlas.config.max_query_chars:]
        if not query.strip() or used >= budget:
            return messages
        ctx = context_beside(self._atlas, query, namespace=self.namespace, session_id=self.session_id,
                             shown={nodes[i].id for i, _ in recent},
                             budget=budget - used, style=self.style, reinforce=self.reinforce,
                             filters=self.filters, cross_session=self.cross_session)
        if ctx.text:
            messages.insert(0, ChatMessage(role=self.memory_role, content=ctx.text))
        return messages

    # -- writes -------------------------------------------------------------------------------
    def put(self, message: ChatMessage) -> None:
        """Store one message in the session."""
        self.put_messages([message])

    def put_messages(self, messages: list[ChatMessage]) -> None:
        """Store messages in the session, with one embedding call; a user message with no text
        (and nothing else: no image, no tool result) is not stored."""
        messages = [m for m in messages if not _blank_user(m)]
        if not messages:
            return
        limit = self._atlas.config.max_content_chars
        self._atlas.add_memories([message_to_memory(m, max_chars=limit) for m in messages],
                                 namespace=self.namespace, session_id=self.session_id)

    def set(self, messages: list[ChatMessage]) -> None:
        """Make ``messages`` the session's history; messages it already holds are kept, not re-embedded."""
        nodes, turns = self._turns()
        limit = self._atlas.config.max_content_chars
        same = 0
        for (_, old), new in zip(turns, messages, strict=False):
            if message_to_memory(old, max_chars=limit) != message_to_memory(new, max_chars=limit):
                break
            same += 1
        for i, _ in turns[same:]:
            self._atlas.forget(nodes[i].id, namespace=self.namespace)
        self.put_messages(list(messages[same:]))

    def reset(self) -> None:
        """Delete the session's messages from the atlas (the namespace's other sessions stay)."""
        nodes, turns = self._turns()
        for i, _ in turns:
            self._atlas.forget(nodes[i].id, namespace=self.namespace)
