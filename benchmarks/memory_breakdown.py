"""Where the bytes of a stored memory go, by component, and the overheads `shared_core.engine.lifecycle.capacity` uses.

    .venv/bin/python benchmarks/memory_breakdown.py                     # 10k and 100k (~3 min)
    .venv/bin/python benchmarks/memory_breakdown.py --capacity          # NODE_OVERHEAD / EDGE_OVERHEAD
    .venv/bin/python benchmarks/memory_breakdown.py --sizes 10000 --again   # and a second atlas's cost
    .venv/bin/python benchmarks/memory_breakdown.py --sizes 10000 --held    # in a process holding an atlas

Each size runs in a fresh interpreter and builds the atlas exactly as ``latency.py``'s memory probe
does (same corpus, batches, sessions); with ``--held``, after first building and keeping another
atlas as the probe's "process holding an atlas" column does (``latency.warm_batch``). Then, per
memory:

- **RSS**: growth of resident memory while the atlas takes the memories (after ``malloc_trim``),
  and the "overhead" beyond the embedding as stored (1,536 bytes in the exact index, 768 in the
  float16 approximate one from ``ann_threshold`` memories: ``latency.embedding_bytes``) and the
  text's UTF-8 bytes (the target);
- **Python objects** by component: deep sizes (``sys.getsizeof`` rounded to pymalloc's 16-byte
  blocks; each object counted once, in the first component that reaches it, in table order);
- **native**: glibc's bytes in use released by freeing the faiss index and closing SQLite
  (``mallinfo2``; exact, where RSS after a free depends on fragmentation);
- **where the rest of RSS goes**: the spare capacity inside the objects counted above (lists and
  ``array``s past their length, dicts' unused entries; faiss lists' room past their size), and the
  allocators' slack grown during the build: pymalloc's free blocks and unused pools in its arenas
  (``sys._debugmallocstats``), and the rest: RSS growth less pymalloc's arenas and the bytes in
  use in glibc's main arena (``mallinfo2`` sees no other arena), so glibc's free but resident
  pages, the heaps of other threads' arenas (faiss's OpenMP workers) and BLAS buffers.

``--capacity`` measures what capacity.py's docstring describes: the resident memory that 20,000
memories (5 namespaces of 4,000, exact vector search) add to a fresh process, less their texts and
the vector indexes' own bytes, with about 1 and about 3.7 edges per memory, solved for the bytes
per memory and per edge.
"""

from __future__ import annotations

import argparse
import array
import ctypes
import gc
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import latency as L

from shared_core import AtlasConfig, ElasticMemoryAtlas, ManualClock


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                      "fsmblks", "uordblks", "fordblks", "keepcost")]


def _malloc_in_use() -> int:
    gc.collect()
    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = _MallInfo2
    info = libc.mallinfo2()
    return int(info.uordblks + info.hblkhd)


def _pymalloc() -> tuple[int, int]:
    """(bytes of pymalloc's arenas, bytes free in them: available blocks and unused pools)."""
    fd = sys.stderr.fileno()
    with tempfile.TemporaryFile(mode="w+") as out:
        saved = os.dup(fd)
        os.dup2(out.fileno(), fd)
        try:
            sys._debugmallocstats()
        finally:
            os.dup2(saved, fd)
            os.close(saved)
        out.seek(0)
        text = out.read()

    def number(pattern: str) -> int:
        found = re.search(pattern, text)
        return int(found.group(1).replace(",", "")) if found else 0
    arenas = number(r"arenas \* \d+ bytes/arena\s+=\s+([\d,]+)")
    free = number(r"# bytes in available blocks\s+=\s+([\d,]+)") + number(r"unused pools \* \d+ bytes\s+=\s+([\d,]+)")
    return arenas, free


def _dict_spare(d: dict[Any, Any]) -> int:
    """Bytes of a dict's unused entries: CPython 3.11 allocates ``2/3`` of its table size in
    entries (16 bytes each with only str keys, else 24), and a resize makes room for 3 times
    the entries in use, so just past a resize about half the entries are empty (the table's
    index bytes are not counted)."""
    size, header = sys.getsizeof(d), sys.getsizeof({})
    entry = 16 if all(type(k) is str for k in d) else 24
    for log2 in range(3, 40):
        slots = 1 << log2
        usable = (2 * slots) // 3
        index = slots * (1 if slots <= 0x80 else 2 if slots <= 0xFFFF else 4 if slots <= 0xFFFFFFFF else 8)
        if usable >= len(d) and size - header in range(index + usable * entry - 64, index + usable * entry + 64):
            return (usable - len(d)) * entry
    return 0


