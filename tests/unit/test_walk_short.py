"""How long a chat message is (`body_words`: its words without the label), and the step of
``benchmarks/walk_short_pass.py`` (the walk passing through a short memory; measured, not kept:
benchmarks/README.md, "A short memory's share of the walk (session 22)")."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from walk_short_pass import body_words, through_short


@pytest.mark.parametrize(("content", "metadata", "words"), [
    ("Kate: went hiking!", None, 2),
    ("went hiking!", {"speaker": "Kate"}, 2),
    ("kate: at 5 pm", {"speaker": "Kate"}, 3),  # the metadata's speaker, in any case
    ("Caroline Reyes: hi there", None, 2),  # a label of two words
    ("note: buy oat milk", None, 4),  # not a label: a lower-case word, no such speaker
    ("Kate: 👍", None, 0),
    ("", None, 0),
    ("I can't wait - 2 weeks!", None, 6),  # "can", "t": runs of letters; digits count
])
def test_body_words_counts_the_message_without_its_label(content: str, metadata: dict[str, str] | None,
                                                         words: int) -> None:
    assert body_words(content, metadata) == words


def test_the_experiments_walk_reaches_past_a_short_memory_and_still_boosts_it() -> None:
    """``benchmarks/walk_short_pass.py``'s step: the short memory's own edges are added to the
    walker's, strengths multiplied, so the turn past it gets one hop's activation."""
    from shared_core.formulas.scoring import spread_max

    edges = {"a": [("s", 1.0)], "s": [("a", 1.0), ("b", 0.5)], "b": [("s", 0.5), ("c", 1.0)], "c": [("b", 1.0)]}
    plain = spread_max({"a": 1.0}, edges.__getitem__, hops=1, decay=0.5)
    passed = spread_max({"a": 1.0}, through_short(edges.__getitem__, {"s"}.__contains__), hops=1, decay=0.5)
    assert plain == {"s": 0.5}
    assert passed == {"s": 0.5, "b": 0.25}  # b one hop away, through s; s still boosted
    assert through_short(edges.__getitem__, set().__contains__)("a") == [("s", 1.0)]
