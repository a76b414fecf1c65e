"""Multi-hop evidence missed at 2,000 tokens: does it name a member of a category the question names?

A list question names a CATEGORY ("What are Kate's hobbies?", "What activities has Melanie done
with her family?") and its evidence often names only a MEMBER of it ("I've been painting a lot",
"I'm off to go swimming with the kids"). For every multi-hop question of a set this script builds
the 2,000-token timeline context (`AtlasConfig.archive()`, as ``locomo_recall.py``), takes the
evidence turns it misses, and reports for each:

- its rank in ``retrieve(top_k=1000)`` (a turn cut into parts: its best part);
- the question's category words (`_categories.category_words`: its plural nouns, and the noun
  after "kind(s)/type(s) of"), and the evidence word nearest one of them with MiniLM (each word
  embedded alone; `_categories.vocabulary_words`), with that cosine: ``near`` when it is at
  least ``--member`` (0.45);
- ``expanded``: whether the evidence holds one of the words the category path searched for
  (`_categories.expansion` over the conversation's vocabulary, `_categories.FLOOR`, ``--terms``
  words per category word, a word with a stem of the question's out; the path itself did not
  pay and is not in the library: commit 6207af5 has it, with ``--weight`` rows here that rank
  and pack with it);
- its rank among all the conversation's memories under three query-side bridges, each scored
  without the atlas (so the figures say what a lever could reach, not what it does):
  ``dense``: the cosine of the category word's own vector with each memory's vector;
  ``vocab``: each memory scored by the sum of the cosines of the expansion words it holds;
  ``speaker+dense``: the cosine with "<speaker> <category word>" for the speakers the question names.

    nice -n 5 python benchmarks/category_miss.py --sets dev,real_chat,split --json /tmp/catmiss.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _baselines import VectorCache
from _categories import FLOOR, category_words, expansion, vocabulary_words
from _locomo import CATEGORIES, default_data_path, load_locomo
from graph_kind_diagnosis import SETS
from locomo_recall import NOW, _CachedEmbedder, embed_all, in_full, ingest

from shared_core import AtlasConfig, ElasticMemoryAtlas, ManualClock, MiniLMEmbedder, TiktokenCounter
from shared_core.store.terms import index_terms, query_stems


def _rank_of(order: Sequence[int], targets: set[int]) -> int | None:
    for r, i in enumerate(order):
        if i in targets:
            return r + 1
    return None


def run_set(name: str, conversations: Sequence[Any], pool: Sequence[Any], cache: VectorCache, *,
            member: float, terms: int) -> list[dict[str, Any]]:
    convs = [SETS[name](c, pool) for c in conversations]
    embed_all(convs, cache, progress=False)
    counter = TiktokenCounter()
    out: list[dict[str, Any]] = []
    for conv in convs:
        atlas = ElasticMemoryAtlas(config=AtlasConfig.archive(), embedder=_CachedEmbedder(cache),
                                   token_counter=counter, clock=ManualClock(NOW))
        dia_of = ingest(atlas, conv, cache)
        texts = [t.content for t in conv.turns]
        vectors = cache.embed(texts)
        turn_words = [sorted(vocabulary_words(t)) for t in texts]
        vocab = sorted({w for ws in turn_words for w in ws})
        vocab_vec = cache.embed(vocab)
        vindex = {w: i for i, w in enumerate(vocab)}
        parts: dict[str, set[int]] = {}
        for i, t in enumerate(conv.turns):
            if t.dia_id:
                parts.setdefault(t.dia_id, set()).add(i)
        index_of = {nid: i for i, nid in enumerate(dia_of)}  # node id -> turn index (insertion order)
        speakers = sorted({t.speaker for t in conv.turns})
        for q in conv.questions:
            if CATEGORIES[q.category] != "multi-hop":
                continue
            ctx = atlas.build_context(q.question, namespace=conv.sample_id, token_budget=2000, style="timeline",
                                      reinforce=False)
            found = in_full(ctx, dia_of)
            missed = sorted(e for e in q.evidence if e not in found and e in parts)
            if not missed:
                continue
            hits = atlas.retrieve(q.question, namespace=conv.sample_id, top_k=1000, reinforce=False)
            order = [index_of[h.node.id] for h in hits]
            cats = category_words(q.question)
            cat_vec = cache.embed(cats) if cats else np.zeros((0, vectors.shape[1]), np.float32)
            named = [s for s in speakers if s.lower() in q.question.lower()]
            sims = cat_vec @ vocab_vec.T if cats else np.zeros((0, len(vocab)))
            best_sim = sims.max(axis=0) if cats else np.zeros(len(vocab))
            asked = set(query_stems(q.question))
            expanded = expansion(cat_vec, vocab, vocab_vec, terms=terms, floor=FLOOR,
                                 keep=lambda w, asked=asked: asked.isdisjoint(index_terms(w))) if cats else {}
            vocab_score = np.array([sum(expanded.get(w, 0.0) for w in ws) for ws in turn_words])
            dense = (cat_vec @ vectors.T).max(axis=0) if cats else np.zeros(len(texts))
            sp = cache.embed([f"{s} {c}" for s in named for c in cats]) if cats and named else None
            sp_dense = (sp @ vectors.T).max(axis=0) if sp is not None else dense
            rank_dense = list(np.argsort(-dense, kind="stable"))
            rank_vocab = list(np.argsort(-vocab_score, kind="stable"))
            rank_sp = list(np.argsort(-sp_dense, kind="stable"))
            for e in missed:
                targets = parts[e]
                words = sorted({w for i in targets for w in turn_words[i]})
                if cats and words:
                    ws = np.array([best_sim[vindex[w]] for w in words])
                    j = int(np.argmax(ws))
                    near, near_sim = words[j], float(ws[j])
                else:
                    near, near_sim = "", 0.0
                text = " / ".join(texts[i] for i in sorted(targets))
                out.append({
                    "set": name, "conv": conv.sample_id, "question": q.question, "evidence": e, "text": text[:200],
                    "categories": cats, "near": near, "near_sim": round(near_sim, 3), "member": near_sim >= member,
                    "expanded": sorted(set(words) & expanded.keys()),
                    "rank": _rank_of(order, targets),
                    "rank_dense": _rank_of(rank_dense, targets),
                    "rank_vocab": _rank_of(rank_vocab, targets) if vocab_score[list(targets)].max() > 0 else None,
                    "rank_speaker_dense": _rank_of(rank_sp, targets), "memories": len(texts)})
    return out


def _bucket(rank: int | None) -> str:
    if rank is None:
        return "none"
    for edge in (20, 50, 100, 200, 400):
        if rank <= edge:
            return f"<= {edge}"
    return "> 400"


def report(rows: Sequence[dict[str, Any]]) -> str:
    out: list[str] = []
    for name in dict.fromkeys(r["set"] for r in rows):
        mine = [r for r in rows if r["set"] == name]
        with_cat = [r for r in mine if r["categories"]]
        members = [r for r in with_cat if r["member"]]
        expanded = [r for r in with_cat if r["expanded"]]
        out.append(f"## {name}: {len(mine)} multi-hop evidence turns missed at 2,000 tokens; {len(with_cat)} of "
                   f"questions with a category word; {len(members)} hold a word near one (cosine >= the "
                   f"floor); {len(expanded)} hold a word the category path searches for")
        buckets = ("<= 20", "<= 50", "<= 100", "<= 200", "<= 400", "> 400", "none")
        out.append("| rank by | " + " | ".join(buckets) + " |")
        out.append("|---|" + "---:|" * len(buckets))
        for label, key, group in (("atlas, all missed", "rank", mine), ("atlas, members", "rank", members),
                                  ("category word's vector, members", "rank_dense", members),
                                  ("speaker + category vector, members", "rank_speaker_dense", members),
                                  ("vocabulary expansion, members", "rank_vocab", members),
                                  ("atlas, holding a searched word", "rank", expanded),
                                  ("vocabulary expansion, holding a searched word", "rank_vocab", expanded)):
            counts = [sum(_bucket(r[key]) == b for r in group) for b in buckets]
            out.append(f"| {label} ({len(group)}) | " + " | ".join(map(str, counts)) + " |")
        out.append("")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(default_data_path()))
    parser.add_argument("--conversations")
    parser.add_argument("--sets", default="dev")
    parser.add_argument("--member", type=float, default=0.45)
    parser.add_argument("--terms", type=int, default=8, help="words per category word")
    parser.add_argument("--json")
    parser.add_argument("--load")
    parser.add_argument("--show", action="store_true", help="print every missed turn")
    args = parser.parse_args(argv)
    if args.load:
        rows = json.loads(Path(args.load).read_text())
    else:
        pool = load_locomo(args.data)
        wanted = args.conversations.split(",") if args.conversations else None
        conversations = load_locomo(args.data, conversations=wanted) if wanted else pool
        cache = VectorCache(MiniLMEmbedder())
        rows = []
        for name in args.sets.split(","):
            start = time.perf_counter()
            rows += run_set(name, conversations, pool, cache, member=args.member, terms=args.terms)
            print(f"{name}: {time.perf_counter() - start:.0f} s", file=sys.stderr)
        if args.json:
            Path(args.json).write_text(json.dumps(rows, indent=1))
    if args.show:
        for r in rows:
            print(f"{r['set']} {r['conv']} | {r['question']} | {r['categories']} | {r['text'][:90]!r} | near "
                  f"{r['near']} {r['near_sim']} {r['expanded']} | rank {r['rank']} dense {r['rank_dense']} "
                  f"sp {r['rank_speaker_dense']} vocab {r['rank_vocab']}")
    print(report(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