def spare_capacity(obj: object, seen: set[int]) -> int:
    """Bytes allocated past the length of every list, ``array`` and dict reachable from ``obj``
    (a dict's unused entries, `_dict_spare`), walking as `deep_size` does; ``seen`` is extended."""
    empty_list, spare, stack = sys.getsizeof([]), 0, [obj]
    while stack:
        o = stack.pop()
        if id(o) in seen or isinstance(o, (type, str, bytes, int, float)) or o is None:
            continue
        seen.add(id(o))
        if isinstance(o, list):
            spare += sys.getsizeof(o) - empty_list - 8 * len(o)
            stack.extend(o)
        elif isinstance(o, array.array):
            spare += sys.getsizeof(o) - sys.getsizeof(array.array(o.typecode)) - o.itemsize * len(o)
        elif isinstance(o, dict):
            spare += _dict_spare(o)
            stack.extend(o.keys())
            stack.extend(o.values())
        elif isinstance(o, (tuple, set, frozenset)) or type(o).__name__ == "deque":
            stack.extend(o)  # type: ignore[arg-type]
        elif type(o).__name__ not in ("ndarray", "module", "function", "method", "builtin_function_or_method",
                                      "lock", "RLock"):
            for cls in type(o).__mro__:
                stack.extend(getattr(o, name) for name in getattr(cls, "__slots__", ()) if hasattr(o, name))
            if hasattr(o, "__dict__"):
                stack.append(o.__dict__)
    return spare


def _faiss_spare(impl: Any) -> int:
    """Bytes the IVF index's lists hold past their entries (codes and ids; 0 without lists)."""
    room, sizes = getattr(impl, "_room", None), getattr(impl, "_sizes", None)
    if room is None or sizes is None or len(sizes) == 0:
        return 0
    code_size = int(room._code_size)
    return int((room.codes - sizes).sum()) * code_size + int((room.ids - sizes).sum()) * 8


def _rounded(size: int) -> int:
    return size if size > 512 else (size + 15) // 16 * 16  # pymalloc's size classes


def deep_size(obj: object, seen: set[int]) -> int:
    """Bytes of ``obj`` and of every object it reaches that is not in ``seen`` (which it extends)."""
    total = 0
    stack = [obj]
    skip = ("module", "function", "method", "builtin_function_or_method", "lock", "RLock")
    while stack:
        o = stack.pop()
        if id(o) in seen or isinstance(o, type) or type(o).__name__ in skip:
            continue
        seen.add(id(o))
        total += _rounded(sys.getsizeof(o))
        if isinstance(o, dict):
            stack.extend(o.keys())
            stack.extend(o.values())
        elif isinstance(o, (list, tuple, set, frozenset)) or type(o).__name__ == "deque":
            stack.extend(o)  # type: ignore[arg-type]
        elif isinstance(o, (str, bytes, int, float)) or o is None or type(o).__name__ in ("array", "ndarray"):
            pass
        else:
            for cls in type(o).__mro__:
                stack.extend(getattr(o, name) for name in getattr(cls, "__slots__", ()) if hasattr(o, name))
            if hasattr(o, "__dict__"):
                stack.append(o.__dict__)
    return total


def _shared_numbers() -> object:
    """`shared_core.store.memory._ints`'s table (None in trees before it, so older commits can be measured)."""
    try:
        from shared_core import _ints
    except ImportError:
        return None
    return _ints._table


