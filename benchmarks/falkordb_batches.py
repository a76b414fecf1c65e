"""`add_memories` on FalkorDB by batch size: memories a second into a fresh namespace.

`latency.py --falkordb` writes its atlases in batches of 1,000 (two statements of the batch
write); an application often writes fewer at a time, which the backend sends as one statement
that also reserves the turns (`shared_core.store.falkordb.writes`, up to 512 memories). This
script writes `latency.make_corpus`'s memories (precomputed vectors, a session every 50, as
`latency.py` does) into a new namespace once per batch size and prints the rate of each, so that
two trees can be run in turn on one server:

    python scripts/falkordb.py start --dir .falkordb/bench --appendfsync everysec
    PYTHONPATH=. .venv/bin/python benchmarks/falkordb_batches.py --url URL --sizes 1000,500,250,100,10
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import latency

from shared_core import ElasticMemoryAtlas
from shared_core.values.clock import ManualClock


def rate(url: str, corpus: latency.Corpus, batch: int) -> float:
    """Memories a second for ``corpus`` written in batches of ``batch`` into a new namespace."""
    atlas = ElasticMemoryAtlas(embedder=corpus.embedder(), clock=ManualClock(1_700_000_000.0), backend=url)
    namespace = f"batches{batch}-{uuid.uuid4().hex[:8]}"
    start = time.perf_counter()
    for s in range(0, len(corpus.texts), batch):
        items = [{"content": text, "session_id": f"s{(s + j) // 50}"}
                 for j, text in enumerate(corpus.texts[s:s + batch])]
        atlas.add_memories(items, namespace=namespace, progress=False)
    return len(corpus.texts) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", required=True, help="a FalkorDB server's falkordb:// URL")
    parser.add_argument("--memories", type=int, default=4000, help="memories written per batch size")
    parser.add_argument("--sizes", default="1000,500,250,100,10", help="comma-separated batch sizes")
    args = parser.parse_args()
    corpus, _ = latency.make_corpus(args.memories, 10)
    print("| batch | memories a second |\n|---:|---:|")
    for batch in (int(s) for s in args.sizes.split(",")):
        print(f"| {batch:,} | {rate(args.url, corpus, batch):,.0f} |", flush=True)


if __name__ == "__main__":
    main()
