"""The MCP tools as a hostile client calls them, on both backends: arguments are strictly typed
(no ``"yes"`` for a flag, no ``"100"`` for a number), text fields carry a ``maxLength`` equal to
the core's limit, and a namespace or session id with a control character is an error result that
leaves every other namespace untouched (the issue's ``"victim\\u0000x"``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from mcp import Client

from shared_core import ElasticMemoryAtlas
from shared_core.apps.mcp import MemoryService, build_server

from ..mcp._helpers import error, ok

Make = Callable[..., ElasticMemoryAtlas]


@pytest.fixture
def service(make_atlas: Make) -> MemoryService:
    return MemoryService(make_atlas(max_content_chars=400, max_query_chars=200), default_namespace="victim")


async def test_schemas_bound_every_text_field_by_the_core_limits(service: MemoryService) -> None:
    async with Client(build_server(service)) as client:
        tools = {t.name: t.input_schema["properties"] for t in (await client.list_tools()).tools}
    assert tools["memory_write"]["content"]["maxLength"] == 400
    assert tools["memory_update"]["content"]["maxLength"] == 400
    assert tools["memory_read"]["query"]["maxLength"] == 200
    assert tools["memory_search"]["query"]["maxLength"] == 200
    for name, props in tools.items():
        for field in ("namespace", "session_id", "id"):
            if field in props:
                schema = props[field]
                limits = [schema.get("maxLength")] + [s.get("maxLength") for s in schema.get("anyOf", ())]
                assert 256 in limits, (name, field, schema)


@pytest.mark.parametrize(("tool", "arguments", "named"), [
    ("memory_write", {"content": "x", "pinned": "yes"}, "pinned"),
    ("memory_write", {"content": "x", "pinned": 1}, "pinned"),
    ("memory_write", {"content": "x", "importance": "2"}, "importance"),
    ("memory_write", {"content": "x", "importance": True}, "importance"),
    ("memory_write", {"content": 42}, "content"),
    ("memory_write", {"content": "x", "namespace": 7}, "namespace"),
    ("memory_write", {"content": "x", "session_id": ["s"]}, "session_id"),
    ("memory_write", {"content": "x", "metadata": "not an object"}, "metadata"),
    ("memory_write", {"content": "x", "metadata": "[1, 2]"}, "metadata"),
    ("memory_read", {"query": "x", "token_budget": "100"}, "token_budget"),
    ("memory_read", {"query": "x", "token_budget": 100.0}, "token_budget"),
    ("memory_read", {"query": "x", "token_budget": True}, "token_budget"),
    ("memory_search", {"query": "x", "top_k": "5"}, "top_k"),
    ("memory_search", {"query": 5}, "query"),
    ("memory_update", {"id": 5, "content": "x"}, "id"),
    ("memory_update", {"id": "m", "content": "x", "importance": "1"}, "importance"),
])
async def test_loosely_typed_arguments_are_refused(service: MemoryService, tool: str, arguments: dict[str, Any],
                                                   named: str) -> None:
    async with Client(build_server(service)) as client:
        assert named in error(await client.call_tool(tool, arguments))
        assert ok(await client.call_tool("memory_stats", {}))["memories"] == 0


async def test_well_typed_arguments_still_pass(service: MemoryService) -> None:
    async with Client(build_server(service)) as client:
        ok(await client.call_tool("memory_write", {"content": "Alice has a cat", "pinned": True, "importance": 2}))
        ok(await client.call_tool("memory_read", {"query": "cat", "token_budget": 100}))
        assert len(ok(await client.call_tool("memory_search", {"query": "cat", "top_k": 3}))["memories"]) == 1


async def test_text_beyond_the_limits_is_an_error_result(service: MemoryService) -> None:
    async with Client(build_server(service)) as client:
        assert "400" in error(await client.call_tool("memory_write", {"content": "x" * 401}))
        assert "200" in error(await client.call_tool("memory_read", {"query": "x" * 201}))
        assert "200" in error(await client.call_tool("memory_search", {"query": "x" * 201}))
        assert "256" in error(await client.call_tool("memory_write", {"content": "x", "namespace": "n" * 257}))
        assert ok(await client.call_tool("memory_stats", {}))["memories"] == 0


@pytest.mark.parametrize("char", ["\u0000", "\n", "\x1f", "\x7f"])
async def test_a_control_character_in_a_namespace_or_session_is_an_error_result(service: MemoryService,
                                                                                char: str) -> None:
    async with Client(build_server(service)) as client:
        for i in range(3):
            ok(await client.call_tool("memory_write", {"content": f"victim secret {i}"}))
        for arguments in ({"content": "evil", "namespace": f"victim{char}x"},
                          {"content": "evil", "session_id": f"s{char}"}):
            assert "control character" in error(await client.call_tool("memory_write", arguments))
        assert "control character" in error(await client.call_tool(
            "memory_search", {"query": "secret", "namespace": f"victim{char}"}))
        assert "control character" in error(await client.call_tool(
            "memory_read", {"query": "secret", "session_id": f"s{char}"}))
        assert ok(await client.call_tool("memory_stats", {}))["memories"] == 3
        found = ok(await client.call_tool("memory_search", {"query": "victim secret", "top_k": 10}))
        assert len(found["memories"]) == 3
    assert service.atlas.namespaces() == ["victim"]


def test_a_default_namespace_obeys_the_same_rule(make_atlas: Make) -> None:
    from shared_core import InvalidInputError

    with pytest.raises(InvalidInputError, match="control character"):
        MemoryService(make_atlas(), default_namespace="victim\u0000x")
