"""`Ledger`: the lifecycle bookkeeping a compression run updates, as the run sees it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ...store.contract import Partition
    from ...values.model import MemoryNode
    from .summarize import Summarizer

__all__ = ["Ledger"]


class Ledger(Protocol):
    """The lifecycle bookkeeping a compression run updates
    (`shared_core.engine.lifecycle.manager.Lifecycle` is one)."""

    summarizer: Summarizer

    def remove(self, part: Partition, node: MemoryNode, *, kind: str | None, reason: str) -> None: ...

    def account(self, part: Partition, node: MemoryNode, *, previous: MemoryNode | None = None) -> None: ...

    def dirty_ids(self, namespace: str) -> set[str] | None: ...

    def clear_dirty(self, namespace: str, seen: set[str] | None) -> None: ...

    def enforce(self, now: float, *, protect: set[str]) -> None: ...
