"""Recall's category path (`shared_core.engine.categories`) on every backend: a list question's
category word ("pets") reaches evidence that names only a member of it ("the dog"), through the
namespace's vocabulary, and not without the path; a single-fact question does not run it, and
an unrelated query still finds nothing."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from shared_core import AtlasConfig, ElasticMemoryAtlas, HashingEmbedder, ManualClock

#: words embedded alone as their family's word: a model's "dog is near pets", and nothing else semantic
FAMILIES = {"dog": "pets", "hamster": "pets", "violin": "instruments"}


class FamilyEmbedder:
    """`HashingEmbedder`, except that a lone word of `FAMILIES` gets its family word's vector."""

    dim = 256

    def __init__(self) -> None:
        self._hash = HashingEmbedder(dim=self.dim)

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return self._hash.embed([FAMILIES.get(t.strip().lower(), t) for t in texts])


# no similarity or turn edges (the graph walk would reach the target otherwise); three candidates per path
COMMON: dict[str, Any] = {"similar_top": 0, "link_temporal": False, "candidate_min": 3, "candidate_ratio": 1.0,
                          "feedback_weight": 0.0, "speaker_weight": 0.0}
MEMORIES = [*(f"Kate: busy day {i} at work, Kate is tired" for i in range(10)),
            "Kate: pets are not allowed in my building, sadly",
            "Kate: this morning I walked the dog along the river before breakfast and it rained on us"]
QUERY = "What pets does Kate have?"


def _atlas(make_backend: Callable[[int], Any], **config: Any) -> ElasticMemoryAtlas:
    return ElasticMemoryAtlas(config=AtlasConfig(**{**COMMON, **config}), embedder=FamilyEmbedder(),
                              clock=ManualClock(1_700_000_000.0), backend=make_backend(256))


def test_a_category_word_reaches_a_member_only_through_the_path(make_backend: Callable[[int], Any]) -> None:
    found = {}
    for weight in (0.0, 1.0):
        atlas = _atlas(make_backend, category_weight=weight)
        target = atlas.add_memories(MEMORIES, namespace="a")[-1]
        hits = atlas.retrieve(QUERY, namespace="a", top_k=3, reinforce=False)
        found[weight] = [h for h in hits if h.node.id == target.id]
    assert found[0.0] == []
    assert len(found[1.0]) == 1 and found[1.0][0].paths == ("category",)


def test_the_vocabulary_follows_the_writes(make_backend: Callable[[int], Any]) -> None:
    atlas = _atlas(make_backend, category_weight=1.0)
    atlas.add_memories(MEMORIES[:-1], namespace="a")
    assert all("category" not in h.paths for h in atlas.retrieve(QUERY, namespace="a", top_k=3, reinforce=False))
    target = atlas.add_memories(MEMORIES[-1:], namespace="a")[0]  # "dog" joins the vocabulary
    hits = atlas.retrieve(QUERY, namespace="a", top_k=3, reinforce=False)
    assert target.id in {h.node.id for h in hits}


def test_a_single_fact_question_does_not_run_the_path(make_backend: Callable[[int], Any]) -> None:
    atlas = _atlas(make_backend, category_weight=1.0)
    atlas.add_memories(MEMORIES, namespace="a")
    hits = atlas.retrieve("When did Kate last see her pets?", namespace="a", top_k=5, reinforce=False)
    assert hits and all("category" not in h.paths for h in hits)


def test_the_path_keeps_the_relevance_floor(make_backend: Callable[[int], Any]) -> None:
    atlas = _atlas(make_backend, category_weight=1.0, relevance_floor=0.3)
    atlas.add_memories([*MEMORIES, "Kate: my violin teacher moved away"], namespace="a")
    assert atlas.retrieve("quantum chromodynamics lattice", namespace="a", top_k=3, reinforce=False) == []
    assert atlas.retrieve("Which instruments do the lattice quarks play?", namespace="a", top_k=3,
                          reinforce=False) != []  # a member word is relevance of its own, as a keyword hit is
