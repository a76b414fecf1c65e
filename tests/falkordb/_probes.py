"""Probes the FalkorDB tests share."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from shared_core.store.falkordb.client import Connection


@contextmanager
def round_trips(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """What each request to the server was (every command, pipeline or query goes through
    `Connection._retrying`, once per attempt)."""
    seen: list[str] = []
    retrying = Connection._retrying

    def counted(self: Connection, call: Callable[[], Any], what: str, *, budget: float | None = None) -> Any:
        seen.append(what)
        return retrying(self, call, what, budget=budget)

    with monkeypatch.context() as patch:
        patch.setattr(Connection, "_retrying", counted)
        yield seen
