"""LangChain and LangGraph integration of Elastic Atlas.

- `AtlasMemory`: ``memory=`` for the legacy ``ConversationChain`` and ``LLMChain``;
- `AtlasRetriever`: the atlas's hybrid recall as a ``BaseRetriever``;
- `AtlasChatMessageHistory`: a ``BaseChatMessageHistory`` whose messages are also memories;
- `AtlasStore`: a LangGraph ``BaseStore`` for long-term memory across threads;
- `create_memory_tools`: ``remember``, ``recall`` and ``forget`` tools for tool-calling agents.

Each takes ``atlas=`` (a new `ElasticMemoryAtlas` when omitted) and ``namespace=``; any
LangChain ``Embeddings`` can be the atlas's embedder (``ElasticMemoryAtlas(embedder=...)``).
"""

from __future__ import annotations

from shared_core import __version__

from ._history import AtlasChatMessageHistory
from ._memory import AtlasMemory
from ._retriever import AtlasRetriever
from ._store import AtlasStore
from ._tools import create_memory_tools

__all__ = [
    "AtlasChatMessageHistory",
    "AtlasMemory",
    "AtlasRetriever",
    "AtlasStore",
    "__version__",
    "create_memory_tools",
]
