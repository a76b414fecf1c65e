"""FalkorDB-only tests: several processes, restarts, errors and the backend's own features."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from shared_core import AtlasConfig, ElasticMemoryAtlas, HashingEmbedder, ManualClock

from ._server import drop_all, fresh_prefix, session_server

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in item.path.parents:
            item.add_marker(pytest.mark.falkordb)


@pytest.fixture(scope="session")
def falkordb_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from session_server(tmp_path_factory.mktemp("falkordb"))


@pytest.fixture
def prefixed_url(falkordb_url: str) -> Iterator[str]:
    """A URL with a graph prefix of this test's own; its namespaces are dropped afterwards."""
    url = f"{falkordb_url}?prefix={fresh_prefix()}"
    yield url
    from shared_core.store.falkordb import FalkorDBBackend

    drop_all(FalkorDBBackend.from_url(url, dim=64))


@pytest.fixture
def shared_atlas(prefixed_url: str, clock: ManualClock) -> Callable[..., ElasticMemoryAtlas]:
    """Atlases on one server and prefix: as many 'processes' sharing one memory as a test builds."""

    def build(**config: Any) -> ElasticMemoryAtlas:
        return ElasticMemoryAtlas(config=AtlasConfig(**config), embedder=HashingEmbedder(dim=64), clock=clock,
                                  backend=prefixed_url)

    return build
