"""The packing and rendering half of ``build_context``, timed alone: `build_context_block` on the
inputs the atlas really hands it.

    .venv/bin/python benchmarks/context_block.py                  # p50 per case, ~1 min
    .venv/bin/python benchmarks/context_block.py --profile        # pyinstrument per case
    .venv/bin/python benchmarks/context_block.py --atlas          # also atlas.build_context vs retrieve

Cases: the latency benchmark's 10k synthetic corpus (``latency.py``) with its call
(``bullet``, 400 tokens, ~40 recalled memories) and the LoCoMo budget of 2,000 tokens
(``timeline`` and ``narrative``, ~200 recalled memories); and, when the LoCoMo file is present,
its first conversation with `HashingEmbedder` (real turns over many days and sessions; the model
is not the point) at 2,000 tokens. The inputs are captured once by wrapping `build_context_block`
during ``atlas.build_context(..., reinforce=False)``, then replayed with one counter per case, as
an atlas keeps one counter for its lifetime. Each replay is timed cold (the first pass, no memory
counted yet by this counter: as ``latency.py``, which asks each query once of a fresh atlas)
and warm (later passes: the memories again, as when the same memories come back for other
queries; each block is still counted afresh, as blocks are not cached).

Times are the CPU time of the calling thread (``time.thread_time_ns``): the block is
single-threaded Python, and on a shared machine other jobs then do not count; ``--wall`` for
wall-clock time. ``--atlas`` builds a fresh 10k atlas and, per query, times ``retrieve`` (top
10) then ``build_context`` (bullet, 400 tokens), and `build_context_block` inside it: that is
the block as the benchmark meets it, right after recall has run (colder CPU caches than a replay).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import shared_core.atlas as atlas_module
from shared_core import AtlasConfig, ElasticMemoryAtlas, HashingEmbedder, ManualClock, TiktokenCounter
from shared_core.engine.context import build_context_block
from shared_core.values.model import ScoredMemory

Inputs = tuple[list[ScoredMemory], list[ScoredMemory], list[ScoredMemory]]
CASES = (("bullet", 400), ("timeline", 2000), ("narrative", 2000))


def capture(atlas: ElasticMemoryAtlas, queries: Sequence[str], namespace: str, style: str, budget: int,
            session_id: str | None = None) -> list[Inputs]:
    """The (working, recalled, summaries) that `build_context_block` receives for each query."""
    seen: list[Inputs] = []
    original = atlas_module.build_context_block

    def spy(working: Sequence[ScoredMemory], recalled: Sequence[ScoredMemory],
            summaries: Sequence[ScoredMemory], **kwargs: Any) -> Any:
        seen.append((list(working), list(recalled), list(summaries)))
        return original(working, recalled, summaries, **kwargs)

    atlas_module.build_context_block = spy  # type: ignore[assignment]
    try:
        for q in queries:
            atlas.build_context(q, namespace=namespace, token_budget=budget, style=style, reinforce=False,
                                session_id=session_id)
    finally:
        atlas_module.build_context_block = original
    return seen


CLOCK: Callable[[], int] = time.thread_time_ns


def replay(inputs: Sequence[Inputs], style: str, budget: int, count: Callable[[str], int]) -> list[float]:
    """Seconds per `build_context_block` call over ``inputs``."""
    out = []
    for working, recalled, summaries in inputs:
        t0 = CLOCK()
        build_context_block(working, recalled, summaries, style=style, budget=budget, count=count)
        out.append((CLOCK() - t0) / 1e9)
    return out


def in_atlas(n: int, queries: int) -> str:
    """p50 (ms) of retrieve, build_context and the block inside it, on a fresh atlas, per query."""
    from latency import TOP_K, build_atlas, make_corpus

    corpus, _ = make_corpus(n, queries)
    atlas, _, _ = build_atlas(corpus)
    q = corpus.queries
    block: list[float] = []
    original = atlas_module.build_context_block

    def timed_block(*args: Any, **kwargs: Any) -> Any:
        t0 = CLOCK()
        out = original(*args, **kwargs)
        block.append((CLOCK() - t0) / 1e9)
        return out

    calls: dict[str, Callable[[int], object]] = {
        "retrieve": lambda i: atlas.retrieve(q[i], namespace="bench", top_k=TOP_K),
        "build_context": lambda i: atlas.build_context(q[i], namespace="bench", token_budget=400, style="bullet")}
    times: dict[str, list[float]] = {name: [] for name in calls}
    atlas_module.build_context_block = timed_block  # type: ignore[assignment]
    try:
        for i in range(len(q)):
            for name, call in calls.items():
                t0 = CLOCK()
                call(i)
                times[name].append((CLOCK() - t0) / 1e9)
    finally:
        atlas_module.build_context_block = original

    def ms(v: list[float]) -> str:
        return f"{statistics.median(v) * 1e3:.3f}"

    return (f"atlas at {n:,} ({len(q)} queries, each once): retrieve (top {TOP_K}) p50 {ms(times['retrieve'])} ms, "
            f"build_context (bullet/400) p50 {ms(times['build_context'])} ms, "
            f"build_context_block inside it p50 {ms(block)} ms")


def synthetic_cases(n: int, queries: int) -> tuple[ElasticMemoryAtlas, list[str], dict[str, list[Inputs]]]:
    """The captured inputs of each case on the latency benchmark's corpus (and its atlas, queries)."""
    from latency import build_atlas, make_corpus

    corpus, _ = make_corpus(n, queries)
    atlas, _, _ = build_atlas(corpus)
    q = corpus.queries
    return atlas, q, {f"10k {style}/{budget}": capture(atlas, q, "bench", style, budget)
                      for style, budget in CASES}


