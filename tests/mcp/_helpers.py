"""Helpers for the MCP tests: the server as a subprocess (stdio or HTTP) and one shared scenario.

Every server is started on loopback by the test itself, with bounded waits, and stopped.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.types import CallToolResult, TextContent

SERVER = [sys.executable, "-m", "shared_core.apps.mcp"]
FAST = ["--embedder", "hashing", "--namespace", "alice", "--max-content-chars", "500", "--maintain-every", "0"]
TOOLS = {"memory_write", "memory_read", "memory_search", "memory_update", "memory_forget", "memory_stats"}
TIMEOUT = 30.0


def stdio_client(*args: str) -> Client:
    """An SDK client that starts the server over stdio with ``args``."""
    return Client(StdioServerParameters(command=sys.executable, args=[*SERVER[1:], *args]),
                  read_timeout_seconds=TIMEOUT)


def text(result: CallToolResult) -> str:
    assert result.content and isinstance(result.content[0], TextContent), result
    return result.content[0].text


def ok(result: CallToolResult) -> dict[str, Any]:
    """The structured content of a successful call."""
    assert not result.is_error, text(result)
    assert isinstance(result.structured_content, dict), result
    return result.structured_content


def error(result: CallToolResult) -> str:
    """The message of a call that failed as an MCP error result."""
    assert result.is_error, result
    return text(result)


class HttpServer:
    """``elastic-atlas-mcp --transport http --port 0`` in a subprocess; ``url`` once it listens."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen([*SERVER, "--transport", "http", "--port", "0", *args],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        self._announced = threading.Event()
        self.url = ""
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()
        if not self._announced.wait(TIMEOUT) or not self.url:
            self.stop()
            raise AssertionError("the HTTP server did not start:\n" + self.stderr)

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)
            if "serving streamable HTTP at " in line and not self.url:
                self.url = line.rsplit(" ", 1)[-1].strip()
                self._announced.set()
        self._announced.set()  # the process ended

    @property
    def stderr(self) -> str:
        return "".join(self.lines)

    def stop(self) -> int:
        """SIGTERM, then SIGKILL if it lingers; the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        self._reader.join(timeout=5)
        if self.proc.stderr is not None and not self._reader.is_alive():
            self.proc.stderr.close()
        return self.proc.returncode


@contextmanager
def http_server(*args: str) -> Iterator[HttpServer]:
    server = HttpServer(*args)
    try:
        yield server
    finally:
        server.stop()


async def exercise(client: Client) -> None:
    """The issue's scenario, against a server started with `FAST`: list the tools, write, read
    back, search, update, forget, send bad input, and check the server still serves."""
    listed = await client.list_tools()
    assert {t.name for t in listed.tools} == TOOLS
    for tool in listed.tools:
        assert tool.description and len(tool.description) > 40, tool.name
        assert tool.input_schema["type"] == "object" and tool.input_schema["additionalProperties"] is False
        for name, prop in tool.input_schema["properties"].items():
            assert prop.get("description"), f"{tool.name}.{name} has no description"

    oat = ok(await client.call_tool("memory_write", {"content": "Alice takes oat milk in her coffee",
                                                     "session_id": "s1", "metadata": {"type": "preference"}}))
    assert oat["namespace"] == "alice" and oat["session_id"] == "s1"
    ok(await client.call_tool("memory_write", {"content": "Alice is training for the Berlin marathon",
                                               "session_id": "s1", "importance": 2.0, "pinned": True}))

    read = await client.call_tool("memory_read", {"query": "what milk does Alice take?", "session_id": "s1",
                                                  "token_budget": 200, "style": "bullet"})
    assert "oat milk" in text(read)
    accounting = ok(read)
    assert accounting["text"] == text(read) and 0 < accounting["tokens"] <= 200
    assert oat["id"] in accounting["memory_ids"]

    found = ok(await client.call_tool("memory_search", {"query": "oat milk coffee", "top_k": 1}))
    (best,) = found["memories"]
    assert best["id"] == oat["id"] and best["metadata"] == {"type": "preference"}
    assert best["score"] > 0 and {"relevance", "weight", "recency"} <= set(best["score_breakdown"])
    assert best["paths"]

    new = ok(await client.call_tool("memory_update", {"id": oat["id"], "content": "Alice now takes soy milk"}))
    assert new["supersedes"] == oat["id"]
    again = ok(await client.call_tool("memory_search", {"query": "milk", "top_k": 5}))
    assert [m["content"] for m in again["memories"] if "milk" in m["content"]] == ["Alice now takes soy milk"]

    assert ok(await client.call_tool("memory_forget", {"id": new["id"]})) == {"id": new["id"], "namespace": "alice"}
    stats = ok(await client.call_tool("memory_stats", {}))
    assert stats["namespace"] == "alice" and stats["pinned"] == 1 and stats["superseded"] == 1

    # bad input: each is an error result naming the problem, and the server keeps serving
    assert "content" in error(await client.call_tool("memory_write", {"content": 42}))
    assert "content" in error(await client.call_tool("memory_write", {"session_id": "s1"}))
    assert "top_k" in error(await client.call_tool("memory_search", {"query": "milk", "top_k": "many"}))
    assert "style" in error(await client.call_tool("memory_read", {"query": "milk", "style": "haiku"}))
    assert new["id"] in error(await client.call_tool("memory_forget", {"id": new["id"]}))
    assert "no memory" in error(await client.call_tool("memory_update", {"id": "no-such-id", "content": "x"}))
    assert "max_content_chars=500" in error(await client.call_tool("memory_write", {"content": "x" * 501}))
    assert "namspace" in error(await client.call_tool("memory_write", {"content": "typo", "namspace": "bob"}))
    assert "unknown tool" in error(await client.call_tool("memory_teleport", {})).lower()
    assert ok(await client.call_tool("memory_stats", {}))["memories"] == 2
