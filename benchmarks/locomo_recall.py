"""Evidence recall on LoCoMo: Elastic Atlas against the baselines, on the same embedder, no LLM.

    python benchmarks/locomo_recall.py --data ../shared/data/locomo/locomo_dev.json
    python benchmarks/locomo_recall.py --limit 1 --no-frameworks          # a quick run
    python benchmarks/locomo_recall.py --plot benchmarks/locomo_recall.png
    python benchmarks/locomo_recall.py --cv      # leave-one-conversation-out (see _cv.py)

Each turn is one memory (``"<speaker>: <text>"`` plus ``" [shares <caption>]"``, timestamped with
its session's date, ``dia_id`` in its metadata), one namespace per conversation, one session per
LoCoMo session, and the atlas runs with ``AtlasConfig.archive()`` (imported history: the clock
is "now", years later, so recency is off). Each question of categories 1-4 is asked with
``reinforce=False`` and no session (the question comes from outside the conversation):

- R@5, R@10, R@20: the fraction of gold evidence turns among `retrieve`'s top k;
- R@B tokens: the fraction of gold evidence turns shown whole (not cut) in the context that
  `build_context` renders for a budget of B tokens (cl100k_base, formatting included).

Baselines (see ``_baselines.py``) pack their budgets greedily in rank order, each turn rendered
``"<date>: <speaker>: <text>"`` as in the dataset README. Only ``conversation`` and ``qa`` are
read: never ``observation``, ``event_summary`` or ``session_summary``.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _baselines import BASELINES, FRAMEWORK_BASELINES, VectorCache, make_rankers, pack_lines
from _cv import GRIDS
from _locomo import (
    CATEGORIES,
    Conversation,
    config_overrides,
    default_data_path,
    load_locomo,
    recall_fraction,
    split_messages,
)

from shared_core import AtlasConfig, ElasticMemoryAtlas, ManualClock, MiniLMEmbedder, TiktokenCounter
from shared_core.text.static import StaticEmbedder

KS = (5, 10, 20)
TABLE_BUDGETS = (1000, 2000)
PLOT_BUDGETS = (250, 500, 1000, 1500, 2000, 3000, 4000)
STYLES = ("timeline", "bullet", "narrative")
LABELS = {
    "atlas": "Elastic Atlas",
    "recency": "recency buffer (last turns that fit)",
    "bm25": "BM25 (bm25s)",
    "dense": "dense cosine (MiniLM)",
    "hybrid": "hybrid dense + BM25 (RRF)",
    "langchain": "LangChain InMemoryVectorStore retriever",
    "llamaindex": "LlamaIndex VectorStoreIndex retriever",
}
NOW = 1_767_225_600.0  # 2026-01-01: the atlas's clock, long after the conversations


class _CachedEmbedder:
    """The atlas's embedder in the benchmark: vectors come from the run's cache (MiniLM)."""

    def __init__(self, cache: VectorCache) -> None:
        self.cache = cache
        self.dim = cache.embedder.dim

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return self.cache.embed(list(texts))


@dataclass
class Results:
    """Per method and metric, the (category, recall) of every question scored."""

    scores: dict[str, dict[str, list[tuple[int, float]]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(list)))
    timings: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    packed: dict[str, list[tuple[int, int]]] = field(default_factory=lambda: defaultdict(list))  # (memories, tokens)
    questions: int = 0
    skipped: int = 0
    conversations: int = 0
    turns: int = 0

    def add(self, method: str, metric: str, category: int, value: float) -> None:
        self.scores[method][metric].append((category, value))

    def mean(self, method: str, metric: str, category: int | None = None) -> float | None:
        values = [v for c, v in self.scores.get(method, {}).get(metric, []) if category in (None, c)]
        return float(np.mean(values)) if values else None


def _progress(iterable: Any = None, **kwargs: Any) -> Any:
    from tqdm.auto import tqdm

    return tqdm(iterable, **kwargs)


def embed_all(conversations: Sequence[Conversation], cache: VectorCache, *, progress: bool) -> None:
    """Embed every turn and question once, in batches, with a progress bar."""
    texts = list(dict.fromkeys([t.content for c in conversations for t in c.turns]
                               + [q.question for c in conversations for q in c.questions]))
    step = 256
    chunks = range(0, len(texts), step)
    bar = _progress(chunks, desc="embedding turns and questions", unit="batch", disable=not progress)
    for start in bar:
        cache.embed(texts[start:start + step])


def ingest(atlas: ElasticMemoryAtlas, conv: Conversation, cache: VectorCache) -> dict[str, str]:
    """Store the conversation's turns; returns node id -> dia_id.

    The atlas embeds them itself (its embedder reads ``cache``, `_CachedEmbedder`), so that the
    text its write path hands the model is what is measured: a turn whose speaker is only in
    the metadata is embedded as its labelled line (``robustness.py``'s ``no_labels``)."""
    del cache  # the atlas's embedder reads it
    items = [{"content": t.content, "session_id": f"session_{t.session}", "timestamp": t.timestamp,
              "metadata": {"dia_id": t.dia_id, "speaker": t.speaker} if t.dia_id else {"speaker": t.speaker}}
             for t in conv.turns]  # an empty dia_id: a message that is never evidence (robustness.py)
    nodes = atlas.add_memories(items, namespace=conv.sample_id, progress=False)
    return {n.id: t.dia_id for n, t in zip(nodes, conv.turns, strict=True)}


def run_benchmark(conversations: Sequence[Conversation], *, config: AtlasConfig | None = None,
                  styles: Sequence[str] = STYLES, budgets: Sequence[int] = TABLE_BUDGETS,
                  plot_budgets: Sequence[int] = (), baselines: Sequence[str] = BASELINES + FRAMEWORK_BASELINES,
                  progress: bool = True, embedder: Any = None, backend: str | None = None) -> Results:
    """Ingest each conversation, ask its questions of the atlas and of every baseline; ``backend``
    a FalkorDB URL (each conversation's namespace there is dropped afterwards).

    Every text is embedded once, through `VectorCache`. The time of one query's embedding is
    recorded unless the embedder keeps a text cache of its own (a ``cache_size`` above 0; the
    default MiniLM here has it off), so that it times a model call, not a cache hit."""
    config = config or AtlasConfig.archive()
    embedder = embedder or MiniLMEmbedder(cache_size=0)
    cache = VectorCache(embedder)
    counter = TiktokenCounter()
    count = functools.lru_cache(maxsize=None)(counter.count)
    embed_all(conversations, cache, progress=progress)
    results = Results(conversations=len(conversations))
    total = sum(len(c.questions) for c in conversations)
    bar = _progress(total=total, desc="asking", unit="q", disable=not progress)
    for conv in conversations:
        results.skipped += conv.skipped
        results.turns += len(conv.turns)
        bar.set_postfix_str(f"{conv.sample_id}: ingesting")
        atlas = ElasticMemoryAtlas(config=config, embedder=_CachedEmbedder(cache), token_counter=counter,
                                   clock=ManualClock(NOW), backend=backend)
        for ns in list(atlas.backend.namespaces()) if backend else ():  # a previous run's, interrupted
            atlas.backend.drop(ns)
        dia_of = ingest(atlas, conv, cache)
        vectors = cache.embed([t.content for t in conv.turns])
        rankers = make_rankers(conv, vectors, cache, names=baselines)
        lines = [t.dated for t in conv.turns]
        bar.set_postfix_str(conv.sample_id)
        for q in conv.questions:
            _ask_atlas(atlas, conv, q, dia_of, results, styles=styles, budgets=budgets,
                       plot_budgets=plot_budgets, embedder=embedder)
            qvec = cache.embed([q.question])[0]
            for name, rank in rankers.items():
                ranking = rank(q.question, qvec)
                dias = [conv.turns[i].dia_id for i in ranking]
                for k in KS:
                    results.add(name, f"R@{k}", q.category, recall_fraction(q.evidence, dias[:k]))
                for b in sorted({*budgets, *plot_budgets}):
                    packed = pack_lines(ranking, lines, b, count)
                    if b == 2000:
                        used = count("\n".join(lines[i] for i in packed)) if packed else 0
                        results.packed[name].append((len(packed), used))
                    results.add(name, f"R@{b}tok", q.category,
                                recall_fraction(q.evidence, [conv.turns[i].dia_id for i in packed]))
            results.questions += 1
            bar.update(1)
    bar.close()
    return results


def _ask_atlas(atlas: ElasticMemoryAtlas, conv: Conversation, q: Any, dia_of: dict[str, str], results: Results,
               *, styles: Sequence[str], budgets: Sequence[int], plot_budgets: Sequence[int], embedder: Any) -> None:
    start = time.perf_counter()
    hits = atlas.retrieve(q.question, namespace=conv.sample_id, top_k=max(KS), reinforce=False)
    results.timings["retrieve"].append(time.perf_counter() - start)
    if not getattr(embedder, "cache_size", 0):  # a model call, as a live query pays (the atlas used the cache)
        start = time.perf_counter()
        embedder.embed([q.question])
        results.timings["embed"].append(time.perf_counter() - start)
    found = [dia_of[h.node.id] for h in hits]
    for k in KS:
        results.add("atlas", f"R@{k}", q.category, recall_fraction(q.evidence, found[:k]))
    for style in styles:
        for b in sorted({*budgets, *(plot_budgets if style == "timeline" else ())}):
            start = time.perf_counter()
            ctx = atlas.build_context(q.question, namespace=conv.sample_id, token_budget=b, style=style,
                                      reinforce=False)
            if style == "timeline" and b == 2000:
                results.timings["build_context"].append(time.perf_counter() - start)
                results.packed["atlas"].append((len(ctx.memories), ctx.tokens))
            assert ctx.tokens <= b, (ctx.tokens, b)
            results.add(f"atlas:{style}", f"R@{b}tok", q.category, recall_fraction(q.evidence, in_full(ctx, dia_of)))


def in_full(ctx: Any, dia_of: dict[str, str]) -> set[str]:
    """The dia_ids of the memories a context shows whole: its memories whose squeezed content,
    its speaker's label aside (a timeline shows a message that follows one of its speaker
    without the label), is in its text (a cut one is not). A turn cut into parts
    (``robustness.py``'s ``split_turns``) is found when any of its parts is."""
    out = set()
    for m in ctx.memories:
        text = " ".join(m.node.content.split())
        who = m.node.metadata.get("speaker")
        if isinstance(who, str) and who and text.casefold().startswith(who.casefold() + ":"):
            text = text[len(who) + 1:].strip()
        if text in ctx.text:
            out.add(dia_of[m.node.id])
    return out


# -- reporting ------------------------------------------------------------------------------------
def _fmt(value: float | None) -> str:
    return "" if value is None else f"{value:.3f}"


def _rows(results: Results, category: int | None, styles: Sequence[str], budgets: Sequence[int]) -> list[str]:
    metrics = [f"R@{k}" for k in KS] + [f"R@{b}tok" for b in budgets]
    head = "| method | " + " | ".join(f"R@{k}" for k in KS) + " | " + " | ".join(
        f"R@{b} tok" for b in budgets) + " |"
    lines = [head, "|---|" + "---:|" * len(metrics)]
    for style in styles:
        cells = [_fmt(results.mean("atlas", m, category)) for m in metrics[:len(KS)]]
        cells += [_fmt(results.mean(f"atlas:{style}", m, category)) for m in metrics[len(KS):]]
        lines.append(f"| **{LABELS['atlas']}** ({style}) | " + " | ".join(cells) + " |")
    for name in results.scores:
        if name.startswith("atlas"):
            continue
        cells = [_fmt(results.mean(name, m, category)) for m in metrics]
        lines.append(f"| {LABELS.get(name, name)} | " + " | ".join(cells) + " |")
    return lines


def markdown(results: Results, *, styles: Sequence[str] = STYLES, budgets: Sequence[int] = TABLE_BUDGETS) -> str:
    """The report: overall and per-category tables, question counts and timings."""
    counts = defaultdict(int)
    for cat, _ in results.scores["atlas"]["R@5"]:
        counts[cat] += 1
    out = [f"LoCoMo evidence recall: {results.conversations} conversation(s), {results.turns} turns, "
           f"{results.questions} questions scored (categories 1-4), {results.skipped} skipped "
           "(no evidence that names a turn).", "", f"### Overall ({results.questions} questions)", ""]
    out += _rows(results, None, styles, budgets)
    for cat, name in CATEGORIES.items():
        if counts.get(cat):
            out += ["", f"### {name} (category {cat}, {counts[cat]} questions)", ""]
            out += _rows(results, cat, styles, budgets)
    if results.packed.get("atlas") and results.packed.get("hybrid"):
        out += ["", "### What fits in 2,000 tokens", "", "| method | memories per context | tokens used |",
                "|---|---:|---:|"]
        for name in ("atlas", "hybrid"):
            n, used = np.mean(results.packed[name], axis=0)
            label = f"**{LABELS['atlas']}** (timeline)" if name == "atlas" else LABELS[name]
            out.append(f"| {label} | {n:.1f} | {used:.0f} |")
    t = {k: 1000 * float(np.mean(v)) for k, v in results.timings.items() if v}
    if t:
        embed = t.get("embed")  # None: the embedder had a text cache, so the call was not timed
        calls = [("`retrieve` (top 20)", "retrieve"), ("`build_context` (2,000 tokens, timeline)", "build_context")]
        if embed is None:
            out += ["", "### Mean query time (ms)", "", "| call | without the embedding call |", "|---|---:|"]
            out += [f"| {label} | {t[key]:.1f} |" for label, key in calls if key in t]
        else:
            out += ["", "### Mean query time (ms)", "", "| call | without the embedding call | with it |",
                    "|---|---:|---:|"]
            out += [f"| {label} | {t[key]:.1f} | {t[key] + embed:.1f} |" for label, key in calls if key in t]
            out.append(f"\nThe embedding call (one question, a model call: no text cache in the way) "
                       f"took {embed:.1f} ms on average.")
    return "\n".join(out)


def plot(results: Results, budgets: Sequence[int], path: str) -> None:
    """Recall against the token budget for the memory (timeline style) and each baseline."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5), dpi=120)
    for name in results.scores:
        xs = [b for b in budgets if results.mean(name, f"R@{b}tok") is not None]
        if len(xs) < len(budgets):  # bullet and narrative are measured at the table's budgets only
            continue
        ys = [results.mean(name, f"R@{b}tok") for b in xs]
        label = LABELS["atlas"] + f" ({name.split(':')[1]})" if name.startswith("atlas:") else LABELS.get(name, name)
        ax.plot(xs, ys, marker="o", linewidth=2.5 if name.startswith("atlas") else 1.5, label=label)
    ax.set_xlabel("context budget (cl100k_base tokens)")
    ax.set_ylabel("evidence recall")
    ax.set_title(f"LoCoMo evidence recall vs token budget ({results.questions} questions)")
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=str(default_data_path()), help="locomo_dev.json (default: %(default)s)")
    parser.add_argument("--conversations", help="comma-separated sample ids, e.g. conv-26,conv-30")
    parser.add_argument("--limit", type=int, help="only the first N conversations")
    parser.add_argument("--plot", metavar="FILE.png", help="draw recall vs token budget (250 to 4,000 tokens)")
    parser.add_argument("--styles", default=",".join(STYLES), help="context styles to measure (default: all)")
    parser.add_argument("--no-frameworks", action="store_true", help="skip the LangChain and LlamaIndex baselines")
    parser.add_argument("--config", default="archive", choices=["archive", "default", "rrf"],
                        help="the AtlasConfig preset (default: archive, for imported history)")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                        help="override an AtlasConfig field for an ablation, e.g. --set graph_hops=0")
    parser.add_argument("--cv", action="store_true", help="leave-one-conversation-out over the grid of "
                        "_cv.GRID: the fitted and the cross-validated tables, and the ablations (timeline style)")
    parser.add_argument("--grid", default="full", choices=list(GRIDS),
                        help="--cv's grid: _cv.GRIDS (full: 48 points; speaker: the speaker path's; "
                        "neighbours: context windows; seeds: the walk's seeds; fusion, fusion_fine, fusion_scale: the "
                        "fusion's weights; speaker_lists, speaker_lists_wide: the speaker path's list factor)")
    parser.add_argument("--json", metavar="FILE", help="also write every mean to a JSON file")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    parser.add_argument("--compute", default="int8", choices=["fp32", "int8"],
                        help="MiniLMEmbedder(compute=...): the model's matmuls (default: %(default)s)")
    parser.add_argument("--static", metavar="TABLE.npz", help="StaticEmbedder(table=...) instead of MiniLM: a "
                        "table written by scripts/distill_static.py (--compute is then ignored)")
    parser.add_argument("--backend", metavar="URL", help="the atlas on a FalkorDB server, e.g. "
                        "falkordb://127.0.0.1:6379?prefix=locomo: (its namespaces under the prefix are dropped)")
    parser.add_argument("--split-messages", action="store_true", help="each turn cut into one message per "
                        "sentence (a proxy for chats of short messages; see _locomo.split_messages)")
    args = parser.parse_args(argv)

    if not Path(args.data).exists():
        parser.error(f"no data at {args.data}; see ../shared/data/locomo/README.md")
    conversations = load_locomo(args.data, limit=args.limit,
                                conversations=args.conversations.split(",") if args.conversations else None)
    if args.split_messages:
        conversations = [split_messages(c) for c in conversations]
    styles = tuple(s for s in args.styles.split(",") if s)
    config = {"archive": AtlasConfig.archive, "default": AtlasConfig.default,
              "rrf": lambda: AtlasConfig.archive(fusion="rrf", vector_weight=1.0, keyword_weight=1.0)}[args.config]()
    if args.set:
        config = config.replace(**config_overrides(args.set))
    if args.cv:
        return _cross_validate(conversations, config, quiet=args.quiet, grid=args.grid)
    names = BASELINES if args.no_frameworks else BASELINES + FRAMEWORK_BASELINES
    plot_budgets = PLOT_BUDGETS if args.plot else ()
    started = time.perf_counter()
    results = run_benchmark(conversations, config=config, styles=styles, plot_budgets=plot_budgets,
                            baselines=names, progress=not args.quiet, backend=args.backend,
                            embedder=StaticEmbedder(table=args.static) if args.static
                            else MiniLMEmbedder(compute=args.compute, cache_size=0))
    print(markdown(results, styles=styles))
    print(f"\n(config preset: {args.config}{''.join(' --set ' + x for x in args.set)}; "
          f"{'static ' + args.static if args.static else 'compute ' + args.compute}; "
          f"total run time {time.perf_counter() - started:.0f} s)")
    if args.plot:
        plot(results, PLOT_BUDGETS, args.plot)
        print(f"plot written to {args.plot}")
    if args.json:
        means = {m: {metric: results.mean(m, metric) for metric in metrics}
                 for m, metrics in results.scores.items()}
        Path(args.json).write_text(json.dumps({"means": means, "questions": results.questions,
                                               "skipped": results.skipped}, indent=1))
    return 0


def _cross_validate(conversations: Sequence[Conversation], config: AtlasConfig, *, quiet: bool,
                    grid: str = "full") -> int:
    from _cv import ablations, cv_tables, grid_points, run_grid

    points, levers = GRIDS[grid]

    started = time.perf_counter()
    embedder = MiniLMEmbedder()
    cache = VectorCache(embedder)
    embed_all(conversations, cache, progress=not quiet)
    bar = _progress(total=len(conversations) * len(grid_points(points)), desc="grid points x conversations",
                    disable=quiet)
    scores = run_grid(conversations, base=config, cache=cache, embedder=embedder, now=NOW, progress=bar, grid=points)
    bar.close()
    print(cv_tables(scores))
    print()
    print(ablations(scores, levers))
    print(f"\n(total run time {time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
