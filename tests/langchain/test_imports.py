"""The public API of langchain_atlas is pinned, documented, and imports without a warning."""

from __future__ import annotations

import doctest
import importlib
import subprocess
import sys

import pytest

import langchain_atlas

EXPECTED = [
    "AtlasChatMessageHistory",
    "AtlasMemory",
    "AtlasRetriever",
    "AtlasStore",
    "__version__",
    "create_memory_tools",
]
MODULES = ["_convert", "_history", "_memory", "_retriever", "_store", "_tools"]


def test_all_is_pinned() -> None:
    assert sorted(langchain_atlas.__all__) == sorted(EXPECTED)
    for name in langchain_atlas.__all__:
        assert hasattr(langchain_atlas, name), name


def test_version_is_the_distribution_version() -> None:
    from importlib.metadata import version

    assert langchain_atlas.__version__ == version("elastic-atlas")


def test_import_emits_no_warning() -> None:
    code = "import langchain_atlas"
    out = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


@pytest.mark.parametrize("module", MODULES)
def test_docstring_examples_run(module: str) -> None:
    mod = importlib.import_module(f"langchain_atlas.{module}")
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0


@pytest.mark.parametrize("name", ["AtlasChatMessageHistory", "AtlasMemory", "AtlasRetriever", "AtlasStore",
                                  "create_memory_tools"])
def test_docstrings_follow_the_partner_shape(name: str) -> None:
    doc = getattr(langchain_atlas, name).__doc__ or ""
    positions = [doc.find(section) for section in ("Setup:", "Key init args:", "Instantiate:", "Invoke:")]
    assert -1 not in positions and positions == sorted(positions), name
