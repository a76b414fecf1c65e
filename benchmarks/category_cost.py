"""What the category path costs (`shared_core.engine.categories`): writes, and the list question after them.

The path embeds nothing on write: the vocabulary is read from the namespace's memories at the
first list question after writes (a scan of `GraphStore.nodes` and one model call for the words
not seen before). This script measures, with the shipped MiniLM embedder and the in-process
backend, on the turns of LoCoMo dev conversations:

- ``add_memories`` throughput with the path off and on (memories/s, ``--rounds`` interleaved);
- a 2,000-token ``build_context`` for a list question, the first after the writes (with the path
  on: the vocabulary read and embedded) and the same again (nothing read), path off and on;
- the vocabulary's read alone at ``--scan`` memories (the words already embedded, one more
  memory written before each read): what every list question after a write pays.

    nice -n 5 python benchmarks/category_cost.py --data /work/shared/data/locomo/locomo_dev.json
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _locomo import Turn, default_data_path, load_locomo

from shared_core import AtlasConfig, ElasticMemoryAtlas, MiniLMEmbedder
from shared_core.engine.categories import VocabularyBook

QUESTION = "What activities has Melanie done with her family?"


def _items(turns: Sequence[Turn]) -> list[dict[str, object]]:
    return [{"content": t.content, "session_id": f"s{t.session}", "timestamp": t.timestamp} for t in turns]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(default_data_path()))
    parser.add_argument("--turns", type=int, default=300, help="turns written per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--scan", type=int, default=10_000, help="memories for the read-alone row")
    args = parser.parse_args(argv)
    convs = load_locomo(args.data)
    turns = [t for c in convs for t in c.turns]
    embedder = MiniLMEmbedder()
    embedder.embed(["warm up"])
    rates: dict[float, list[float]] = {0.0: [], 0.5: []}
    contexts: dict[str, list[float]] = {}
    for r in range(args.rounds):
        for j, weight in enumerate((0.0, 0.5) if r % 2 == 0 else (0.5, 0.0)):
            atlas = ElasticMemoryAtlas(config=AtlasConfig.archive(category_weight=weight), embedder=embedder)
            chunk = turns[(2 * r + j) * args.turns:(2 * r + j + 1) * args.turns]  # texts the model has not cached
            start = time.perf_counter()
            atlas.add_memories(_items(chunk), namespace="n")
            rates[weight].append(len(chunk) / (time.perf_counter() - start))
            for label in ("first after the writes", "again"):
                start = time.perf_counter()
                ctx = atlas.build_context(QUESTION, namespace="n", token_budget=2000, reinforce=False)
                contexts.setdefault(f"{'off' if weight == 0 else 'on'}, {label}", []).append(
                    (time.perf_counter() - start) * 1000)
                assert ctx.tokens <= 2000
    print("| row | value |\n|---|---:|")
    for weight, label in ((0.0, "off (the default)"), (0.5, "on (`category_weight=0.5`)")):
        print(f"| `add_memories` with MiniLM, category path {label}, memories/s (median of {args.rounds}) | "
              f"{statistics.median(rates[weight]):.1f} |")
    print(f"| throughput kept with the path on | {statistics.median(rates[0.5]) / statistics.median(rates[0.0]):.2f} |")
    for label, values in sorted(contexts.items()):
        print(f"| 2,000-token `build_context` of a list question, path {label}, ms (median) | "
              f"{statistics.median(values):.0f} |")
    # the read alone at --scan memories: words embedded once, then one write before each read
    atlas = ElasticMemoryAtlas(config=AtlasConfig.archive(category_weight=0.5), embedder=_Fixed(embedder.dim))
    base = [t.content for t in turns]
    atlas.add_memories([f"{base[i % len(base)]} ({i})" for i in range(args.scan)], namespace="n")
    part = atlas.backend.partition("n")
    assert part is not None
    book = VocabularyBook()
    start = time.perf_counter()
    vocab = book.of(part, embedder.embed)
    first = time.perf_counter() - start
    reads = []
    for i in range(5):
        atlas.add_memories([f"one more memory {i}"], namespace="n")
        start = time.perf_counter()
        book.of(part, embedder.embed)
        reads.append((time.perf_counter() - start) * 1000)
    print(f"| vocabulary of {args.scan:,} memories: {len(vocab.words):,} words; first read and embedding, s | "
          f"{first:.1f} |")
    print(f"| its read after one more write (words embedded), ms (median of 5) | {statistics.median(reads):.0f} |")
    return 0


class _Fixed:
    """A model whose vectors are random unit rows (the scan row's writes, not what is measured)."""

    def __init__(self, dim: int) -> None:
        import numpy as np

        self.dim = dim
        self._rng = np.random.default_rng(0)

    def embed(self, texts: Sequence[str]) -> Any:
        import numpy as np

        rows = self._rng.standard_normal((len(texts), self.dim)).astype(np.float32)
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)


if __name__ == "__main__":
    raise SystemExit(main())
