"""The memory as an MCP server: ``elastic-atlas-mcp`` (or ``python -m shared_core.apps.mcp``).

Six tools over one atlas: ``memory_write``, ``memory_read``, ``memory_search``,
``memory_update``, ``memory_forget`` and ``memory_stats``, served over stdio or streamable HTTP
with the official ``mcp`` SDK (``pip install ".[mcp]"`` in a checkout). See ``docs/mcp.md``.

Importing this package does not import the SDK: `MemoryService` is plain Python over the atlas,
and `build_server` imports the SDK when it is called.

>>> from shared_core import ElasticMemoryAtlas, HashingEmbedder
>>> from shared_core.apps.mcp import MemoryService
>>> service = MemoryService(ElasticMemoryAtlas(embedder=HashingEmbedder()), default_namespace="alice")
>>> service.write("Alice prefers window seats").namespace
'alice'
>>> context = service.read("seat preference", token_budget=60)
>>> "Alice prefers window seats" in context.text, context.tokens <= 60
(True, True)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._cli import main
from ._service import (
    Forgotten,
    MemoryService,
    ReadResult,
    SearchHit,
    SearchResult,
    StatsResult,
    Updated,
    Written,
)

if TYPE_CHECKING:
    from ._server import AtlasMCPServer

__all__ = ["Forgotten", "MemoryService", "ReadResult", "SearchHit", "SearchResult", "StatsResult", "Updated",
           "Written", "build_server", "main"]


def build_server(service: MemoryService, *, name: str = "elastic-atlas", log_level: str = "WARNING") -> AtlasMCPServer:
    """The MCP server (an SDK ``MCPServer``) exposing ``service``'s six tools; imports the SDK.

    ``log_level`` is the SDK's; it configures the root logger only if nothing else has.
    """
    from ._cli import _import_server

    return _import_server()(service, name=name, log_level=log_level)
