"""The contract suite runs every test against each backend: in-process, chroma, FalkorDB on one
server and FalkorDB on a cluster (three masters; each namespace's graph lives on one shard).

``make_atlas`` and ``atlas`` here replace the shared ones: same deterministic atlas (hashing
embedder, manual clock), on the backend of the test's parameter. Each FalkorDB test gets a graph
prefix of its own, dropped afterwards; each chroma test a directory of its own (``sync``
durability, so every write goes through the log before it returns), closed afterwards.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from shared_core import AtlasConfig, ElasticMemoryAtlas, HashingEmbedder, InProcessBackend, ManualClock, Partition

from ..falkordb._server import drop_all, fresh_prefix, session_cluster, session_server

Make = Callable[..., ElasticMemoryAtlas]
#: the vector dimension of the ``part`` fixture's backend
PART_DIM = 8


@pytest.fixture(scope="session")
def falkordb_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from session_server(tmp_path_factory.mktemp("falkordb"))


@pytest.fixture(scope="session")
def falkordb_cluster_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from session_cluster(tmp_path_factory.mktemp("falkordb-cluster"))


@pytest.fixture(params=["memory", "chroma", pytest.param("falkordb", marks=pytest.mark.falkordb),
                        pytest.param("falkordb-cluster", marks=pytest.mark.falkordb)])
def backend_name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make_backend(backend_name: str, request: pytest.FixtureRequest) -> Iterator[Callable[[int], Any]]:
    """``make_backend(dim)``: None (the in-process default), or a chroma or FalkorDB backend of its own."""
    made: list[Any] = []
    opened: list[Any] = []

    def build(dim: int) -> Any:
        if backend_name == "memory":
            return None
        if backend_name == "chroma":
            from shared_core.store.chroma import ChromaBackend

            directory = request.getfixturevalue("tmp_path") / f"chroma-{len(opened)}"
            opened.append(ChromaBackend(directory, durability="sync", dim=dim))
            return opened[-1]
        from shared_core.store.falkordb import FalkorDBBackend

        url = request.getfixturevalue("falkordb_url" if backend_name == "falkordb" else "falkordb_cluster_url")
        backend = FalkorDBBackend.from_url(f"{url}?prefix={fresh_prefix()}", dim=dim)
        made.append(backend)
        return backend

    yield build
    for backend in made:
        drop_all(backend)
    for backend in opened:
        backend.close()


@pytest.fixture
def make_atlas(make_backend: Callable[[int], Any], clock: ManualClock) -> Make:
    def build(**config: Any) -> ElasticMemoryAtlas:
        return ElasticMemoryAtlas(config=AtlasConfig(**config), embedder=HashingEmbedder(dim=256), clock=clock,
                                  backend=make_backend(256))

    return build


@pytest.fixture
def atlas(make_atlas: Make) -> ElasticMemoryAtlas:
    return make_atlas()


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path


@pytest.fixture
def part(make_backend: Callable[[int], Any]) -> Partition:
    """Namespace "ns" of a fresh backend of the test's kind (`PART_DIM`-dimensional vectors),
    its graph created."""
    backend = make_backend(PART_DIM) or InProcessBackend(dim=PART_DIM)
    made = backend.partition("ns", create=True)
    assert made is not None and isinstance(made, Partition)
    return made  # type: ignore[no-any-return]
