"""The one error hierarchy of Elastic Atlas.

```
AtlasError
├── InvalidInputError (ValueError)             a bad argument: budget, top_k, filters, style …
│   ├── InvalidMemoryError                     empty or non-string content, bad metadata, bad ttl …
│   │   └── InvalidEmbeddingError              wrong dimension, NaN or infinite values
│   └── InvalidRelationError                   an unknown edge relation
├── MemoryNotFoundError (KeyError)             an unknown node id (or one of another namespace)
├── NamespaceViolationError (PermissionError)  an operation that would cross a namespace
├── NamespaceLimitError (RuntimeError)         a write past AtlasConfig.max_namespaces namespaces
├── CorruptFileError (ValueError)              a truncated, corrupt or foreign save file
├── BackendError (ConnectionError)             a storage server that cannot be reached
└── MissingDependencyError (ImportError)       an optional extra that is not installed
```

Each subclass also inherits the builtin it specialises, so ``except ValueError`` keeps working for
callers that do not know this library. Messages name the offending value.
"""

from __future__ import annotations

__all__ = [
    "AtlasError",
    "BackendError",
    "CorruptFileError",
    "InvalidEmbeddingError",
    "InvalidInputError",
    "InvalidMemoryError",
    "InvalidRelationError",
    "MemoryNotFoundError",
    "MissingDependencyError",
    "NamespaceLimitError",
    "NamespaceViolationError",
]


class AtlasError(Exception):
    """Root of every error raised by Elastic Atlas."""


class InvalidInputError(AtlasError, ValueError):
    """An argument has a wrong type or value (a negative budget, an unknown style …)."""


class InvalidMemoryError(InvalidInputError):
    """A memory cannot be stored as given (empty content, bad metadata, bad ttl …)."""


class InvalidEmbeddingError(InvalidMemoryError):
    """An embedding has the wrong dimension or holds NaN or infinite values."""


class InvalidRelationError(InvalidInputError):
    """An edge relation that the atlas does not know."""


class MemoryNotFoundError(AtlasError, KeyError):
    """No memory with this id is visible to the caller."""

    def __str__(self) -> str:  # KeyError quotes its argument; keep the plain message
        return str(self.args[0]) if self.args else "memory not found"


class NamespaceViolationError(AtlasError, PermissionError):
    """An operation would link, merge or read across a namespace boundary."""


class NamespaceLimitError(AtlasError, RuntimeError):
    """A write would start a namespace past ``AtlasConfig.max_namespaces``; nothing was stored."""


class CorruptFileError(AtlasError, ValueError):
    """A saved atlas is truncated, corrupt or of an unknown format version."""


class BackendError(AtlasError, ConnectionError):
    """A storage backend cannot be reached or answered with an error."""


class MissingDependencyError(AtlasError, ImportError):
    """An optional dependency is missing; the message names the extra to install."""

    @classmethod
    def for_extra(cls, package: str, extra: str) -> MissingDependencyError:
        return cls(f"{package} is required for this feature: pip install 'elastic-atlas[{extra}]'")
