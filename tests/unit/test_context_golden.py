"""Context blocks are byte-identical to the recorded ones: speed work must not change any output.

``data/context_golden.json`` was generated from the renderer before its packing was optimised
(commit "context: golden outputs of build_context_block"), by ``python -m
tests.unit.test_context_golden``. Each case is built from its seed by `make_case` (stdlib
``random``, stable across Python versions), so the fixture stores only the outputs: the sha256
of the text, its token count and the ids shown and dropped, in order.
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path
from typing import Any

import pytest

from shared_core import TiktokenCounter
from shared_core.engine.context import STYLES, build_context_block
from shared_core.values.model import MemoryNode, ScoredMemory

GOLDEN = Path(__file__).parent / "data" / "context_golden.json"
CASES = 303
COUNTER = TiktokenCounter()
MAY8 = 1_683_554_160.0  # 2023-05-08 13:56 UTC
BUDGETS = (0, 3, 8, 20, 40, 60, 100, 150, 250, 400, 700, 1000, 2000)
SYLLABLES = ("ka", "lo", "mi", "ren", "tas", "vu", "bel", "dor", "fi", "gan")
PIECES = ("Ana:", "Ben:", "How was the trip?", "I loved it!", "We saw the aurora…", "Really?!",
          "café", "naïve", "日本語のテキスト", "🙂🎉", "'s", "'ll", "1234567", "3.14", "e.g.", "…",
          "...", "—", "(from session x)", "[summary]", "  ", "\n", "\t", "<|endoftext|>", "$$", "##",
          "https://example.com/a?b=c", "don't", "I'm", "x" * 40, "ok.", "!", "?")
TRIMMED = ((["ÓN", "x", "ȫ", "ña", "ña", "̓ǿ", "ȫ"], 40), (["x", "ël️", "ÓN", "ël️", "ël️", "ÓN", "ña", "͓ǵ‼"], 32),
           (["̓ǿ", "ÓN", "ÓN", "x"], 26))
NON_ADDITIVE = ("ȫ", "ña", "ÓN", "ël️", "͓ǵ‼", "̓ǿ")  # count("ȫ ña") == 5 > count("ȫ") + 1 + count("ña")


def _text(rng: random.Random) -> str:
    shape = rng.random()
    if shape < 0.3:  # the latency benchmark's synthetic memories
        words = [rng.choice(SYLLABLES) + rng.choice(SYLLABLES) for _ in range(12)]
        return f"{rng.randrange(10_000)}: " + " ".join(words)
    if shape < 0.7:  # dialogue-like, with punctuation, unicode and odd whitespace
        return " ".join(rng.choice(PIECES) for _ in range(rng.randint(1, 14))) + rng.choice(("", ".", " ", "?"))
    if shape < 0.82:  # long, to be truncated at small budgets
        return " ".join(f"word{rng.randrange(1000)}" for _ in range(rng.randint(60, 400)))
    if shape < 0.95:  # joined by a space these count more than apart: the final trim must act
        return rng.choice(NON_ADDITIVE)
    return rng.choice(("   ", "…", ".", "?!", "x"))


def _hit(rng: random.Random, i: int, *, session: str, turn: int, kind: str = "memory") -> ScoredMemory:
    node = MemoryNode(id=f"m{i}", content=_text(rng), namespace="u", session_id=session,
                      timestamp=MAY8 + rng.choice((0, 0, 0, 1, 2, 9, 30)) * 86_400.0 + rng.randrange(3600),
                      turn=turn, kind=kind)
    return ScoredMemory(node, rng.random(), {"relevance": 0.5}, ("vector",), other_session=rng.random() < 0.3)


def make_case(seed: int) -> dict[str, Any]:
    """Inputs of one case: tiers, style and budget."""
    if seed >= CASES - len(TRIMMED):  # found by search: the exact count overshoots the estimate
        texts, budget = TRIMMED[seed - CASES + len(TRIMMED)]
        hits = [ScoredMemory(MemoryNode(id=f"m{i}", content=t, namespace="u", session_id="s", timestamp=MAY8, turn=i),
                             1.0) for i, t in enumerate(texts)]
        return {"working": [], "recalled": hits, "summaries": [], "style": "narrative", "budget": budget}
    rng = random.Random(seed)
    sessions = ["s0", "s1", "s2"]
    turns = {s: 0 for s in [*sessions, "now"]}
    hits: list[ScoredMemory] = []

    def make(session: str, kind: str = "memory") -> ScoredMemory:
        turns[session] += rng.choice((1, 1, 1, 2, 3))  # mostly adjacent turns, some gaps
        hits.append(_hit(rng, len(hits), session=session, turn=turns[session], kind=kind))
        return hits[-1]

    working = [make("now") for _ in range(rng.choice((0, 0, 1, 3)))]
    recalled = [make(rng.choice(sessions)) for _ in range(rng.choice((0, 1, 5, 12, 40, 80)))]
    rng.shuffle(recalled)
    summaries = [make(rng.choice(sessions), "summary") for _ in range(rng.choice((0, 0, 1, 2)))]
    if hits and rng.random() < 0.2:  # a memory in two tiers is shown once
        summaries.append(rng.choice(hits))
    return {"working": working, "recalled": recalled, "summaries": summaries,
            "style": STYLES[seed % 3], "budget": rng.choice(BUDGETS)}


def outcome(case: dict[str, Any]) -> dict[str, Any]:
    ctx = build_context_block(case["working"], case["recalled"], case["summaries"], style=case["style"],
                              budget=case["budget"], count=COUNTER.count)
    return {"sha256": hashlib.sha256(ctx.text.encode()).hexdigest(), "tokens": ctx.tokens,
            "memories": [m.node.id for m in ctx.memories], "dropped": [m.node.id for m in ctx.dropped]}


@pytest.fixture(scope="module")
def golden() -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads(GOLDEN.read_text(encoding="utf-8"))
    return data


@pytest.mark.parametrize("seed", range(CASES))
def test_context_block_matches_the_recorded_output(golden: list[dict[str, Any]], seed: int) -> None:
    assert outcome(make_case(seed)) == golden[seed]


def test_the_golden_cases_cover_every_path(golden: list[dict[str, Any]]) -> None:
    cases = [make_case(seed) for seed in range(CASES)]
    assert {c["style"] for c in cases} == set(STYLES)
    assert any(g["tokens"] == 0 for g in golden) and any(g["tokens"] > 1000 for g in golden)
    assert any(g["dropped"] and g["memories"] for g in golden)
    assert sum(g["tokens"] >= c["budget"] - 2 and c["budget"] > 0 for g, c in zip(golden, cases, strict=True)) > 10


if __name__ == "__main__":  # regenerate (only when an output change is intended)
    GOLDEN.parent.mkdir(exist_ok=True)
    rows = (json.dumps(outcome(make_case(s)), separators=(",", ":")) for s in range(CASES))
    GOLDEN.write_text("[\n" + ",\n".join(rows) + "\n]\n", encoding="utf-8")
