"""The values that cross the storage seam: what recall asks a partition for (`CandidateQuery`)
and its answer (`Candidates`), how the graph walk expands the seeds (`WalkSpec`), and one chunk
of a batch write (`WriteBatch`). `shared_core.store.contract` declares the operations that take
them and exports them with the protocols.

>>> q = CandidateQuery(text="hiking", vector=np.ones(4, dtype=np.float32), k=10, vector_k=200, keyword_k=40)
>>> q.keywords, q.time_range
(True, None)
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from ..formulas.chatter import contentless
from ..values.model import AnyRelation, MemoryNode
from .vector_math import Vector

__all__ = ["CandidateQuery", "Candidates", "WalkSpec", "WriteBatch"]


@dataclass(frozen=True, slots=True, kw_only=True)
class CandidateQuery:
    """What recall asks a partition for, in one call (`Partition.candidates`).

    ``vector_k`` hits of the vector search (the first ``k`` admitted become the vector path; all
    of their similarities come back for the cosine scale); the keyword search's ``keyword_k``
    best (none when ``keywords`` is False) restricted to ``keyword_session`` when given; the
    memories whose timestamp lies in ``time_range``, best cosine first; the ``recent_n`` latest
    of ``recent_session``. Every path keeps at most ``k`` admitted memories (``recent_k`` for the
    recent path); ``subset`` (when given) bounds the vector and keyword searches. With
    ``every_admissible`` every memory the indexes hold may be recalled: hits are kept unchecked.
    """

    text: str
    vector: Vector
    k: int
    vector_k: int
    keyword_k: int
    keywords: bool = True
    keyword_session: str | None = None
    subset: Collection[str] | None = None
    time_range: tuple[float, float] | None = None
    recent_session: str | None = None
    recent_n: int = 0
    recent_k: int = 0
    every_admissible: bool = False


@dataclass(slots=True)
class Candidates:
    """A partition's answer to a `CandidateQuery`.

    ``paths``: path name -> {id: the path's own value} in the path's rank order (``vector``:
    cosine; ``keyword``: BM25; ``time``: 1; ``recent``: ``1 / (rank + 1)``); ``vector_sims``: the
    similarities of the whole vector search, best first; ``cosine``: the query's cosine with
    every candidate of every path.
    """

    paths: dict[str, dict[str, float]]
    vector_sims: npt.NDArray[np.floating[Any]]
    cosine: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class WalkSpec:
    """The graph expansion of recall's seeds (`shared_core.formulas.scoring.spread_max`):
    ``factors`` weigh each relation (by relation code; None: not walked); with ``step_over``, an
    edge to a backchannel (`GraphStore.is_chatter`) is replaced by the backchannel's own edges,
    the two strengths multiplied, no hop spent (`shared_core.formulas.scoring.step_over`)."""

    factors: Sequence[float | None]
    hops: int
    decay: float
    fanout: int
    min_activation: float
    beam: int | None
    step_over: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class WriteBatch:
    """One chunk of new memories for `Partition.write_batch`: how to build their nodes once the
    partition has reserved their turns (``build(first)``: one node per row of ``vectors``, the
    j-th with ``turn`` and ``accessed_turn`` ``first + j``; the same ids and fields whatever
    ``first`` is), their vectors, the neighbour search (the ``similar_top`` best at or above
    ``min_similarity``, superseded memories dropped), whether each memory follows its session's
    previous one (``before`` edges), the caller's extra links per node, the edges' creation
    time, the text each memory's keyword entry is made from (``keyword_texts``, one per row;
    None: each node's content), which `keyword_rows` gives the keyword index, and whether each
    memory is a backchannel (``chatter``, one per row; None: computed from each node), which
    `chatter_flags` gives `GraphStore.mark_chatter`.

    >>> import numpy as np
    >>> from shared_core.values.model import MemoryNode
    >>> batch = WriteBatch(build=lambda first: [MemoryNode(id="a", content="x", namespace="u", turn=first,
    ...                                                    accessed_turn=first)],
    ...                    vectors=np.ones((1, 4), dtype=np.float32), similar_top=3, min_similarity=0.5,
    ...                    link_temporal=True, links=[()], created_at=0.0)
    >>> batch.count, batch.build(7)[0].turn, batch.keyword_rows(batch.build(7)), batch.chatter_flags(batch.build(7))
    (1, 7, [('a', 'x', None)], [('a', False)])
    """

    build: Callable[[int], Sequence[MemoryNode]]
    vectors: npt.NDArray[np.float32]
    similar_top: int
    min_similarity: float
    link_temporal: bool
    links: Sequence[Sequence[tuple[str, AnyRelation, float]]]
    created_at: float
    keyword_texts: Sequence[str] | None = None
    chatter: Sequence[bool] | None = None

    @property
    def count(self) -> int:
        """The number of memories (rows of ``vectors``)."""
        return len(self.vectors)

    def keyword_rows(self, nodes: Sequence[MemoryNode]) -> list[tuple[str, str, str | None]]:
        """The (id, text, session id) rows of `KeywordIndex.add_many` for the built ``nodes``."""
        texts = self.keyword_texts
        if texts is None:
            return [(n.id, n.content, n.session_id) for n in nodes]
        return [(n.id, text, n.session_id) for n, text in zip(nodes, texts, strict=True)]

    def chatter_flags(self, nodes: Sequence[MemoryNode]) -> list[tuple[str, bool]]:
        """The (id, backchannel?) rows of `GraphStore.mark_chatter` for the built ``nodes``."""
        flags = self.chatter
        if flags is None:
            return [(n.id, contentless(n.content, n.metadata, cached=False)) for n in nodes]
        return [(n.id, bool(flag)) for n, flag in zip(nodes, flags, strict=True)]
