"""`AtlasMemoryBlock`: the atlas as a long-term block of LlamaIndex's `Memory`."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.bridge.pydantic import Field, PrivateAttr, field_validator
from llama_index.core.memory.memory import BaseMemoryBlock

from shared_core import Context, ElasticMemoryAtlas
from shared_core.values._arguments import check_arguments

from ._convert import message_text, message_to_memory, to_atlas_filters
from ._memory import Style, resolve_atlas
from ._recall import shrink

__all__ = ["AtlasMemoryBlock"]

_CACHE_SIZE = 16  # rendered contexts kept for `atruncate`, one per recent `aget`


class AtlasMemoryBlock(BaseMemoryBlock[str]):
    """A block for ``Memory.from_defaults(memory_blocks=[...])`` that remembers with the atlas.

    LlamaIndex's `Memory` keeps the latest messages in its own short-term buffer and flushes the
    oldest into its blocks: this block stores them in the atlas (namespace ``namespace``, session
    ``session_id`` or else the `Memory`'s own), and on each `Memory.get` returns the memories
    recalled for the latest messages, rendered within ``token_limit`` tokens. With
    ``cross_session`` (the default) recall reaches the namespace's other sessions too, so a
    user's new conversation remembers earlier ones.

    When the whole `Memory` runs over its own token limit, blocks are cut by ``priority``
    (0: never); this one gives up its lowest-scored memories first rather than all of them.

    Example:
        .. code-block:: python

            from llama_index.core.memory import Memory
            from llamaindex_atlas import AtlasMemoryBlock

            memory = Memory.from_defaults(
                session_id="chat-1", token_limit=4000,
                memory_blocks=[AtlasMemoryBlock(atlas=atlas, namespace="alice", token_limit=800)],
            )
    """

    name: str = Field(default="long_term_memory", description="Name of the block (its tag in the memory prompt).")
    description: str | None = Field(
        default="Memories of earlier messages and past sessions, recalled for the latest message.",
        description="A description of the block.")
    priority: int = Field(
        default=1, ge=0,
        description="Truncation priority in Memory: 0 is never truncated; when the Memory is over its "
                    "token limit, blocks with other priorities are cut in ascending order of priority.")
    namespace: str = Field(
        default="default", min_length=1,
        description="Atlas namespace of the memories, usually one per user; recall never leaves it.")
    session_id: str | None = Field(
        default=None,
        description="Atlas session to store flushed messages in and recall for; None follows the session_id "
                    "of the Memory that holds the block.")
    token_limit: int = Field(default=1000, gt=0, description="Most tokens of recalled memories the block returns.")
    style: Style = Field(
        default="timeline",
        description="How recalled memories are rendered: 'timeline', 'bullet' or 'narrative'.")
    cross_session: bool = Field(
        default=True, description="Recall from the namespace's other sessions too (penalised and labelled).")
    filters: dict[str, Any] | None = Field(
        default=None,
        description="Atlas filters (or LlamaIndex MetadataFilters) that recalled memories must match.")
    reinforce: bool = Field(
        default=True, description="Strengthen the recalled memories shown (the atlas's elastic weights).")
    retrieval_context_window: int = Field(
        default=1, ge=1, description="How many of the latest messages make up the recall query.")

    _atlas: ElasticMemoryAtlas = PrivateAttr()
    _rendered: OrderedDict[str, Context] = PrivateAttr(default_factory=OrderedDict)

    def __init__(self, *, atlas: ElasticMemoryAtlas | None = None, **data: Any) -> None:
        check_arguments("AtlasMemoryBlock", data, accepted=type(self).model_fields,
                        renames={"token_budget": "token_limit", "max_token_limit": "token_limit"})
        super().__init__(**data)
        self._atlas = resolve_atlas(atlas)

    @field_validator("filters", mode="before")
    @classmethod
    def validate_filters(cls, value: Any) -> dict[str, Any] | None:
        return to_atlas_filters(value)

    @classmethod
    def class_name(cls) -> str:
        return "AtlasMemoryBlock"

    @classmethod
    def from_defaults(cls, *, atlas: ElasticMemoryAtlas | None = None, namespace: str = "default",
                      session_id: str | None = None, token_limit: int = 1000, style: Style = "timeline",
                      embed_model: BaseEmbedding | None = None, **kwargs: Any) -> AtlasMemoryBlock:
        """Build a block; ``embed_model`` is the embedder of the new atlas made when ``atlas`` is not given."""
        return cls(atlas=resolve_atlas(atlas, embed_model), namespace=namespace, session_id=session_id,
                   token_limit=token_limit, style=style, **kwargs)

    @property
    def atlas(self) -> ElasticMemoryAtlas:
        """The atlas this block reads and writes."""
        return self._atlas

    async def _aget(self, messages: list[ChatMessage] | None = None, session_id: str | None = None,
                    **block_kwargs: Any) -> str:
        """The memories recalled for the latest messages, within ``token_limit`` tokens ('' if none).

        The query is the last ``max_query_chars`` characters (the atlas config) of the latest
        ``retrieval_context_window`` messages: cut, not refused, since no caller wrote it."""
        texts = [t for m in messages or () if (t := message_text(m))]
        query = "\n".join(texts[-self.retrieval_context_window:])[-self._atlas.config.max_query_chars:]
        if not query.strip():
            return ""
        ctx = await self._atlas.abuild_context(
            query, namespace=self.namespace, session_id=self.session_id or session_id, token_budget=self.token_limit,
            style=self.style, working_memory=0, reinforce=self.reinforce, filters=self.filters,
            cross_session=self.cross_session)
        if ctx.text:
            self._remember(ctx)
        return ctx.text

    async def _aput(self, messages: list[ChatMessage]) -> None:
        """Store the messages `Memory` flushed from its short-term buffer, one memory each."""
        limit = self._atlas.config.max_content_chars
        items = []
        for message in messages:
            item = message_to_memory(message, max_chars=limit, drop_kwargs=("session_id",))
            session = self.session_id or message.additional_kwargs.get("session_id")
            items.append({**item, "session_id": session if isinstance(session, str) and session else None})
        if items:
            await self._atlas.aadd_memories(items, namespace=self.namespace)

    async def atruncate(self, content: str, tokens_to_truncate: int) -> str | None:
        """``content`` with its lowest-scored memories dropped until it is ``tokens_to_truncate``
        tokens shorter (None when nothing is left)."""
        ctx = self._rendered.get(content)
        if ctx is None:  # not rendered by this block: drop it whole, as BaseMemoryBlock does
            return None
        smaller = shrink(self._atlas, ctx, tokens_to_cut=tokens_to_truncate)
        if not smaller.text:
            return None
        self._remember(smaller)
        return smaller.text

    def _remember(self, ctx: Context) -> None:
        self._rendered[ctx.text] = ctx
        self._rendered.move_to_end(ctx.text)
        while len(self._rendered) > _CACHE_SIZE:
            self._rendered.popitem(last=False)

