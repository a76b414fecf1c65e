"""Where the multi-hop evidence goes in a long chat (issue 24): ranked too low, packed out, or never a candidate.

For every question of the chosen categories, asked of `AtlasConfig.archive()` (timeline style)
under each perturbation of ``robustness.py``, each evidence turn's fate in the 2,000-token
context:

- ``shown``: in the context, whole;
- ``packed out``: among the memories `build_context` recalled (``context_candidates`` per token)
  but left out by the packing (the budget was spent before its turn);
- ``ranked out``: a hit of `retrieve` (top ``--depth``) below the context's recall;
- ``no candidate``: not among `retrieve`'s top ``--depth``.

and, for the evidence lost against ``none``, the hits ranked above it that the perturbation added
(``long``'s donor turns: no ``dia_id``), with the paths that found them. Prints a summary table and
writes the per-question rows to ``--json``.

    nice -n 5 python benchmarks/long_diagnosis.py --data ../shared/data/locomo/locomo_dev.json \
        --conversations conv-26,conv-30 --perturbations none,long
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _baselines import VectorCache
from _locomo import config_overrides, default_data_path, load_locomo
from locomo_recall import NOW, _CachedEmbedder, embed_all, in_full, ingest
from robustness import PERTURBATIONS

from shared_core import AtlasConfig, ElasticMemoryAtlas, ManualClock, MiniLMEmbedder, TiktokenCounter
from shared_core.engine.context import context_breadth

BUDGET = 2000


def _added_beside(turns: Sequence[Any]) -> set[str]:
    """The evidence ids (``dia_id``) with a turn the perturbation added (no ``dia_id``: ``long``'s
    donor turns, ``fillers``' backchannels) right before or after them in their session."""
    out = set()
    for i, t in enumerate(turns):
        if t.dia_id and any(0 <= j < len(turns) and not turns[j].dia_id and turns[j].session == t.session
                            for j in (i - 1, i + 1)):
            out.add(t.dia_id)
    return out


def _question_rows(atlas: ElasticMemoryAtlas, ns: str, q: Any, dia_of: dict[str, str], depth: int,
                   config: AtlasConfig, beside: set[str], budget: int = BUDGET) -> dict[str, Any]:
    ctx = atlas.build_context(q.question, namespace=ns, token_budget=budget, style="timeline", reinforce=False)
    shown = in_full(ctx, dia_of)
    breadth, _ = context_breadth(q.question, budget, config)
    # the context's own recall (top ``breadth``: a wider retrieve draws more candidates), then a
    # deeper one for the evidence below it
    hits = atlas.retrieve(q.question, namespace=ns, top_k=breadth, reinforce=False, explain=True)
    rank: dict[str, int] = {}
    parts: dict[str, Any] = {}  # evidence id -> its best hit (the fused relevance and the walk's boost)
    for i, h in enumerate(hits, start=1):
        rank.setdefault(dia_of[h.node.id], i)
        parts.setdefault(dia_of[h.node.id], h)
    if not q.evidence <= rank.keys():
        deep = atlas.retrieve(q.question, namespace=ns, top_k=depth, reinforce=False, explain=True)
        for i, h in enumerate(deep, start=1):
            if i > breadth:
                rank.setdefault(dia_of[h.node.id], i)
                parts.setdefault(dia_of[h.node.id], h)
    else:
        deep = hits
    lines = [m for m in ctx.memories]
    companions = sum(1 for m in lines if m.paths == ("neighbour",))
    donors = sum(1 for m in lines if not dia_of[m.node.id])
    recalled_ranks = sorted(rank.get(dia_of[m.node.id], 10**6) for m in lines if m.paths != ("neighbour",))
    evidence = []
    for e in sorted(q.evidence):
        r = rank.get(e)
        if e in shown:
            fate = "shown"
        elif r is None:
            fate = "no candidate"
        elif r <= breadth:
            fate = "packed out"
        else:
            fate = "ranked out"
        above = (hits if r is not None and r <= breadth else deep)[:r - 1 if r else None]
        donor_paths = Counter(p for h in above if not dia_of[h.node.id] for p in h.paths)
        hit = parts.get(e)
        evidence.append({"dia_id": e, "rank": r, "fate": fate, "donors_above": sum(
            1 for h in above if not dia_of[h.node.id]), "donor_paths": dict(donor_paths),
            "fused": None if hit is None else round(hit.components.get("fused", 0.0), 4),
            "boost": None if hit is None else round(hit.components.get("graph", 0.0), 4),
            "added_beside": e in beside})
    return {"question": q.question, "category": q.category, "breadth": breadth, "lines": len(lines),
            "companions": companions, "donor_lines": donors, "tokens": ctx.tokens,
            "last_packed_rank": recalled_ranks[-1] if recalled_ranks else None,
            "packed_recalled": len(recalled_ranks), "evidence": evidence}


def run(conversations: Sequence[Any], pool: Sequence[Any], names: Sequence[str], config: AtlasConfig,
        categories: set[int], depth: int) -> dict[str, list[dict[str, Any]]]:
    cache, counter = VectorCache(MiniLMEmbedder(cache_size=0)), TiktokenCounter()
    out: dict[str, list[dict[str, Any]]] = {}
    for name in names:
        perturbed = [PERTURBATIONS[name](c, pool) for c in conversations]
        embed_all(perturbed, cache, progress=False)
        rows = out[name] = []
        for conv in perturbed:
            atlas = ElasticMemoryAtlas(config=config, embedder=_CachedEmbedder(cache), token_counter=counter,
                                       clock=ManualClock(NOW))
            dia_of = ingest(atlas, conv, cache)
            beside = _added_beside(conv.turns)
            for q in conv.questions:
                if q.category in categories:
                    row = _question_rows(atlas, conv.sample_id, q, dia_of, depth, config, beside)
                    row["conversation"] = conv.sample_id
                    rows.append(row)
    return out


def _median(values: Any) -> str:
    known = [v for v in values if v is not None]
    return f"{statistics.median(known):.3f}" if known else "-"


def summary(out: dict[str, list[dict[str, Any]]]) -> str:
    head = ("| perturbation | questions | evidence | shown | packed out | ranked out | no candidate | "
            "median rank | lines (companions, donor) | last packed rank |")
    table = [head, "|---|" + "---:|" * (head.count("|") - 2)]
    for name, rows in out.items():
        ev = [e for r in rows for e in r["evidence"]]
        fates = Counter(e["fate"] for e in ev)
        ranks = [e["rank"] if e["rank"] else 10**6 for e in ev]
        lines = statistics.mean(r["lines"] for r in rows)
        comp = statistics.mean(r["companions"] for r in rows)
        donor = statistics.mean(r["donor_lines"] for r in rows)
        last = statistics.median(r["last_packed_rank"] or 0 for r in rows)
        table.append(f"| {name} | {len(rows)} | {len(ev)} | {fates['shown']} | {fates['packed out']} | "
                     f"{fates['ranked out']} | {fates['no candidate']} | {statistics.median(ranks):.0f} | "
                     f"{lines:.1f} ({comp:.1f}, {donor:.1f}) | {last:.0f} |")
    base = out.get("none", [])
    for name, rows in out.items():
        if name == "none" or not base:
            continue
        lost = []
        before: dict[tuple[str, str], dict[str, Any]] = {}
        for b, r in zip(base, rows, strict=True):  # the same questions in the same order (perhaps re-cased)
            was = {e["dia_id"]: e for e in b["evidence"] if e["fate"] == "shown"}
            for e in r["evidence"]:
                if e["dia_id"] in was and e["fate"] != "shown":
                    lost.append((r, e))
                    before[(r["conversation"], e["dia_id"])] = was[e["dia_id"]]
        if not lost:
            continue

        def was_then(r: dict[str, Any], e: dict[str, Any], before: dict[tuple[str, str], Any] = before) -> Any:
            return before[(r["conversation"], e["dia_id"])]

        fates = Counter(e["fate"] for _, e in lost)
        paths: Counter[str] = Counter()
        for _, e in lost:
            paths.update(e["donor_paths"])
        table.append(f"\n{name}: {len(lost)} evidence turns shown under none and lost here ({dict(fates)}); "
                     f"median rank {statistics.median(e['rank'] or 10**6 for _, e in lost):.0f}, "
                     f"median donors above {statistics.median(e['donors_above'] for _, e in lost):.0f}; "
                     f"paths of the donors above them: {dict(paths.most_common())}; "
                     f"{sum(e['added_beside'] for _, e in lost)} with an added turn beside them; "
                     f"median fused relevance {_median(was_then(r, e)['fused'] for r, e in lost)}"
                     f" -> {_median(e['fused'] for _, e in lost)}, walk boost "
                     f"{_median(was_then(r, e)['boost'] for r, e in lost)} -> {_median(e['boost'] for _, e in lost)}")
    return "\n".join(table)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(default_data_path()))
    parser.add_argument("--conversations", help="comma-separated sample ids")
    parser.add_argument("--perturbations", default="none,long")
    parser.add_argument("--categories", default="1", help="LoCoMo categories (1 = multi-hop)")
    parser.add_argument("--depth", type=int, default=400, help="how deep retrieve looks for the evidence")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE")
    parser.add_argument("--json", help="write the per-question rows here")
    args = parser.parse_args(argv)
    pool = load_locomo(args.data)
    wanted = args.conversations.split(",") if args.conversations else None
    conversations = load_locomo(args.data, conversations=wanted) if wanted else pool
    config = AtlasConfig.archive(**config_overrides(args.set))
    out = run(conversations, pool, args.perturbations.split(","), config,
              {int(c) for c in args.categories.split(",")}, args.depth)
    print(summary(out))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
