"""The one error hierarchy of Elastic Atlas.

```
AtlasError
├── InvalidInputError (ValueError)             a bad argument: budget, top_k, filters, style …
│   ├── InvalidMemoryError                     empty or non-string content, bad metadata, bad ttl …
│   │   └── InvalidEmbeddingError              wrong dimension, NaN or infinite values
│   ├── InvalidRelationError                   an unknown edge relation
│   └── UnknownFieldError (TypeError)          a keyword that names no field (AtlasConfig(bogus=1))
├── MemoryNotFoundError (KeyError)             an unknown node id (or one of another namespace)
│   └── HeldInWorkingMemoryError               a ``wm-`` id: a turn the write filter kept out of the graph
├── NamespaceViolationError (PermissionError)  an operation that would cross a namespace
├── NamespaceLimitError (RuntimeError)         a write past AtlasConfig.max_namespaces namespaces
├── CorruptFileError (ValueError)              a truncated, corrupt or foreign save file
├── BackendError (ConnectionError)             a storage server that cannot be reached
│   └── ReplicationError                       a write on the master that too few replicas confirmed
└── MissingDependencyError (ImportError)       an optional extra that is not installed
```

Each subclass also inherits the builtin it specialises, so ``except ValueError`` keeps working for
callers that do not know this library. Messages name the offending value.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = [
    "AtlasError",
    "BackendError",
    "CorruptFileError",
    "HeldInWorkingMemoryError",
    "InvalidEmbeddingError",
    "InvalidInputError",
    "InvalidMemoryError",
    "InvalidRelationError",
    "MemoryNotFoundError",
    "MissingDependencyError",
    "NamespaceLimitError",
    "NamespaceViolationError",
    "ReplicationError",
    "UnknownFieldError",
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


class UnknownFieldError(InvalidInputError, TypeError):
    """A keyword argument that names no field; the message names the closest one. A `TypeError`
    too, as Python's own "unexpected keyword argument" is."""

    @classmethod
    def for_names(cls, owner: str, unknown: Iterable[str], known: Iterable[str]) -> UnknownFieldError:
        """The error for ``unknown`` keywords of ``owner``, each with its closest ``known`` name.

        >>> str(UnknownFieldError.for_names("AtlasConfig", ["half_lfe"], ["half_life", "max_nodes"]))
        "AtlasConfig has no field 'half_lfe' (did you mean 'half_life'?)"
        """
        import difflib

        names = sorted(known)
        parts = []
        for name in sorted(unknown):
            close = difflib.get_close_matches(name, names, n=1)
            parts.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        noun = "field" if len(parts) == 1 else "fields"
        return cls(f"{owner} has no {noun} {', '.join(parts)}")


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


class ReplicationError(BackendError):
    """A write is applied on the master but fewer replicas than asked for (``?replicas=N``)
    confirmed it in time: the atlas call that made it raises once it is complete, nothing is
    undone, and a failover before the replicas catch up may lose it. ``key`` is the graph,
    ``confirmed`` and ``wanted`` the replica counts."""

    def __init__(self, message: str, *, key: str = "", confirmed: int = 0, wanted: int = 0) -> None:
        super().__init__(message)
        self.key = key
        self.confirmed = confirmed
        self.wanted = wanted


class MissingDependencyError(AtlasError, ImportError):
    """An optional dependency is missing; the message names the extra to install."""

    @classmethod
    def for_extra(cls, package: str, extra: str) -> MissingDependencyError:
        return cls(f"{package} is required for this feature: install elastic-atlas[{extra}] (not on PyPI: "
                   f"pip install '.[{extra}]' in a checkout of elastic-atlas, or its wheel with [{extra}])")


class HeldInWorkingMemoryError(MemoryNotFoundError):
    """The id names a turn the write filter held in working memory (``wm-…``), not a stored
    memory: it can be read (`get`), corrected (`update_memory` stores the correction) and
    forgotten, but it has no edges, history or links until it is written with intent
    (``keep=True``, an ``importance`` or ``pinned=True``)."""