def locomo_cases(queries: int) -> dict[str, list[Inputs]]:
    from _locomo import default_data_path, load_locomo

    path = default_data_path()
    if not path.exists():
        return {}
    conv = load_locomo(path, limit=1)[0]
    atlas = ElasticMemoryAtlas(config=AtlasConfig.archive(), embedder=HashingEmbedder(),
                               clock=ManualClock(2_000_000_000.0))
    atlas.add_memories([{"content": t.content, "session_id": f"session_{t.session}", "timestamp": t.timestamp}
                        for t in conv.turns], namespace="c", progress=False)
    qs = [q.question for q in conv.questions][:queries]
    return {f"LoCoMo {style}/2000": capture(atlas, qs, "c", style, 2000) for style in ("timeline", "narrative")}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--passes", type=int, default=5, help="warm passes over the captured inputs")
    parser.add_argument("--profile", action="store_true", help="pyinstrument of the warm passes, per case")
    parser.add_argument("--atlas", action="store_true",
                        help="also p50 of atlas.build_context (bullet/400) and atlas.retrieve (top 10)")
    parser.add_argument("--wall", action="store_true", help="wall-clock time instead of the thread's CPU time")
    args = parser.parse_args(argv)
    global CLOCK
    if args.wall:
        CLOCK = time.perf_counter_ns

    _, _, cases = synthetic_cases(args.size, args.queries)
    cases |= locomo_cases(args.queries)
    print("| case | calls | recalled (mean) | cold p50 ms | warm p50 ms | warm p95 ms |\n|---|---|---|---|---|---|")
    for name, inputs in cases.items():
        _, style_budget = name.split(" ", 1)
        style, budget = style_budget.split("/")
        count = TiktokenCounter().count  # one counter per case, as one atlas
        cold = replay(inputs, style, int(budget), count)
        warm = [s for _ in range(args.passes) for s in replay(inputs, style, int(budget), count)]
        mean = statistics.fmean(len(r) for _, r, _ in inputs)
        warm_ms = sorted(s * 1e3 for s in warm)
        print(f"| {name} | {len(inputs)} | {mean:.0f} | {statistics.median(cold) * 1e3:.3f} | "
              f"{statistics.median(warm_ms):.3f} | {warm_ms[int(0.95 * (len(warm_ms) - 1))]:.3f} |")
        if args.profile:
            from pyinstrument import Profiler

            profiler = Profiler(interval=0.0001)
            profiler.start()
            for _ in range(args.passes):
                replay(inputs, style, int(budget), count)
            profiler.stop()
            print(profiler.output_text(unicode=False, show_all=False))
    if args.atlas:
        print("\n" + in_atlas(args.size, args.queries))

if __name__ == "__main__":
    main()
