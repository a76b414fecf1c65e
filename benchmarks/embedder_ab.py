"""The default embedder end to end, old settings against new, interleaved in one process.

    .venv/bin/python benchmarks/embedder_ab.py --data ../shared/data/locomo/locomo_dev.json
    .venv/bin/python benchmarks/embedder_ab.py --data ... --rounds 5 --turns 2760 --configs before,after,after-1t

Each round runs every configuration once, in turn, so load from other jobs on a shared machine falls
on all of them alike; the tables are medians over rounds. Rows (each with a fresh embedder, so no
cache carries over between rounds):

- ``add_memories`` end to end (the embedder loaded first), memories a second: the LoCoMo dev
  turns (``"<speaker>: <text>"``, each text once) and short synthetic texts (13 words,
  `latency.make_corpus`), into a default atlas; also per second of this process's CPU time,
  the figure that load from other jobs disturbs least (with one intra-op thread it is the
  work done; with two it also counts a thread's spinning);
- ``add_memory`` p50 ms: one LoCoMo turn at a time into that atlas;
- query embedding p50 ms: ``embed([question])`` for distinct LoCoMo questions (the model runs), and
  for a question asked again (the cache answers, where there is one);
- ``retrieve`` p50 ms at 10,000 memories (synthetic vectors, `latency.make_corpus`), the LoCoMo
  question embedded by the configuration's model on every call (distinct questions: no cache hit).

Configurations: ``before`` is the embedder as it was (texts sorted by characters, each batch padded
by the tokenizer, no cache); ``after`` is today's `MiniLMEmbedder` (one intra-op thread per core, idle threads
sleeping); ``after-2t`` the same with two intra-op threads, ``after-1t`` with one;
``after-bNN`` with batch size NN; ``after-int8`` / ``after-fp32`` with that ``compute``;
``after-spin`` with onnxruntime's spinning intra-op threads (``spin=True``, the
default before issue 27's thread measurement); the parts combine: ``after-int8-1t-b16``.
``static`` is `StaticEmbedder` on the table given with ``--static`` (``scripts/distill_static.py``):
its ``retrieve`` atlas holds the same 10,000 texts embedded by the table (not the synthetic
384-dimension vectors).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _locomo import default_data_path, load_locomo
from latency import make_corpus, pcts

from shared_core import AtlasConfig, ElasticMemoryAtlas, ManualClock, MiniLMEmbedder
from shared_core.text.static import StaticEmbedder

Matrix = npt.NDArray[np.float32]


class BeforeEmbedder(MiniLMEmbedder):
    """The embedder before issue 27: sorted by characters, tokenizer padding, no cache."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(cache_size=0, compute="fp32", spin=True, **{"threads": None, **kwargs})

    def embed(self, texts: Sequence[str]) -> Matrix:
        if self._session is None:
            self._load()
            self._tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        texts = list(texts)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), self.batch_size):
            chunk = order[start:start + self.batch_size]
            out[chunk] = self._padded([texts[i] for i in chunk])
        return out

    def _padded(self, texts: list[str]) -> Matrix:
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        hidden = self._session.run(None, {"input_ids": ids, "attention_mask": mask,
                                          "token_type_ids": np.zeros_like(ids)})[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        out: Matrix = (pooled / np.linalg.norm(pooled, axis=1, keepdims=True)).astype(np.float32)
        return out


STATIC_TABLE: list[str] = []  # --static's table, for the configuration "static"


def make(name: str) -> Any:
    """The configuration called ``name`` (see the module docstring)."""
    if name == "static":
        if not STATIC_TABLE:
            raise SystemExit("the configuration 'static' needs --static TABLE.npz")
        return StaticEmbedder(table=STATIC_TABLE[0])
    if name == "before":
        return BeforeEmbedder()
    kwargs: dict[str, Any] = {}
    for part in name.split("-")[1:]:
        if part in ("int8", "fp32"):
            kwargs["compute"] = part
        elif part == "spin":
            kwargs["spin"] = True
        elif part.endswith("t"):
            kwargs["threads"] = int(part[:-1])
        elif part.startswith("b"):
            kwargs["batch_size"] = int(part[1:])
    return MiniLMEmbedder(**kwargs)


def _atlas(embedder: Any) -> ElasticMemoryAtlas:
    return ElasticMemoryAtlas(config=AtlasConfig(), embedder=embedder, clock=ManualClock(1_700_000_000.0))


def _rate(embedder: Any, texts: Sequence[str]) -> tuple[float, float]:
    """Memories a second of ``add_memories``, by the wall clock and by this process's CPU time."""
    atlas = _atlas(embedder)
    embedder.embed(["warm up"])  # the model loads before the clock starts
    start, cpu = time.perf_counter(), time.process_time()
    for s in range(0, len(texts), 1000):
        atlas.add_memories(list(texts[s:s + 1000]), namespace="bench", progress=False)
    return len(texts) / (time.perf_counter() - start), len(texts) / (time.process_time() - cpu)


def _p50(fn: Callable[[int], object], count: int) -> float:
    samples = []
    for i in range(count):
        t0 = time.perf_counter()
        fn(i)
        samples.append(time.perf_counter() - t0)
    return pcts(samples)[0]


class _Routed:
    """Memories' vectors from a table (no model), queries through ``model``: retrieve's query cost."""

    def __init__(self, table: dict[str, Matrix], model: Any) -> None:
        self.table, self.model = table, model
        self.dim = model.dim

    def embed(self, texts: Sequence[str]) -> Matrix:
        if all(t in self.table for t in texts):
            return np.stack([self.table[t] for t in texts])
        return self.model.embed(texts)


def measure(path: str, names: Sequence[str], *, rounds: int = 3, turns: int = 1000, short: int = 1000,
            queries: int = 100, retrieve_at: int = 10_000) -> dict[str, dict[str, float]]:
    """Medians over ``rounds`` interleaved rounds of every row, per configuration name."""
    conversations = load_locomo(path)
    turn_texts = list(dict.fromkeys(t.content for c in conversations for t in c.turns))
    questions = list(dict.fromkeys(q.question for c in conversations for q in c.questions))
    lo_texts = turn_texts[:turns]
    singles = turn_texts[turns:turns + queries] or turn_texts[:queries]
    short_texts = make_corpus(short, 1, seed=1)[0].texts
    big, _ = make_corpus(retrieve_at, 1)
    table = big.embedder().table
    samples: dict[str, dict[str, list[float]]] = {n: {} for n in names}
    retrieval: dict[str, ElasticMemoryAtlas] = {}
    for name in names:  # the 10k atlas of each configuration is built once, from the table
        model = make(name)
        atlas = _atlas(model if name == "static" else _Routed(table, model))
        for s in range(0, len(big.texts), 1000):
            atlas.add_memories(big.texts[s:s + 1000], namespace="bench", progress=False)
        retrieval[name] = atlas
    for r in range(rounds):
        for name in names:
            row = samples[name]
            for label, texts in (("LoCoMo turns", lo_texts), ("short texts", short_texts)):
                wall, cpu = _rate(make(name), texts)
                row.setdefault(f"add_memories {label} /s", []).append(wall)
                row.setdefault(f"add_memories {label} / CPU s", []).append(cpu)
            atlas = _atlas(make(name))
            atlas.add_memory("warm up", namespace="bench")
            row.setdefault("add_memory p50 ms", []).append(
                _p50(lambda i, a=atlas: a.add_memory(singles[i], namespace="bench"), len(singles)))
            model = make(name)
            model.embed(["warm up"])
            qs = questions[r * queries:(r + 1) * queries] or questions[:queries]
            row.setdefault("query embedding p50 ms", []).append(_p50(lambda i, m=model, q=qs: m.embed([q[i]]), len(qs)))
            row.setdefault("repeated query embedding p50 ms", []).append(
                _p50(lambda i, m=model, q=qs: m.embed([q[0]]), len(qs)))
            ra = retrieval[name]
            offset = (rounds + r) * queries
            qs2 = questions[offset:offset + queries] or questions[:queries]
            ra.retrieve(qs2[0] + " warm", namespace="bench", top_k=10)
            row.setdefault(f"retrieve p50 ms at {retrieve_at:,}", []).append(
                _p50(lambda i, a=ra, q=qs2: a.retrieve(q[i], namespace="bench", top_k=10, reinforce=False), len(qs2)))
            print(f"# round {r + 1} {name}: " + ", ".join(f"{k} {v[-1]:.2f}" for k, v in row.items()),
                  file=sys.stderr, flush=True)
    return {n: {k: statistics.median(v) for k, v in rows.items()} for n, rows in samples.items()}


def markdown(medians: dict[str, dict[str, float]]) -> str:
    names = list(medians)
    rows = list(next(iter(medians.values())))
    lines = ["| row | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]
    for row in rows:
        lines.append(f"| {row} | " + " | ".join(f"{medians[n][row]:,.2f}" for n in names) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=str(default_data_path()), help="locomo_dev.json")
    parser.add_argument("--configs", default="before,after", help="comma-separated configuration names")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--turns", type=int, default=1000, help="LoCoMo turns per add_memories run")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--static", metavar="TABLE.npz", help="the table of the configuration 'static'")
    args = parser.parse_args(argv)
    if args.static:
        STATIC_TABLE.append(args.static)
    print(f"# {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f} before the run", flush=True)
    medians = measure(args.data, args.configs.split(","), rounds=args.rounds, turns=args.turns, short=args.turns,
                      queries=args.queries)
    print(f"# median of {args.rounds} interleaved rounds; load {os.getloadavg()[0]:.2f} after the run")
    print(markdown(medians))


if __name__ == "__main__":
    main()
