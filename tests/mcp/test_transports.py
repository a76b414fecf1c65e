"""The server as MCP clients meet it: the SDK's client starts it over stdio, or talks to it over
streamable HTTP on a free loopback port, and runs the issue's scenario."""

from __future__ import annotations

import anyio
import pytest
from mcp import Client

from ._helpers import FAST, TIMEOUT, error, exercise, http_server, ok, stdio_client, text


async def test_stdio_scenario() -> None:
    with anyio.fail_after(2 * TIMEOUT):
        async with stdio_client(*FAST) as client:
            assert client.server_info is not None and client.server_info.name == "elastic-atlas"
            assert "memory_read" in (client.instructions or "")
            await exercise(client)


async def test_http_scenario_on_loopback() -> None:
    with http_server(*FAST) as server:
        assert server.url.startswith("http://127.0.0.1:") and server.url.endswith("/mcp")
        with anyio.fail_after(2 * TIMEOUT):
            async with Client(server.url, read_timeout_seconds=TIMEOUT) as client:
                await exercise(client)
        assert server.stop() == 0, server.stderr


async def test_http_clients_never_share_a_namespace() -> None:
    """Two clients at once: one names its namespace, the other relies on the server's default."""
    with http_server(*FAST) as server, anyio.fail_after(2 * TIMEOUT):
        async with Client(server.url, read_timeout_seconds=TIMEOUT) as bob, \
                Client(server.url, read_timeout_seconds=TIMEOUT) as other:
            secret = ok(await bob.call_tool("memory_write", {"content": "Bob's door code is 4321",
                                                             "namespace": "bob"}))
            assert secret["namespace"] == "bob"
            mine = ok(await other.call_tool("memory_write", {"content": "The door code at the office is 1111"}))
            assert mine["namespace"] == "alice"  # the server's default, not bob's from the call before
            seen = ok(await other.call_tool("memory_search", {"query": "door code", "top_k": 10}))
            assert [m["id"] for m in seen["memories"]] == [mine["id"]]
            assert "no memory" in error(await other.call_tool("memory_forget", {"id": secret["id"]}))
            assert "4321" in text(await bob.call_tool("memory_read", {"query": "door code", "namespace": "bob"}))
            assert "1111" not in text(await bob.call_tool("memory_read", {"query": "door code",
                                                                          "namespace": "bob"}))


@pytest.mark.integration
async def test_stdio_with_the_default_embedder() -> None:
    """The bundled MiniLM model finds a memory that shares no word with the query."""
    with anyio.fail_after(3 * TIMEOUT):
        async with stdio_client("--namespace", "alice") as client:
            for fact in ["Alice is allergic to peanuts", "Alice's sister lives in Lisbon",
                         "Alice drives an old blue Volvo"]:
                ok(await client.call_tool("memory_write", {"content": fact}))
            found = ok(await client.call_tool("memory_search", {"query": "Which foods are unsafe for her?",
                                                                "top_k": 1}))
            assert [m["content"] for m in found["memories"]] == ["Alice is allergic to peanuts"]
            assert "vector" in found["memories"][0]["paths"]
