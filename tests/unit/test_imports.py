"""The public API is pinned, and the core loads no framework."""

from __future__ import annotations

import json
import subprocess
import sys

import shared_core

EXPECTED = [
    "AtlasConfig", "AtlasError", "AtlasEvent", "AtlasStats", "Backend", "BackendError", "Clock", "Context",
    "CorruptFileError", "ElasticMemoryAtlas", "Embedder", "EntityIndex", "EventLog", "FTS5KeywordIndex", "GraphStore",
    "HashingEmbedder", "InProcessBackend", "InvalidEmbeddingError", "InvalidInputError", "InvalidMemoryError",
    "InvalidRelationError", "InvertedKeywordIndex", "KeywordIndex", "ManualClock", "MemoryEdge", "MemoryNode",
    "HeldInWorkingMemoryError", "MemoryNotFoundError", "UnknownFieldError",
    "MiniLMEmbedder", "MissingDependencyError", "NamespaceLimitError", "NamespaceViolationError",
    "NetworkXGraphStore", "NumpyVectorIndex",
    "Partition", "Relation", "ReplicationError", "ScoredMemory", "SystemClock", "TiktokenCounter", "TokenCounter",
    "VectorIndex",
    "__version__", "as_embedder",
    # the lifecycle's seams and reports
    "CompressionReport", "MaintenanceReport", "Contradiction", "ContradictionDetector", "ExtractiveSummarizer",
    "HeuristicContradictionDetector", "HeuristicWriteFilter", "LLMContradictionDetector", "LLMSummarizer",
    "LLMWriteFilter", "Summarizer", "WriteFilter", "importance_score",
]


def test_all_is_pinned() -> None:
    assert sorted(shared_core.__all__) == sorted(EXPECTED)
    for name in shared_core.__all__:
        assert hasattr(shared_core, name), name


def test_version_comes_from_the_distribution() -> None:
    from importlib.metadata import version

    assert shared_core.__version__ == version("elastic-atlas")


def test_importing_the_core_loads_no_framework() -> None:
    code = (
        "import sys, json, shared_core\n"
        "a = shared_core.ElasticMemoryAtlas(embedder=shared_core.HashingEmbedder())\n"
        "a.add_memory('x', namespace='n'); a.build_context('x', namespace='n', token_budget=50)\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('langchain', 'langchain_core', 'langchain_classic', 'langgraph', 'llama_index', 'chromadb',"
        " 'falkordb', 'mcp', 'torch', 'matplotlib'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
