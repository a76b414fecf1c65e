"""Elastic Atlas core: an in-process, self-managing memory graph for LLM agents.

>>> from shared_core import ElasticMemoryAtlas, AtlasConfig
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from .atlas import ElasticMemoryAtlas
from .backend import Backend, InProcessBackend, Partition
from .clock import Clock, ManualClock, SystemClock
from .compression import CompressionReport
from .config import AtlasConfig
from .contradiction import (
    Contradiction,
    ContradictionDetector,
    HeuristicContradictionDetector,
    LLMContradictionDetector,
)
from .embedding import Embedder, HashingEmbedder, MiniLMEmbedder, as_embedder
from .errors import (
    AtlasError,
    BackendError,
    CorruptFileError,
    HeldInWorkingMemoryError,
    InvalidEmbeddingError,
    InvalidInputError,
    InvalidMemoryError,
    InvalidRelationError,
    MemoryNotFoundError,
    MissingDependencyError,
    NamespaceLimitError,
    NamespaceViolationError,
    UnknownFieldError,
)
from .events import AtlasEvent, EventLog
from .graph_store import GraphStore, NetworkXGraphStore
from .inverted_index import InvertedKeywordIndex
from .keyword_index import FTS5KeywordIndex, KeywordIndex
from .lifecycle import AtlasStats
from .model import Context, MemoryEdge, MemoryNode, Relation, ScoredMemory
from .summarize import ExtractiveSummarizer, LLMSummarizer, Summarizer
from .tokens import TiktokenCounter, TokenCounter
from .vector_index import NumpyVectorIndex, VectorIndex
from .write_filter import HeuristicWriteFilter, LLMWriteFilter, WriteFilter, importance_score

try:
    __version__ = version("elastic-atlas")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0"

__all__ = [
    "AtlasConfig",
    "AtlasError",
    "AtlasEvent",
    "AtlasStats",
    "Backend",
    "BackendError",
    "Clock",
    "CompressionReport",
    "Context",
    "Contradiction",
    "ContradictionDetector",
    "CorruptFileError",
    "ElasticMemoryAtlas",
    "Embedder",
    "EventLog",
    "ExtractiveSummarizer",
    "FTS5KeywordIndex",
    "GraphStore",
    "HashingEmbedder",
    "HeldInWorkingMemoryError",
    "HeuristicContradictionDetector",
    "HeuristicWriteFilter",
    "InProcessBackend",
    "InvalidEmbeddingError",
    "InvalidInputError",
    "InvalidMemoryError",
    "InvalidRelationError",
    "InvertedKeywordIndex",
    "KeywordIndex",
    "LLMContradictionDetector",
    "LLMSummarizer",
    "LLMWriteFilter",
    "ManualClock",
    "MemoryEdge",
    "MemoryNode",
    "MemoryNotFoundError",
    "MiniLMEmbedder",
    "MissingDependencyError",
    "NamespaceLimitError",
    "NamespaceViolationError",
    "NetworkXGraphStore",
    "NumpyVectorIndex",
    "Partition",
    "Relation",
    "ScoredMemory",
    "Summarizer",
    "SystemClock",
    "TiktokenCounter",
    "TokenCounter",
    "UnknownFieldError",
    "VectorIndex",
    "WriteFilter",
    "__version__",
    "as_embedder",
    "importance_score",
]
