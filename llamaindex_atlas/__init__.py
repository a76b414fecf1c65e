"""LlamaIndex integration of Elastic Atlas: a chat memory, a `Memory` block and a retriever.

- `AtlasMemory`: a ``BaseMemory`` for chat engines and agents (recent turns plus recall).
- `AtlasMemoryBlock`: a long-term block for ``llama_index.core.memory.Memory``.
- `AtlasRetriever`: a ``BaseRetriever`` returning ``NodeWithScore``.

Each takes ``atlas=`` (an `ElasticMemoryAtlas`, a new one when omitted) and ``namespace=``;
share one atlas between them so they see the same memories.
"""

from __future__ import annotations

from shared_core import __version__

from ._memory import AtlasMemory
from ._memory_block import AtlasMemoryBlock
from ._retriever import AtlasRetriever

__all__ = ["AtlasMemory", "AtlasMemoryBlock", "AtlasRetriever", "__version__"]
