"""The FalkorDB server the tests use: ``ATLAS_FALKORDB_URL`` (``make test`` starts one and stops
it by its pid afterwards) or, when unset, one started here for the session."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from shared_core import MissingDependencyError

ENV = "ATLAS_FALKORDB_URL"
CLUSTER_ENV = "ATLAS_FALKORDB_CLUSTER_URL"


def session_server(tmp: Path) -> Iterator[str]:
    url = os.environ.get(ENV)
    if url:
        yield url.split("?")[0]
        return
    try:
        from shared_core.store.falkordb.server import start_server

        server = start_server(tmp)
    except MissingDependencyError as exc:  # pragma: no cover - the dev extra installs it
        pytest.skip(f"no FalkorDB server: {exc}")
    try:
        yield server.url
    finally:
        server.stop()


def session_cluster(tmp: Path) -> Iterator[str]:
    """A FalkorDB cluster's URL: ``ATLAS_FALKORDB_CLUSTER_URL`` (``make test`` starts one) or one
    of three masters with a replica each (as ``make test``'s) started here for the session."""
    url = os.environ.get(CLUSTER_ENV)
    if url:
        yield url.split("?")[0]
        return
    try:
        from shared_core.store.falkordb.server import start_cluster

        cluster = start_cluster(tmp, masters=3, replicas=1)
    except MissingDependencyError as exc:  # pragma: no cover - the dev extra installs it
        pytest.skip(f"no FalkorDB server: {exc}")
    try:
        yield cluster.url
    finally:
        cluster.stop()


def fresh_prefix() -> str:
    """A graph-key prefix of its own for one test, so tests never see each other's namespaces."""
    return f"t{uuid.uuid4().hex[:12]}:"


def drop_all(backend: object) -> None:
    for ns in list(backend.namespaces()):  # type: ignore[attr-defined]
        backend.drop(ns)  # type: ignore[attr-defined]
    backend.close()  # type: ignore[attr-defined]
