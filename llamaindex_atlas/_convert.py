"""Translations between LlamaIndex's types and the atlas's: chat messages, nodes and filters.

A chat message becomes one memory whose content is the message's text and whose metadata holds
its ``role``; a message that plain text cannot carry (tool calls, images, extra kwargs) also keeps
its full JSON form under ``chat_message``, so it comes back exactly as it went in.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, MessageRole, TextBlock, ToolCallBlock
from llama_index.core.bridge.pydantic import ValidationError
from llama_index.core.schema import NodeWithScore, TextNode
from llama_index.core.vector_stores.types import FilterCondition, FilterOperator, MetadataFilter, MetadataFilters

from shared_core import InvalidInputError, MemoryNode, ScoredMemory

__all__ = [
    "MESSAGE_KEY",
    "ROLE_KEY",
    "memory_to_message",
    "message_text",
    "message_to_memory",
    "query_text",
    "to_atlas_filters",
    "to_node",
]

logger = logging.getLogger("llamaindex_atlas")

ROLE_KEY = "role"
MESSAGE_KEY = "chat_message"
#: Role names other adapters may write (LangChain's message types) and their LlamaIndex role.
_ROLE_ALIASES = {"human": "user", "ai": "assistant", "function": "tool"}
#: Metadata the LLM should read next to a retrieved memory; every other atlas key is bookkeeping.
_LLM_VISIBLE = {"timestamp", ROLE_KEY}
_ATLAS_KEYS = ("id", "score", "score_breakdown", "paths", "weight", "importance", "timestamp", "created_at",
               "last_accessed_at", "access_count", "session_id", "namespace", "other_session", "kind")


def message_text(message: ChatMessage) -> str:
    """The text a message contributes to memory: its text blocks, else a line naming its tool calls.

    >>> message_text(ChatMessage(role="user", content="I live in Lyon"))
    'I live in Lyon'
    >>> call = ToolCallBlock(tool_name="weather", tool_kwargs={"city": "Lyon"})
    >>> message_text(ChatMessage(role="assistant", blocks=[call]))
    'Called weather({"city": "Lyon"})'
    """
    texts = [b.text for b in message.blocks if isinstance(b, TextBlock) and b.text.strip()]
    if texts:
        return "\n".join(texts)
    calls = []
    for block in message.blocks:
        if isinstance(block, ToolCallBlock):
            args = block.tool_kwargs if isinstance(block.tool_kwargs, str) else json.dumps(block.tool_kwargs)
            calls.append(f"{block.tool_name}({args})")
    for call in message.additional_kwargs.get("tool_calls") or ():  # providers that keep them as kwargs
        function = call.get("function", {}) if isinstance(call, Mapping) else getattr(call, "function", None)
        name = function.get("name") if isinstance(function, Mapping) else getattr(function, "name", None)
        if name:
            calls.append(f"{name}(…)")
    return "Called " + ", ".join(calls) if calls else ""


def query_text(value: str | ChatMessage | None) -> str:
    """The text of a query given as a string or a message ('' for None)."""
    if value is None:
        return ""
    return value if isinstance(value, str) else message_text(value)


def _role(message: ChatMessage) -> str:
    role = message.role
    return role.value if isinstance(role, MessageRole) else str(role)


def message_to_memory(message: ChatMessage, *, max_chars: int,
                      drop_kwargs: tuple[str, ...] = ()) -> dict[str, Any]:
    """The `ElasticMemoryAtlas.add_memories` item for one message.

    ``drop_kwargs`` names ``additional_kwargs`` that must not be stored (LlamaIndex's `Memory`
    stamps ``session_id`` into each message it flushes).
    """
    if drop_kwargs and any(k in message.additional_kwargs for k in drop_kwargs):
        kwargs = {k: v for k, v in message.additional_kwargs.items() if k not in drop_kwargs}
        message = message.model_copy(update={"additional_kwargs": kwargs})
    role = _role(message)
    text = message_text(message)
    plain = (len(message.blocks) == 1 and isinstance(message.blocks[0], TextBlock) and bool(text)
             and not message.additional_kwargs and len(text) <= max_chars)
    metadata: dict[str, Any] = {ROLE_KEY: role}
    if not plain:
        try:
            dumped = message.model_dump(mode="json")
            json.dumps(dumped, allow_nan=False)
            metadata[MESSAGE_KEY] = dumped
        except (TypeError, ValueError) as exc:  # a provider object in additional_kwargs
            logger.warning("storing a %s message as text only: it does not serialise to JSON (%s)", role, exc)
    content = text[:max_chars] if text else f"({role} message without text)"
    return {"content": content, "metadata": metadata}


def memory_to_message(node: MemoryNode) -> ChatMessage | None:
    """The chat message a memory holds, or None when the memory is not a chat message."""
    role = node.metadata.get(ROLE_KEY)
    if not isinstance(role, str):
        return None
    stored = node.metadata.get(MESSAGE_KEY)
    if isinstance(stored, Mapping):
        try:
            return ChatMessage.model_validate(stored)
        except ValidationError:
            logger.warning("memory %s holds an unreadable chat message; using its text", node.id)
    try:
        return ChatMessage(role=MessageRole(_ROLE_ALIASES.get(role, role)), content=node.content)
    except ValueError:
        return None


def to_node(hit: ScoredMemory) -> NodeWithScore:
    """A retrieved memory as a LlamaIndex node: the same metadata as every other adapter
    (`ScoredMemory.to_metadata`), with the atlas's bookkeeping hidden from the LLM and the embedder."""
    metadata = hit.to_metadata()
    hidden = [k for k in (*_ATLAS_KEYS, MESSAGE_KEY) if k in metadata and k not in _LLM_VISIBLE]
    node = TextNode(id_=hit.node.id, text=hit.node.content, metadata=metadata,
                    excluded_llm_metadata_keys=hidden, excluded_embed_metadata_keys=list(metadata))
    return NodeWithScore(node=node, score=hit.score)


