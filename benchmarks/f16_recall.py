"""recall@10 of an atlas's vector index against exact search on ``latency.py``'s synthetic corpus,
for each ``AtlasConfig.ann_vector_dtype``: the atlas is built as ``latency.py`` builds it and
searched as ``latency.bench_atlas`` does (top 10 of each query vector).

    .venv/bin/python benchmarks/f16_recall.py --sizes 10000,100000
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import latency

from shared_core import AtlasConfig, ElasticMemoryAtlas, ManualClock


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    print("| memories | dtype | lists | probes | recall@10 |\n|---|---|---|---|---|")
    for n in (int(s) for s in args.sizes.split(",")):
        corpus, _ = latency.make_corpus(n, args.queries)
        for dtype in ("float32", "float16"):
            atlas = ElasticMemoryAtlas(config=AtlasConfig(ann_vector_dtype=dtype), embedder=corpus.embedder(),
                                       clock=ManualClock(1_700_000_000.0))
            step = latency.batch_size(n)
            for s in range(0, n, step):
                atlas.add_memories([{"content": t, "session_id": f"s{(s + j) // 50}"}
                                    for j, t in enumerate(corpus.texts[s:s + step])], namespace="bench",
                                   progress=False)
            part = atlas.backend.partition("bench")
            assert part is not None
            index_ids = {node.id: node.content for node in part.graph.nodes()}
            found = [[int(index_ids[i].split(":")[0]) for i, _ in part.vectors.search(v, latency.TOP_K)]
                     for v in corpus.query_vectors]
            impl = part.vectors._impl  # type: ignore[attr-defined]
            print(f"| {n:,} | {dtype} | {impl.lists} | {impl.probes} | {latency.recall_at_k(found, corpus):.3f} |",
                  flush=True)


if __name__ == "__main__":
    main()
