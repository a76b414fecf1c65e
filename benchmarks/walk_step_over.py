r"""Experiment (issue 24, not in the library): the in-process walk stepping over a backchannel.

    nice -n 5 python benchmarks/walk_step_over.py --conversations conv-26,conv-30 --perturbations fillers,real_chat
    nice -n 5 python benchmarks/walk_step_over.py --step-over --conversations conv-26,conv-30 \
        --perturbations fillers,real_chat

runs `robustness.py` with its arguments; with ``--step-over`` the in-process `Partition.expand`
(`shared_core.store.base.PartitionBase.expand`) replaces each edge to a backchannel
(`formulas.chatter.contentless`) by edges to the backchannel's own neighbours, the strengths
multiplied and no hop spent ("Kate: I went hiking" -> "Sam: lol" -> "Kate: the view was great"
becomes one step); with ``--not-walkable`` a backchannel passes nothing on instead. Only the
in-process store is patched (a FalkorDB walk would need each memory's backchannel flag on the
server: `benchmarks/README.md`, Stepping over a backchannel in the walk).
"""

from __future__ import annotations

import runpy
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from shared_core.formulas.chatter import contentless
from shared_core.formulas.scoring import spread_max
from shared_core.store import base

HERE = Path(__file__).parent


def _step_over(self: Any, seeds: dict[str, float], walk: Any, walkable: Callable[[str], bool] | None
               ) -> dict[str, float]:
    weighted, factors, get = self.graph.weighted_links, walk.factors, self.graph.get_node
    known: dict[str, bool] = {}

    def chatter(node_id: str) -> bool:
        if node_id not in known:
            node = get(node_id)
            known[node_id] = node is not None and contentless(node.content, node.metadata)
        return known[node_id]

    def neighbours(node_id: str) -> list[tuple[str, float]]:
        out: dict[str, float] = {}
        for other, w in weighted(node_id, factors):
            far = [(f, w * w2) for f, w2 in weighted(other, factors) if f != node_id and not chatter(f)] \
                if chatter(other) else [(other, w)]
            for f, s in far:
                out[f] = max(out.get(f, 0.0), s)
        return list(out.items())

    return spread_max(seeds, neighbours, hops=walk.hops, decay=walk.decay, fanout=walk.fanout,
                      min_activation=walk.min_activation, beam=walk.beam, walkable=walkable)


def _not_walkable(self: Any, seeds: dict[str, float], walk: Any, walkable: Callable[[str], bool] | None
                  ) -> dict[str, float]:
    get = self.graph.get_node

    def ok(node_id: str) -> bool:
        node = get(node_id)
        chatter = node is not None and contentless(node.content, node.metadata)
        return not chatter and (walkable is None or walkable(node_id))

    return spread_max(seeds, lambda n: self.graph.weighted_links(n, walk.factors), hops=walk.hops, decay=walk.decay,
                      fanout=walk.fanout, min_activation=walk.min_activation, beam=walk.beam, walkable=ok)


if __name__ == "__main__":
    for flag, expand in (("--step-over", _step_over), ("--not-walkable", _not_walkable)):
        if flag in sys.argv:
            sys.argv.remove(flag)
            base.PartitionBase.expand = expand  # type: ignore[method-assign]
    sys.argv[0] = str(HERE / "robustness.py")
    sys.path.insert(0, str(HERE))
    runpy.run_path(str(HERE / "robustness.py"), run_name="__main__")
