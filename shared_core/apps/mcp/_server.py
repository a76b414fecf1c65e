"""The MCP binding: the six memory tools of a `MemoryService` on the official SDK's `MCPServer`.

This module imports the SDK, so only the running server imports it (`shared_core.apps.mcp` does not).
Each tool declares its arguments with pydantic ``Field``s, so clients get a JSON schema with a
description and bounds for every argument, and an output schema for its structured result.
Arguments the schema does not know are refused, not silently dropped: a misspelt ``namespace``
must not send a memory to the default namespace. Arguments are strictly typed (``"yes"`` is not a
flag, ``"100"`` not a number; the SDK's one leniency left is ``metadata`` sent as a JSON string),
and every text field declares a ``maxLength``: the atlas's ``max_content_chars`` for content, its
``max_query_chars`` for a query, 256 for ids, namespaces and session ids. The atlas checks the
same limits (and the namespace rule of `shared_core.values._validate.name`), so a client that ignores the
schema gets the same refusal as an error result.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult, InputRequiredResult, TextContent, ToolAnnotations
from pydantic import Field

from ...values._validate import MAX_NAME
from ...values.errors import AtlasError
from ...values.version import __version__
from ._service import Forgotten, MemoryService, ReadResult, SearchResult, StatsResult, Style, Updated, Written

__all__ = ["AtlasMCPServer", "build_server"]

SERVER_NAME = "elastic-atlas"
LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]
EMPTY_CONTEXT = "(nothing in memory matches this query)"
EMPTY_SEARCH = "No memories match this query."
FACTORS = ("relevance", "weight", "recency", "session")

Content = Annotated[str, Field(strict=True, min_length=1, description=(
    "The memory as one self-contained statement, e.g. 'Alice is allergic to peanuts'."))]
Query = Annotated[str, Field(strict=True, min_length=1, description="What to look for, in natural language.")]
MemoryId = Annotated[str, Field(strict=True, min_length=1, max_length=MAX_NAME, description=(
    "The id of a memory, as returned by memory_write or memory_search."))]
Namespace = Annotated[str | None, Field(strict=True, min_length=1, max_length=MAX_NAME, description=(
    "Whose memory this is: a user or tenant id. Omit it to use the server's default namespace."))]
SessionId = Annotated[str | None, Field(strict=True, min_length=1, max_length=MAX_NAME, description=(
    "The conversation this belongs to (optional)."))]
ReadSession = Annotated[str | None, Field(strict=True, min_length=1, max_length=MAX_NAME, description=(
    "The current conversation (optional): its latest memories come first, and its memories rank "
    "above those of other conversations."))]
Metadata = Annotated[dict[str, Any] | None, Field(strict=True, description=(
    "Optional JSON object stored with the memory, e.g. {\"type\": \"preference\"}."))]
Importance = Annotated[float, Field(strict=True, ge=0.0, le=1e6, description=(
    "How much it matters: 1 is normal; higher resists forgetting, 0 fades first."))]
NewImportance = Annotated[float | None, Field(strict=True, ge=0.0, le=1e6, description=(
    "A new importance (optional; default: keep the old one)."))]
Pinned = Annotated[bool, Field(strict=True, description="Pinned memories are never evicted or faded.")]
TokenBudget = Annotated[int, Field(strict=True, ge=1, le=1_000_000, description=(
    "The most tokens (cl100k_base) the context may take."))]
StyleArg = Annotated[Style, Field(description=(
    "'timeline': dated lines, oldest first; 'bullet': one bullet per memory, best first; "
    "'narrative': a paragraph."))]
TopK = Annotated[int, Field(strict=True, ge=1, le=100, description="How many memories to return at most.")]

WRITE = ("Remember one durable fact, preference, decision or event for future conversations. Write one "
         "self-contained statement per call (at most {max_chars} characters). Returns the new memory's id.")
READ = ("Recall what the memory knows that bears on a query, as a ready-to-use context block within a token "
        "budget: the conversation's latest memories first, then the most relevant ones. Call it before "
        "answering anything that may depend on earlier conversations.")
SEARCH = ("Search the memory and return the best matches with their ids, scores and score breakdowns "
          "(relevance, weight, recency, and the recall paths that found each). Use the ids with "
          "memory_update or memory_forget.")
UPDATE = ("Correct a memory: store new content as a new version that supersedes the old one (the old one is "
          "kept as history and leaves search results). Returns the new version's id.")
FORGET = "Delete a memory for good, by id: for a wrong memory, or when the user asks to forget something."
STATS = "Count the memories, links, sessions and weights of a namespace."


def _hits_text(result: SearchResult) -> str:
    """One line per hit for the model to read; the structured result carries every detail."""
    if not result.memories:
        return EMPTY_SEARCH
    lines = []
    for hit in result.memories:
        factors = ", ".join(f"{name} {hit.score_breakdown[name]:.2f}" for name in FACTORS
                            if name in hit.score_breakdown)
        where = f"; from session {hit.session_id}" if hit.other_session else ""
        lines.append(f"[{hit.id}] {' '.join(hit.content.split())} (score {hit.score:.3f}: {factors}; "
                     f"found by {'+'.join(hit.paths) or 'none'}{where})")
    return "\n".join(lines)


@contextmanager
def _as_tool_errors() -> Iterator[None]:
    """Report the atlas's own errors (bad input, unknown ids, …) to the model as tool errors."""
    try:
        yield
    except AtlasError as exc:
        raise ToolError(str(exc)) from exc


