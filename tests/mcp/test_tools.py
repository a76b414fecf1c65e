"""The six tools in process (the SDK's client connected straight to the server object): schemas,
results and errors, without a subprocess."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client

from shared_core import AtlasConfig, ElasticMemoryAtlas, HashingEmbedder, ManualClock
from shared_core.apps.mcp import MemoryService, build_server

from ._helpers import TOOLS, error, ok, text


def make_service(**kwargs: Any) -> MemoryService:
    atlas = ElasticMemoryAtlas(config=AtlasConfig(max_content_chars=300), embedder=HashingEmbedder(),
                               clock=ManualClock(1_700_000_000.0))
    return MemoryService(atlas, **kwargs)


@pytest.fixture
def service() -> MemoryService:
    return make_service(default_namespace="alice")


async def test_tools_publish_input_and_output_schemas(service: MemoryService) -> None:
    async with Client(build_server(service)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == TOOLS
    write = tools["memory_write"].input_schema
    assert write["required"] == ["content"]
    assert set(write["properties"]) == {"content", "namespace", "session_id", "metadata", "importance", "pinned"}
    assert "'alice'" in write["properties"]["namespace"]["description"]
    assert "300 characters" in (tools["memory_write"].description or "")
    read = tools["memory_read"].input_schema["properties"]
    assert read["style"]["enum"] == ["timeline", "bullet", "narrative"] and read["token_budget"]["default"] == 1000
    assert tools["memory_search"].input_schema["properties"]["top_k"]["maximum"] == 100
    assert tools["memory_forget"].input_schema["required"] == ["id"]
    assert tools["memory_update"].input_schema["required"] == ["id", "content"]
    for name, tool in tools.items():
        assert tool.output_schema is not None and tool.output_schema["type"] == "object", name
    assert "memory_ids" in tools["memory_read"].output_schema["properties"]
    hints = {name: tool.annotations for name, tool in tools.items()}
    assert hints["memory_stats"] is not None and hints["memory_stats"].read_only_hint
    assert hints["memory_forget"] is not None and hints["memory_forget"].destructive_hint


async def test_read_returns_the_context_text_and_its_accounting(service: MemoryService) -> None:
    async with Client(build_server(service)) as client:
        empty = await client.call_tool("memory_read", {"query": "anything"})
        assert text(empty) == "(nothing in memory matches this query)" and ok(empty)["text"] == ""
        for i in range(30):
            ok(await client.call_tool("memory_write", {"content": f"Fact {i}: the spare key is under pot {i}",
                                                       "session_id": "s1"}))
        tight = await client.call_tool("memory_read", {"query": "spare key", "session_id": "s1",
                                                       "token_budget": 40, "style": "timeline"})
        accounting = ok(tight)
        assert text(tight) == accounting["text"] and "spare key" in text(tight)
        assert 0 < accounting["tokens"] <= 40 and accounting["budget"] == 40 and accounting["dropped_ids"]


async def test_search_text_names_ids_scores_and_paths(service: MemoryService) -> None:
    async with Client(build_server(service)) as client:
        written = ok(await client.call_tool("memory_write", {"content": "The boiler was serviced in March"}))
        result = await client.call_tool("memory_search", {"query": "boiler service"})
        line = text(result)
        assert line.startswith(f"[{written['id']}] The boiler was serviced in March (score ")
        assert "relevance" in line and "found by" in line
        assert text(await client.call_tool("memory_search", {"query": "boiler", "namespace": "bob"})) \
            == "No memories match this query."


async def test_without_a_default_every_call_names_its_namespace() -> None:
    async with Client(build_server(make_service())) as client:
        assert "namespace is required" in error(await client.call_tool("memory_write", {"content": "x"}))
        assert "namespace is required" in error(await client.call_tool("memory_stats", {}))
        ok(await client.call_tool("memory_write", {"content": "Carol likes tea", "namespace": "carol"}))
        assert ok(await client.call_tool("memory_stats", {"namespace": "carol"}))["memories"] == 1


async def test_a_fixed_namespace_refuses_others() -> None:
    async with Client(build_server(make_service(default_namespace="alice", fixed_namespace=True))) as client:
        assert client.instructions is not None and "Every call acts on namespace 'alice'" in client.instructions
        ok(await client.call_tool("memory_write", {"content": "Alice likes tea", "namespace": "alice"}))
        message = error(await client.call_tool("memory_search", {"query": "tea", "namespace": "bob"}))
        assert "only namespace 'alice'" in message


@pytest.mark.parametrize(("tool", "arguments", "expected"), [
    ("memory_write", {"content": ""}, "content"),
    ("memory_write", {"content": "   "}, "blank"),
    ("memory_write", {"content": "x", "importance": -1}, "importance"),
    ("memory_write", {"content": "x", "metadata": "not an object"}, "metadata"),
    ("memory_write", {"content": "x", "session_id": 7}, "session_id"),
    ("memory_write", {"content": "y" * 301}, "max_content_chars=300"),
    ("memory_read", {"query": "x", "token_budget": 0}, "token_budget"),
    ("memory_read", {}, "query"),
    ("memory_search", {"query": "x", "top_k": 1000}, "top_k"),
    ("memory_update", {"id": "nope", "content": "x"}, "no memory with id 'nope'"),
    ("memory_forget", {}, "id"),
    ("memory_forget", {"id": "nope", "extra": 1}, "'extra'"),
    ("memory_stats", {"namespace": ""}, "namespace"),
])
async def test_bad_input_is_an_error_result(service: MemoryService, tool: str, arguments: dict[str, Any],
                                            expected: str) -> None:
    async with Client(build_server(service)) as client:
        assert expected in error(await client.call_tool(tool, arguments))
        assert ok(await client.call_tool("memory_stats", {}))["memories"] == 0


async def test_an_update_of_a_superseded_version_is_refused(service: MemoryService) -> None:
    async with Client(build_server(service)) as client:
        old = ok(await client.call_tool("memory_write", {"content": "Alice lives in Leeds"}))
        new = ok(await client.call_tool("memory_update", {"id": old["id"], "content": "Alice lives in York",
                                                          "metadata": {"source": "user"}}))
        assert "already superseded" in error(await client.call_tool("memory_update", {"id": old["id"],
                                                                                      "content": "Hull"}))
        (hit,) = ok(await client.call_tool("memory_search", {"query": "where does Alice live"}))["memories"]
        assert (hit["id"], hit["metadata"]) == (new["id"], {"source": "user"})