def breakdown(n: int, *, again: bool = False, held: bool = False) -> str:
    """The table for an atlas of ``n`` memories (run in a fresh interpreter); ``again`` adds the
    RSS that a second atlas of the same memories adds to the same process; ``held``: the process
    first builds and keeps an atlas of ``latency.WARM_ATLAS`` memories, as ``latency.py``'s probe
    of a process holding an atlas does (the target's figure)."""
    corpus, _ = L.make_corpus(n, 1)
    embedder = corpus.embedder()
    if held:
        warm = L.build_atlas(L.make_corpus(L.WARM_ATLAS, 1, seed=1)[0], step=L.warm_batch(n))[0]
    else:
        warm = ElasticMemoryAtlas(config=AtlasConfig(ann_threshold=64), embedder=embedder)  # imports, first-use
        warm.add_memories([{"content": f"warm {i}", "embedding": v}  # tables (faiss included) outside the count
                           for i, v in enumerate(corpus.vectors[:64])], namespace="warm")
    gc.collect()
    L._trim()
    base, (arenas0, pyfree0), malloced0 = L._rss(), _pymalloc(), _malloc_in_use()
    atlas, _, _ = L.build_atlas(_own_texts(corpus), embedder)
    gc.collect()
    L._trim()
    grown, (arenas1, pyfree1), malloced1 = L._rss() - base, _pymalloc(), _malloc_in_use()
    rss = grown / n
    text = sum(len(t.encode()) for t in corpus.texts) / n
    embedding = L.embedding_bytes(n, atlas.config)
    if again:  # before anything of the first atlas is freed, which the second would reuse
        base = L._rss()
        kept = L.build_atlas(_own_texts(corpus), embedder)  # noqa: F841 (held while measuring)
        gc.collect()
        L._trim()
        rss2 = (L._rss() - base) / n
        second = (f"A second atlas of the same memories adds RSS {rss2:,.0f} B/memory (overhead "
                  f"{rss2 - embedding - text:,.0f}): the first one's extra {rss - rss2:,.0f} is paid once per process "
                  "(code pages, BLAS work buffers, allocator pools left by the write path's temporaries, and the "
                  "stemmed words both atlases index).")
    part: Any = atlas.backend.partition("bench")
    graph = part.graph
    nodes = list(graph.nodes())
    lines = [f"{n:,} memories, {graph.edge_count() / n:.2f} edges each: RSS {rss:,.0f} B/memory = embedding "
             f"{embedding:,.0f} + text {text:,.0f} + overhead **{rss - embedding - text:,.0f}**", "",
             "| component | B/memory |", "|---|---|"]
    seen = {id(x) for x in (corpus, embedder, nodes, atlas, atlas.backend, part, atlas.config, atlas.clock,
                            atlas.embedder)}
    seen |= {id(node.content) for node in nodes}  # the corpus's own strings, allocated before the count
    node_index = {"_slot", "_ids", "_node", "_nodes", "_free_slots"}
    slots = [name for name in getattr(type(graph), "__slots__", ()) if hasattr(graph, name)]
    rows: list[tuple[str, int]] = [
        ("memory ids (str; shared by every index)", sum(deep_size(node.id, seen) for node in nodes)),
        ("`MemoryNode` objects and their own field values", sum(deep_size(node, seen) for node in nodes)),
        ("graph store: id -> node index", sum(deep_size(getattr(graph, s), seen) for s in slots if s in node_index)),
        ("graph store: edges", sum(deep_size(getattr(graph, s), seen) for s in slots if s not in node_index)),
        ("partition: sessions", deep_size(part.sessions, seen)),
        ("partition: time index", deep_size(getattr(part, "_times", None), seen)),
        ("partition: superseded ids", deep_size(part.inactive, seen)),
        ("event log", deep_size(atlas.events, seen)),
        ("atlas `_where` (id -> namespace)", deep_size(atlas._where, seen)),
        ("lifecycle", deep_size(atlas._life, seen)),
        (f"keyword index, Python side ({type(part.keywords).__name__})", deep_size(part.keywords, seen)),
        ("vector index, Python side (id maps)", deep_size(part.vectors, seen)),
        ("the table of shared row numbers (`shared_core.store.memory._ints`)", deep_size(_shared_numbers(), seen)),
    ]
    for name, size in rows:
        lines.append(f"| {name} | {size / n:,.0f} |")
    lines.append(f"| **Python objects, total** | **{sum(size for _, size in rows) / n:,.0f}** |")
    impl = getattr(part.vectors, "_impl", None)
    spare = spare_capacity(atlas, {id(x) for x in (corpus, embedder, atlas.embedder)})
    extra = ["", "Where RSS goes beyond the objects and faiss's bytes in use (growth during the build):", "",
             "| | B/memory |", "|---|---|",
             "| spare capacity of the objects above (lists, arrays past their length; dicts' unused entries) | "
             f"{spare / n:,.0f} |",
             f"| faiss lists' room past their entries (in the faiss line below) | {_faiss_spare(impl) / n:,.0f} |",
             f"| pymalloc: free blocks and unused pools in its arenas | {(pyfree1 - pyfree0) / n:,.0f} |",
             "| the rest: glibc's free but resident heap, BLAS buffers (RSS growth less pymalloc's arenas "
             "and malloc's bytes in use) | "
             f"{(grown - (arenas1 - arenas0) - (malloced1 - malloced0)) / n:,.0f} |"]
    if impl is not None and getattr(impl, "_index", None) is not None:
        before = _malloc_in_use()
        impl._index = impl._quantizer = None
        if hasattr(impl, "_map"):  # the direct map holds the index too (trees since it)
            impl._map = None
        freed = (before - _malloc_in_use()) / n
        lines.append(f"| faiss index, native (the vector and its label: 1,544) | {freed:,.0f} |")
    db = getattr(atlas.backend, "_db", None)
    if db is not None:
        before = _malloc_in_use()
        db.conn.close()
        lines.append(f"| SQLite FTS5, native | {(before - _malloc_in_use()) / n:,.0f} |")
    lines += extra
    if again:
        lines += ["", second]
    return "\n".join(lines)