class AtlasMCPServer(MCPServer[Any]):
    """An `MCPServer` that refuses arguments its tools do not declare, naming them."""

    def __init__(self, *, tools: list[Tool], **kwargs: Any) -> None:
        self._accepted = {tool.name: frozenset(tool.parameters.get("properties", {})) for tool in tools}
        super().__init__(tools=tools, **kwargs)

    async def call_tool(self, name: str, arguments: dict[str, Any],
                        context: Context[Any, Any] | None = None) -> CallToolResult | InputRequiredResult:
        accepted = self._accepted.get(name)
        unknown = sorted(set(arguments) - accepted) if accepted is not None else []
        if unknown:
            raise ToolError(f"Error executing tool {name}: unknown argument(s) {', '.join(map(repr, unknown))}; "
                            f"expected: {', '.join(sorted(accepted or ()))}")
        return await super().call_tool(name, arguments, context)


def _tool(fn: Callable[..., Any], *, title: str, description: str, annotations: ToolAnnotations,
          default_namespace: str | None, max_lengths: dict[str, int]) -> Tool:
    tool = Tool.from_function(fn, title=title, description=description, annotations=annotations)
    tool.parameters["additionalProperties"] = False
    for name, limit in max_lengths.items():  # the atlas's limits, known only once it is built
        prop = tool.parameters.get("properties", {}).get(name)
        if prop is not None:
            prop["maxLength"] = limit
    namespace = tool.parameters.get("properties", {}).get("namespace")
    if namespace is not None and default_namespace is not None:
        namespace["description"] = f"Whose memory this is: a user or tenant id. Default: {default_namespace!r}."
    return tool


def build_server(service: MemoryService, *, name: str = SERVER_NAME, log_level: LogLevel = "WARNING") -> AtlasMCPServer:
    """An MCP server exposing ``service`` as the tools memory_write, memory_read, memory_search,
    memory_update, memory_forget and memory_stats. Run it with ``.run("stdio")`` or
    ``.run("streamable-http", host=..., port=...)``. ``log_level`` is the SDK's (it configures
    the root logger only if nothing else has).
    """
    budget = service.default_token_budget

    def memory_write(content: Content, namespace: Namespace = None, session_id: SessionId = None,
                     metadata: Metadata = None, importance: Importance = 1.0, pinned: Pinned = False) -> Written:
        with _as_tool_errors():
            return service.write(content, namespace=namespace, session_id=session_id, metadata=metadata,
                                 importance=importance, pinned=pinned)

    def memory_read(query: Query, namespace: Namespace = None, session_id: ReadSession = None,
                    token_budget: TokenBudget = budget,
                    style: StyleArg = "timeline") -> Annotated[CallToolResult, ReadResult]:
        with _as_tool_errors():
            result = service.read(query, namespace=namespace, session_id=session_id, token_budget=token_budget,
                                  style=style)
        text = TextContent(type="text", text=result.text or EMPTY_CONTEXT)
        return CallToolResult(content=[text], structured_content=asdict(result))

    def memory_search(query: Query, namespace: Namespace = None, session_id: ReadSession = None,
                      top_k: TopK = 5) -> Annotated[CallToolResult, SearchResult]:
        with _as_tool_errors():
            result = service.search(query, namespace=namespace, session_id=session_id, top_k=top_k)
        text = TextContent(type="text", text=_hits_text(result))
        return CallToolResult(content=[text], structured_content=asdict(result))

    def memory_update(id: MemoryId, content: Content, namespace: Namespace = None, metadata: Metadata = None,
                      importance: NewImportance = None) -> Updated:
        with _as_tool_errors():
            return service.update(id, content, namespace=namespace, metadata=metadata, importance=importance)

    def memory_forget(id: MemoryId, namespace: Namespace = None) -> Forgotten:
        with _as_tool_errors():
            return service.forget(id, namespace=namespace)

    def memory_stats(namespace: Namespace = None) -> StatsResult:
        with _as_tool_errors():
            return service.stats(namespace=namespace)

    def hints(*, read_only: bool = False, destructive: bool = False, idempotent: bool = False) -> ToolAnnotations:
        return ToolAnnotations(read_only_hint=read_only, destructive_hint=destructive,
                               idempotent_hint=idempotent, open_world_hint=False)

    max_chars = service.atlas.config.max_content_chars
    max_lengths = {"content": max_chars, "query": service.atlas.config.max_query_chars}
    specs: list[tuple[Callable[..., Any], str, str, ToolAnnotations]] = [
        (memory_write, "Remember", WRITE.format(max_chars=max_chars), hints()),
        # recalling reinforces what it finds, so reads are neither read-only nor idempotent
        (memory_read, "Recall context", READ, hints()),
        (memory_search, "Search memory", SEARCH, hints()),
        (memory_update, "Correct a memory", UPDATE, hints()),
        (memory_forget, "Forget a memory", FORGET, hints(destructive=True, idempotent=True)),
        (memory_stats, "Memory statistics", STATS, hints(read_only=True)),
    ]
    tools = [_tool(fn, title=title, description=desc, annotations=ann, default_namespace=service.default_namespace,
                   max_lengths=max_lengths) for fn, title, desc, ann in specs]
    if service.fixed_namespace:
        scope = f"Every call acts on namespace {service.default_namespace!r}."
    elif service.default_namespace is not None:
        scope = f"Calls that name no namespace act on {service.default_namespace!r}."
    else:
        scope = "Every call must name its namespace (a user or tenant id)."
    instructions = ("Long-term memory for an agent. Save durable facts with memory_write; before answering, "
                    "call memory_read for a ready-to-use context block; find ids with memory_search, then "
                    f"fix memories with memory_update or delete them with memory_forget. {scope}")
    return AtlasMCPServer(name=name, title="Elastic Atlas memory", instructions=instructions,
                          version=__version__, tools=tools, log_level=log_level)
