"""Elastic Atlas core: an in-process, self-managing memory graph for LLM agents.

>>> from shared_core import ElasticMemoryAtlas, AtlasConfig
"""

from __future__ import annotations

from .atlas import ElasticMemoryAtlas
from .engine.events import AtlasEvent, EventLog
from .engine.lifecycle.compression import CompressionReport
from .engine.lifecycle.contradiction import (
    Contradiction,
    ContradictionDetector,
    HeuristicContradictionDetector,
    LLMContradictionDetector,
)
from .engine.lifecycle.maintenance import MaintenanceReport
from .engine.lifecycle.manager import AtlasStats
from .engine.lifecycle.summarize import ExtractiveSummarizer, LLMSummarizer, Summarizer
from .engine.lifecycle.write_filter import HeuristicWriteFilter, LLMWriteFilter, WriteFilter, importance_score
from .store.contract import Backend, EntityIndex, GraphStore, KeywordIndex, Partition, VectorIndex
from .store.memory.backend import InProcessBackend
from .store.memory.graph_store import NetworkXGraphStore
from .store.memory.inverted_index import InvertedKeywordIndex
from .store.memory.keyword_index import FTS5KeywordIndex
from .store.memory.vector_index import NumpyVectorIndex
from .text.embedding import Embedder, HashingEmbedder, MiniLMEmbedder, as_embedder
from .text.tokens import TiktokenCounter, TokenCounter
from .values.clock import Clock, ManualClock, SystemClock
from .values.config import AtlasConfig
from .values.errors import (
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
    ReplicationError,
    UnknownFieldError,
)
from .values.model import Context, MemoryEdge, MemoryNode, Relation, ScoredMemory
from .values.version import __version__

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
    "EntityIndex",
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
    "MaintenanceReport",
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
    "ReplicationError",
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