def _own_texts(corpus: L.Corpus) -> L.Corpus:
    """``corpus`` with copies of its texts, made inside the count: the atlas keeps the content
    string it is given, and the corpus's own strings predate the count (their bytes would be
    subtracted as "text" without ever having been counted)."""
    return L.Corpus([t.encode().decode() for t in corpus.texts], corpus.vectors, corpus.queries, corpus.query_vectors)


def capacity_probe(similar_top: int) -> tuple[int, int, int]:
    """(memories, edges, resident bytes less texts and vector indexes) for 5 namespaces of 4,000."""
    per_namespace, namespaces = 4000, 5
    corpus, _ = L.make_corpus(per_namespace * namespaces, 1)
    embedder = corpus.embedder()
    warm = ElasticMemoryAtlas(config=AtlasConfig(ann_threshold=64), embedder=embedder)  # faiss loaded, as above
    warm.add_memories([{"content": f"warm {i}", "embedding": v} for i, v in enumerate(corpus.vectors[:64])],
                      namespace="warm")
    gc.collect()
    L._trim()
    base = L._rss()
    atlas = ElasticMemoryAtlas(config=AtlasConfig(similar_top=similar_top), embedder=embedder,
                               clock=ManualClock(1_700_000_000.0))
    own = _own_texts(corpus).texts
    for k in range(namespaces):
        texts = own[k * per_namespace:(k + 1) * per_namespace]
        for s in range(0, per_namespace, 400):
            items = [{"content": t, "session_id": f"s{(s + j) // 50}"} for j, t in enumerate(texts[s:s + 400])]
            atlas.add_memories(items, namespace=f"ns{k}")
    del own, texts, items
    gc.collect()
    L._trim()
    grown = L._rss() - base
    edges = vectors = 0
    for k in range(namespaces):
        part: Any = atlas.backend.partition(f"ns{k}")
        edges += part.graph.edge_count()
        vectors += part.vectors.nbytes()
    return per_namespace * namespaces, edges, grown - vectors - sum(len(t.encode()) for t in corpus.texts)


def _fresh(*args: str) -> str:
    done = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--capacity", action="store_true", help="measure NODE_OVERHEAD and EDGE_OVERHEAD")
    parser.add_argument("--again", action="store_true", help="also build a second atlas in the same process")
    parser.add_argument("--held", action="store_true",
                        help="in a process that first builds and keeps an atlas (latency.py's warm probe)")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--probe", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(breakdown(args.one, again=args.again, held=args.held))
    elif args.probe is not None:
        print(*capacity_probe(args.probe))
    elif args.capacity:
        (n, e1, b1), (_, e2, b2) = ([int(x) for x in _fresh("--probe", str(top)).split()] for top in (0, 3))
        per_edge = (b2 - b1) / (e2 - e1)
        print(f"{(b1 - e1 * per_edge) / n:,.0f} bytes per memory and {per_edge:,.0f} per edge "
              f"({n:,} memories with {e1 / n:.2f} and {e2 / n:.2f} edges each)")
    else:
        for n in (int(s) for s in args.sizes.split(",")):
            flags = [flag for flag, on in (("--again", args.again), ("--held", args.held)) if on]
            print(_fresh("--one", str(n), *flags), end="\n\n", flush=True)


if __name__ == "__main__":
    main()
