"""The chroma backend: durable local memory in a chromadb directory, for one process.

>>> from shared_core import ElasticMemoryAtlas
>>> atlas = ElasticMemoryAtlas(backend="chroma:./memory")  # doctest: +SKIP

Reads stay in process; every write is committed to a write-ahead log in the directory (group
commit, by default within 100 ms; ``durability="sync"`` before the write returns) and
checkpointed into one chromadb collection per namespace (`collection_name`), which any chromadb
client (or langchain-chroma's ``Chroma(persist_directory=..., collection_name=...)``) can read.
See `shared_core.store.chroma.backend`. Importing this package does not import chromadb.
"""

from __future__ import annotations

from ._store import collection_name
from .backend import ChromaBackend

__all__ = ["ChromaBackend", "collection_name"]