_OPERATORS = {
    FilterOperator.EQ: "$eq", FilterOperator.NE: "$ne", FilterOperator.GT: "$gt",
    FilterOperator.GTE: "$gte", FilterOperator.LT: "$lt", FilterOperator.LTE: "$lte",
    FilterOperator.IN: "$in", FilterOperator.NIN: "$nin", FilterOperator.ANY: "$in",
}


def _merge(out: dict[str, dict[str, Any]], item: MetadataFilter | MetadataFilters) -> None:
    if isinstance(item, MetadataFilters):
        if item.condition not in (None, FilterCondition.AND):
            raise InvalidInputError(
                f"the atlas combines filters with AND only; got condition {item.condition.value!r}")
        for sub in item.filters:
            _merge(out, sub)
        return
    value: Any = item.value
    if item.operator is FilterOperator.CONTAINS:  # a list-valued field containing the value
        op, value = "$in", [item.value]
    elif item.operator in _OPERATORS:
        op = _OPERATORS[item.operator]
    else:
        supported = sorted(o.value for o in (*_OPERATORS, FilterOperator.CONTAINS))
        raise InvalidInputError(f"filter on {item.key!r}: operator {item.operator.value!r} is not supported "
                                f"by the atlas; use one of {supported}")
    ops = out.setdefault(item.key, {})
    if op in ops and ops[op] != value:
        raise InvalidInputError(f"filter on {item.key!r}: two different {op} values")
    ops[op] = value


def to_atlas_filters(filters: MetadataFilters | Mapping[str, Any] | None) -> dict[str, Any] | None:
    """LlamaIndex ``MetadataFilters`` (AND of ==, !=, <, <=, >, >=, in, nin, any, contains) as the
    atlas's filter mapping; a mapping is taken to be atlas filters already.

    >>> to_atlas_filters(MetadataFilters(filters=[MetadataFilter(key="topic", value="pets")]))
    {'topic': {'$eq': 'pets'}}
    """
    if filters is None:
        return None
    if isinstance(filters, MetadataFilters):
        out: dict[str, dict[str, Any]] = {}
        _merge(out, filters)
        return dict(out) or None
    if isinstance(filters, Mapping):
        return dict(filters) or None
    raise InvalidInputError(f"filters must be MetadataFilters or a mapping, got {type(filters).__name__}")
