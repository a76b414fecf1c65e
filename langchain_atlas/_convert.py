"""Translation between LangChain's types and the atlas's: documents, messages, text inputs.

Nothing here decides what to remember or how to rank it; that is the atlas's job.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.documents import Document
from langchain_core.messages import BaseMessage, get_buffer_string, message_to_dict, messages_from_dict

from shared_core import ScoredMemory

__all__ = ["MESSAGE_KEY", "ROLE_KEY", "as_text", "memory_item", "messages_of", "to_document"]

MESSAGE_KEY = "lc_message"
"""Metadata key holding the serialised LangChain message a memory was made from."""
ROLE_KEY = "role"
"""Metadata key holding the speaker of a conversational memory (``human``, ``ai``, ``tool`` …)."""


def to_document(hit: ScoredMemory) -> Document:
    """A retrieval hit as a LangChain `Document`: the memory's text, id and flat metadata."""
    return Document(id=hit.node.id, page_content=hit.node.content, metadata=hit.to_metadata())


def as_text(value: Any) -> str:
    """The text of a chain input or output: a string, a message, or a list of messages."""
    if isinstance(value, BaseMessage):
        return str(value.text)
    if isinstance(value, Sequence) and not isinstance(value, str) \
            and all(isinstance(v, BaseMessage) for v in value):
        return "\n".join(str(v.text) for v in value)
    return "" if value is None else str(value)


def memory_item(message: BaseMessage, *, human_prefix: str = "Human", ai_prefix: str = "AI") -> dict[str, Any]:
    """An ``add_memories`` item for one message.

    The memory's text is the message as a transcript line (``"Human: …"``), so it reads well in a
    rendered context; the message itself is kept whole in the metadata, so it can be rebuilt.
    """
    payload = json.loads(json.dumps(message_to_dict(message), default=str))  # JSON-safe, always
    return {
        "content": get_buffer_string([message], human_prefix=human_prefix, ai_prefix=ai_prefix),
        "metadata": {ROLE_KEY: message.type, MESSAGE_KEY: payload},
    }


def messages_of(metadatas: Sequence[Mapping[str, Any]]) -> list[BaseMessage]:
    """Rebuild the messages stored by `memory_item`; memories that hold no message are skipped."""
    return messages_from_dict([dict(m[MESSAGE_KEY]) for m in metadatas if isinstance(m.get(MESSAGE_KEY), Mapping)])
