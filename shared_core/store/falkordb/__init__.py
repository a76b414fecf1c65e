"""The FalkorDB backend: one memory shared by many processes and machines.

>>> from shared_core import ElasticMemoryAtlas
>>> atlas = ElasticMemoryAtlas(backend="falkordb://127.0.0.1:6379")  # doctest: +SKIP

Importing this package does not import the ``falkordb`` client; connecting does, and raises
`MissingDependencyError` naming the extra (``pip install '.[falkordb]'`` in a checkout) when it
is missing. See ``docs/falkordb.md``; the Cypher lives in `shared_core.store.falkordb.cypher`.
"""

from __future__ import annotations

from .backend import FalkorDBBackend
from .client import Settings, parse_url
from .partition import FalkorPartition

__all__ = ["FalkorDBBackend", "FalkorPartition", "Settings", "parse_url"]
