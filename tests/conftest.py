"""Shared fixtures: a deterministic atlas (hashing embedder, manual clock) for unit tests."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from shared_core import AtlasConfig, ElasticMemoryAtlas, HashingEmbedder, ManualClock


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(1_700_000_000.0)


@pytest.fixture
def make_atlas(clock: ManualClock) -> Callable[..., ElasticMemoryAtlas]:
    """Build a fast, deterministic atlas; keyword arguments go to AtlasConfig."""

    def build(**config: Any) -> ElasticMemoryAtlas:
        return ElasticMemoryAtlas(config=AtlasConfig(**config), embedder=HashingEmbedder(dim=256),
                                  clock=clock)

    return build


@pytest.fixture
def atlas(make_atlas: Callable[..., ElasticMemoryAtlas]) -> ElasticMemoryAtlas:
    return make_atlas()
