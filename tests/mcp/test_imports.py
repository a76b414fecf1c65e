"""The MCP package's public names are pinned, its examples run, and the SDK loads only with the server."""

from __future__ import annotations

import doctest
import importlib
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import shared_core.apps.mcp

ROOT = Path(__file__).resolve().parents[2]
EXPECTED = ["Forgotten", "MemoryService", "ReadResult", "SearchHit", "SearchResult", "StatsResult", "Updated",
            "Written", "build_server", "main"]


def test_all_is_pinned() -> None:
    assert sorted(shared_core.apps.mcp.__all__) == sorted(EXPECTED)
    for name in EXPECTED:
        assert hasattr(shared_core.apps.mcp, name), name


def test_the_sdk_is_imported_only_by_the_server() -> None:
    code = ("import sys, json, shared_core, shared_core.apps.mcp\n"
            "from shared_core.apps.mcp import MemoryService\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('mcp', 'mcp_types', 'pydantic', 'uvicorn', 'starlette'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


@pytest.mark.parametrize("module", ["shared_core.apps.mcp", "shared_core.apps.mcp._service",
                                    "shared_core.apps.mcp._autosave"])
def test_docstring_examples_run(module: str) -> None:
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_the_console_script_is_declared() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["scripts"]["elastic-atlas-mcp"] == "shared_core.apps.mcp:main"
    assert any(req.startswith("mcp") for req in project["optional-dependencies"]["mcp"])
