"""Recall's walk stepping over a backchannel (`WalkSpec.step_over`) on every backend: the
backchannel flag is stored with each memory of a batch write (`GraphStore.is_chatter`), and the
walk replaces an edge to a backchannel by the backchannel's own edges, the strengths multiplied,
no hop spent; every backend walks to the same activations as the in-process store."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pytest

from shared_core import InProcessBackend, MemoryNode, Partition
from shared_core.store.contract import WalkSpec, WriteBatch
from shared_core.values.model import Relation
from shared_core.values.relations import RELATIONS

from .conftest import PART_DIM

DIM = PART_DIM  # the `part` fixture's (conftest)
# one session: a fact, a backchannel, the fact's follow-up, two backchannels in a row, another fact
TURNS = ["Kate: I went hiking on Sunday", "Sam: lol", "Kate: the view from the top was great",
         "Sam: haha nice", "Kate: ok", "Kate: next week I am going to Lisbon"]
IDS = ["t0", "t1", "t2", "t3", "t4", "t5"]
# extra edges: a related_to from the second backchannel's neighbour, a weak one into a backchannel
EXTRA: list[Sequence[tuple[str, Relation, float]]] = [(), (), (("t5", Relation.RELATED_TO, 0.5),), (),
                                                      (("t0", Relation.SIMILAR_TO, 0.8),), ()]


def _write(part: Partition, chatter: Sequence[bool] | None = None) -> list[MemoryNode]:
    def build(first: int) -> list[MemoryNode]:
        return [MemoryNode(id=i, content=text, namespace=part.namespace, session_id="s", turn=first + j,
                           accessed_turn=first + j, timestamp=float(j))
                for j, (i, text) in enumerate(zip(IDS, TURNS, strict=True))]

    vectors = np.eye(len(IDS), DIM, dtype=np.float32)
    return part.write_batch(WriteBatch(build=build, vectors=vectors, similar_top=0, min_similarity=0.5,
                                       link_temporal=True, links=EXTRA, created_at=0.0, chatter=chatter))


def _spec(*, hops: int, step_over: bool = True, beam: int | None = None) -> WalkSpec:
    factors = [1.0 if r in (Relation.BEFORE, Relation.RELATED_TO, Relation.SIMILAR_TO) else None for r in RELATIONS]
    return WalkSpec(factors=factors, hops=hops, decay=0.5, fanout=8, min_activation=0.0, beam=beam,
                    step_over=step_over)


def _reference() -> Partition:
    made = InProcessBackend(dim=DIM).partition("ns", create=True)
    assert made is not None
    _write(made)  # type: ignore[arg-type]
    return made  # type: ignore[return-value]


def test_a_batch_write_stores_each_memorys_backchannel_flag(part: Partition) -> None:
    _write(part)
    assert [part.graph.is_chatter(i) for i in IDS] == [False, True, False, True, True, False]
    assert not part.graph.is_chatter("unknown")
    part.graph.mark_chatter([("t0", True), ("t1", False), ("unknown", True)])
    assert [part.graph.is_chatter(i) for i in ("t0", "t1", "unknown")] == [True, False, False]


def test_the_writers_flags_are_stored_as_given(part: Partition) -> None:
    _write(part, chatter=[True, False, False, False, False, False])
    assert [part.graph.is_chatter(i) for i in IDS] == [True, False, False, False, False, False]


def test_the_walk_steps_over_a_backchannel(part: Partition) -> None:
    _write(part)
    # hop 1: t0 -> t1 (lol) -> t2 is one step, 1.0 * 1.0 * 0.5; t0 -> t4 (ok, similar_to 0.8) -> t5
    # (before) another, 0.8 * 1.0 * 0.5 (t4's edge to t3, a backchannel too, ends there);
    # hop 2: t2 -> t5 (related_to 0.5), 0.5 * 0.5 * 0.5; t5 -> t2 the same way back, 0.4 * 0.5 * 0.5
    # (t2 -> t3 (haha nice) -> t4 (ok) passes nothing, nor does t5 -> t4 -> t0, the seed)
    got = part.expand({"t0": 1.0}, _spec(hops=2), None)
    assert got == pytest.approx({"t2": 0.5 + 0.1, "t5": 0.4 + 0.125})
    plain = part.expand({"t0": 1.0}, _spec(hops=1, step_over=False), None)
    assert plain == pytest.approx({"t1": 0.5, "t4": 0.4})


@pytest.mark.parametrize("seeds", [{"t0": 1.0}, {"t2": 1.0, "t5": 0.7}, {"t1": 0.9, "t3": 0.3}, {"t4": 1.0}])
@pytest.mark.parametrize("hops", [1, 2, 3])
@pytest.mark.parametrize("beam", [None, 1])
def test_every_backend_walks_as_the_in_process_store(part: Partition, seeds: dict[str, float], hops: int,
                                                     beam: int | None) -> None:
    _write(part)
    reference = _reference()
    spec = _spec(hops=hops, beam=beam)
    walkable: Callable[[str], bool] = lambda node_id: node_id != "t5"  # noqa: E731
    for allowed in (None, walkable):
        assert part.expand(dict(seeds), spec, allowed) == pytest.approx(reference.expand(dict(seeds), spec, allowed))


@pytest.mark.parametrize("ids", [["t0"], ["t2"], ["t1"], ["t2", "t5"], ["t3", "t4"], ["nowhere"]])
def test_context_windows_step_over_as_the_in_process_store(part: Partition, ids: list[str]) -> None:
    """`Partition.neighbour_nodes` with ``step_over`` (the context windows' one-hop walk over
    ``before`` edges): the same nodes on every backend; a backchannel is never among them."""
    from shared_core.engine.neighbours import _session_walk

    _write(part)
    walk = _session_walk()
    assert walk.step_over
    got = [n.id for n in part.neighbour_nodes(ids, walk)]
    assert got == [n.id for n in _reference().neighbour_nodes(ids, walk)]
    assert not {"t1", "t3", "t4"} & (set(got) - set(ids))
    assert [n.id for n in part.neighbour_nodes(["t0"], walk)] == ["t2"]  # past "lol"
