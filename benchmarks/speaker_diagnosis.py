"""Where does the multi-hop evidence the atlas misses rank, and would a decomposed query reach it?

For every multi-hop evidence turn of LoCoMo dev that is not in the 2,000-token context of
`AtlasConfig.archive()` with the speaker path off, the position (1 = first) of that turn:

- ``atlas``: in `retrieve` (top 600);
- ``dense``: by the question's cosine, over every turn;
- ``dense, speaker's turns``: the same, over the turns of the speaker who said it;
- ``names out, all turns`` / ``names out, speaker's turns``: by the cosine of the question with the
  conversation's speaker names taken out (`shared_core.formulas.subqueries.strip_names`);
- ``session``: the position of its session when sessions are ranked by their best turn's score
  in `retrieve` (session-level retrieval).

    python benchmarks/speaker_diagnosis.py --data ../shared/data/locomo/locomo_dev.json
"""

from __future__ import annotations

import argparse
import re
import statistics
from collections import defaultdict

import numpy as np
from _baselines import VectorCache
from _locomo import default_data_path, load_locomo
from locomo_recall import NOW, _CachedEmbedder, ingest

from shared_core import AtlasConfig, ElasticMemoryAtlas, ManualClock, MiniLMEmbedder, TiktokenCounter
from shared_core.formulas.subqueries import strip_names

MISSING = 10**6


def _position(order: list[int], index: int) -> int:
    return order.index(index) + 1 if index in order else MISSING


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(default_data_path()))
    parser.add_argument("--conversations", help="comma-separated sample ids")
    args = parser.parse_args()
    conversations = load_locomo(args.data, conversations=args.conversations.split(",") if args.conversations
                                else None)
    cache, counter = VectorCache(MiniLMEmbedder(cache_size=0)), TiktokenCounter()
    config = AtlasConfig.archive(speaker_weight=0.0)
    found: dict[str, list[int]] = defaultdict(list)
    evidence = 0
    for conv in conversations:
        atlas = ElasticMemoryAtlas(config=config, embedder=_CachedEmbedder(cache), token_counter=counter,
                                   clock=ManualClock(NOW))
        dia_of = ingest(atlas, conv, cache)
        turns = conv.turns
        index = {t.dia_id: i for i, t in enumerate(turns)}
        vectors = cache.embed([t.content for t in turns])
        speakers = sorted({t.speaker for t in turns})
        for q in conv.questions:
            if q.category != 1:
                continue
            evidence += len(q.evidence)
            ctx = atlas.build_context(q.question, namespace=conv.sample_id, token_budget=2000, reinforce=False)
            missed = [d for d in q.evidence if " ".join(turns[index[d]].content.split()) not in ctx.text]
            if not missed:
                continue
            hits = atlas.retrieve(q.question, namespace=conv.sample_id, top_k=600, reinforce=False)
            ranked = [index[dia_of[h.node.id]] for h in hits]
            best: dict[int, float] = {}
            for h in hits:
                session = turns[index[dia_of[h.node.id]]].session
                best[session] = max(best.get(session, 0.0), h.score)
            sessions = sorted(best, key=lambda s: -best[s])
            named = [s for s in speakers if re.search(rf"\b{re.escape(s)}\b", q.question)]
            dense = [int(i) for i in np.argsort(-(vectors @ cache.embed([q.question])[0]), kind="stable")]
            stripped = strip_names(q.question, speakers)
            plain = [int(i) for i in np.argsort(-(vectors @ cache.embed([stripped])[0]), kind="stable")]
            for d in missed:
                i = index[d]
                own = turns[i].speaker
                found["atlas"].append(_position(ranked, i))
                found["dense"].append(_position(dense, i))
                found["dense, speaker's turns"].append(_position([j for j in dense if turns[j].speaker == own], i))
                found["names out, all turns"].append(_position(plain, i))
                found["names out, speaker's turns"].append(
                    _position([j for j in plain if turns[j].speaker == own], i))
                found["session"].append(_position(sessions, turns[i].session))
                found["said by a speaker the question names"].append(int(own in named))
    said = found.pop("said by a speaker the question names")
    print(f"{len(said)} of {evidence} multi-hop evidence turns missed at 2,000 tokens; "
          f"{sum(said)} said by a speaker the question names\n")
    print("| ranking | median position | in the first 50 | first 100 | first 200 |")
    print("|---|---:|---:|---:|---:|")
    for name, positions in found.items():
        if name == "session":
            continue
        shares = [sum(p <= n for p in positions) / len(positions) for n in (50, 100, 200)]
        print(f"| {name} | {statistics.median(positions):.0f} | " + " | ".join(f"{s:.2f}" for s in shares) + " |")
    positions = found["session"]
    shares = [sum(p <= n for p in positions) / len(positions) for n in (1, 3, 5)]
    print(f"\nits session by the best turn's score: median position {statistics.median(positions):.1f}; "
          f"first {shares[0]:.2f}, in the first 3 {shares[1]:.2f}, first 5 {shares[2]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
