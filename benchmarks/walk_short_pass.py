r"""Experiment (issue 24, session 22): recall's walk passes through a short memory without spending a hop.

    nice -n 5 python benchmarks/walk_short_pass.py --short-words 4 benchmarks/graph_kind_diagnosis.py \
        --sets dev,split,real_chat --point short_graph_factor=1.0 --json /tmp/pass4.json

runs the script named after the option (``graph_kind_diagnosis.py``, ``robustness.py``,
``locomo_recall.py``) with its arguments, in a process whose in-process walk (`PartitionBase.expand`,
recall's walk only: a walk of two hops or more; the context windows' one-hop walk is untouched)
passes through a memory whose body is at most ``--short-words`` words long (`body_words`, the
label aside): an edge ``(n, m, w)`` to a short ``m`` is kept, and ``m``'s own edges ``(m, f, w2)``
are added to ``n``'s as ``(f, w * w2)`` (``f`` not ``n``), so that ``f`` is reached from ``n``
as if ``m`` were not there (no hop and no decay spent on ``m``), while ``m`` is still reached and
boosted. A backchannel is stepped over first, as the library does (`scoring.step_over`). The
library's walk is not changed: FalkorDB and chroma would need a short memory's flag on write
(as the backchannel's, session 17) to walk alike, so the lever is measured here first.
"""

from __future__ import annotations

import functools
import re
import runpy
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from shared_core.formulas.scoring import spread_max, step_over
from shared_core.formulas.subqueries import speaker_of
from shared_core.store.base import PartitionBase
from shared_core.store.contract import WalkSpec

HERE = Path(__file__).parent

Links = Callable[[str], list[tuple[str, float]]]

_WORD = re.compile(r"[^\W_]+")


@functools.lru_cache(maxsize=8192)
def _words_after(content: str, label: str | None) -> int:
    head, colon, rest = content.partition(":")
    if colon and ((label is not None and head.strip().lower() == label) or speaker_of(content) is not None):
        content = rest
    return sum(1 for _ in _WORD.finditer(content))


def body_words(content: str, metadata: Mapping[str, object] | None = None) -> int:
    """The number of words in a chat message's body: its ``"Name: "`` label (a capitalised chat
    label, or its metadata's ``speaker`` in any case) aside; a word is a run of letters or digits.

    >>> body_words("Kate: went hiking!"), body_words("lol"), body_words("kate: at 5 pm", {"speaker": "Kate"})
    (2, 1, 3)
    >>> body_words("note: buy oat milk"), body_words("👍")
    (4, 0)
    """
    who = speaker_of(content, metadata) if metadata else None
    return _words_after(content, None if who is None else who.lower())


def through_short(neighbors: Links, short: Callable[[str], bool]) -> Links:
    """``neighbors`` with, besides each edge to a ``short`` node, that node's own edges (the two
    strengths multiplied), so the walk reaches past it without spending a hop.

    >>> edges = {"a": [("s", 1.0)], "s": [("a", 1.0), ("b", 0.5)], "b": [("s", 0.5)]}
    >>> through_short(edges.__getitem__, {"s"}.__contains__)("a")
    [('s', 1.0), ('b', 0.5)]
    """
    def links(node_id: str) -> list[tuple[str, float]]:
        out: list[tuple[str, float]] = []
        for other, w in neighbors(node_id):
            out.append((other, w))
            if short(other):
                out.extend((far, w * w2) for far, w2 in neighbors(other) if far not in (node_id, other))
        return out

    return links


def patch(max_words: int) -> None:
    """Recall's in-process walk passes through memories of at most ``max_words`` words."""
    def expand(self: PartitionBase, seeds: dict[str, float], walk: WalkSpec,
               walkable: Callable[[str], bool] | None) -> dict[str, float]:
        weighted, factors, get_node = self.graph.weighted_links, walk.factors, self.graph.get_node
        lengths: dict[str, bool] = {}

        def links(node_id: str) -> list[tuple[str, float]]:
            return weighted(node_id, factors)  # type: ignore[no-any-return]

        def short(node_id: str) -> bool:
            known = lengths.get(node_id)
            if known is None:
                node = get_node(node_id)
                known = lengths[node_id] = node is not None and body_words(node.content, node.metadata) <= max_words
            return known

        step = step_over(links, self.graph.is_chatter) if walk.step_over else links
        if walk.hops >= 2:  # recall's walk, not the context windows' one hop
            step = through_short(step, short)
        return spread_max(seeds, step, hops=walk.hops, decay=walk.decay, fanout=walk.fanout,
                          min_activation=walk.min_activation, beam=walk.beam, walkable=walkable)

    PartitionBase.expand = expand  # type: ignore[method-assign]


if __name__ == "__main__":
    args = sys.argv[1:]
    at = args.index("--short-words")
    words = int(args[at + 1])
    del args[at:at + 2]
    script, rest = Path(args[0]), args[1:]
    if words > 0:
        patch(words)
    sys.argv = [str(script), *rest]
    sys.path.insert(0, str(HERE))
    runpy.run_path(str(script), run_name="__main__")
