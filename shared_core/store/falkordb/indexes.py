"""`FalkorVectorIndex` and `FalkorKeywordIndex`: the vector and keyword (BM25) indexes of one graph.

Vectors are ``(:Embedding {id, embedding})`` nodes (``vecf32``) beside the memories (see
`shared_core.store.falkordb.cypher` for why), searched through FalkorDB's HNSW index with cosine
distance: the index answers *distances*, best first, so similarity is ``1 - distance``. Its
filters apply after the k-nearest search, so a search restricted to a subset of ids (a session,
a filter) is computed exactly over that subset with ``vec.cosineDistance`` instead.

Keywords are ranked by BM25 computed by the server exactly as the in-process index
(`shared_core.store.memory.inverted_index`) computes it, over the same terms
(`shared_core.store.terms`): each memory's terms are stored in ``n.terms`` under a range index
(each element indexed), and the namespace's document and token counts sit on its ``(:Atlas)``
node, so both backends give the same ids with the same scores. A search is two statements:
each query stem's document count (`cypher.BM25_COUNTS`, an index count; in a namespace that
keeps its per-term counts, `cypher.BM25_KEPT_COUNTS`, an index lookup a stem), from which the
client computes the weights as the in-process index does (`FalkorKeywordIndex.plan`), then the
top k (`cypher.bm25`), which prunes: a common term's documents are read only where they meet
another query term, unless its weight could reach the k-th score alone, and then each is scored
on that term's share alone before it is kept (`cypher.bm25_heavy` where every term is a heavy
one: that share is then the document's score). A namespace of fewer than `ONE_STATEMENT_BELOW`
documents is searched in one statement (`cypher.bm25_counted`).

The per-term counts (`shared_core.store.falkordb.bm25`) are kept only from a size on (the
backend's ``term_counts_from``, `ONE_STATEMENT_BELOW` by default): a write that leaves the
namespace at that many documents or more without them answers its document count, and its
process then counts every stem once (`FalkorKeywordIndex.count_terms`, one statement, a no-op
when another process did it first); a process opening such a namespace does the same. Until the
flag is read a search counts postings, which is always exact: the flag only turns on.
"""

from __future__ import annotations

import base64
import math
import threading
from collections.abc import Callable, Collection, Container, Iterable, Sequence
from functools import partial
from typing import Any

import numpy as np
import numpy.typing as npt

from ...values.errors import InvalidEmbeddingError, InvalidInputError
from ..base import KeywordIndexBase, VectorIndexBase
from ..contract import Hits, Vector
from ..terms import index_terms, query_stems
from . import cypher as q
from .bm25 import BACKFILL_COUNTS, BM25_KEPT_COUNTS
from .client import GraphKey, Literal

__all__ = ["AMONG_IN_QUERY", "COSINE_BATCH", "CosineCache", "FalkorKeywordIndex", "FalkorVectorIndex",
           "query_literal", "quote", "short", "term_statements", "vector_literal", "vector_statements"]

_ROWS_PER_WRITE = 256
AMONG_IN_QUERY = 5000  # a subset up to this size is filtered in the query, larger ones after it
Prefetch = Callable[..., None]
Statements = list[tuple[str, dict[str, Any]]]
#: `VectorIndex.cosine_batch`: how many cosines one request reads (the ranking's: those it asks
#: for, the next it names, ``ahead``, then the read-ahead list's; the walk's `cosines_ahead`
#: alike); in process 16, each cosine being work, here a round trip
COSINE_BATCH = 64
#: `cypher.bm25` prunes when the query's terms are in this many documents or more (counted once a
#: term), and in `PRUNE_PER_HIT` times as many as the hits asked for; else `cypher.bm25_all`
#: scores them all (for many hits the k-th score is low: pruning would read nearly every
#: document anyway, after its first bound; where the two cross: docs/falkordb.md)
PRUNE_FROM = 1000
PRUNE_PER_HIT = 20
#: a namespace of fewer documents is searched in one statement (`cypher.bm25_counted`: its counts
#: and scores together, one round trip fewer); the crossover lies between the sizes measured
#: (10k documents: one statement cheaper; 100k: the counts and the pruned top-k cheaper)
ONE_STATEMENT_BELOW = 20_000
_WALK = 16  # a search for more hits than this is a recall's, whose graph walk reads their edges next


def short(terms: Sequence[str]) -> bool:
    """Whether a query of these terms sums its scores the plain way (fewer than 9 terms: the
    ``short`` statements of `cypher.bm25`, `cypher.bm25_all`, `cypher.bm25_counted`).

    >>> short(["milk", "tea"]), short(["w"] * 9)
    (True, False)
    """
    return len(terms) < 9


class CosineCache:
    """Cosines with one query vector that the current call has read alongside other rows (a
    recall's candidates, its walk), so `FalkorVectorIndex.similarities` does not ask again.

    ``query`` is the call's first query (a recall's own); the cosines with any other query the
    call reads (a speaker path's sub-query) are kept apart (``others``), so they do not displace
    the first's, which the walk reads ahead and the ranking resolves after them."""

    __slots__ = ("others", "query", "values")

    def __init__(self) -> None:
        self.query: bytes | None = None
        self.values: dict[str, float] = {}
        self.others: dict[bytes, dict[str, float]] = {}

    def add(self, query: Vector, values: dict[str, float]) -> None:
        key = np.asarray(query, dtype=np.float32).tobytes()
        if self.query is None:
            self.query = key
        if key == self.query:
            self.values.update(values)
        else:
            self.others.setdefault(key, {}).update(values)

    def of(self, query: Vector) -> dict[str, float] | None:
        if self.query is None:
            return None
        key = np.asarray(query, dtype=np.float32).tobytes()
        return self.values if key == self.query else self.others.get(key)

    def clear(self) -> None:
        self.query, self.values, self.others = None, {}, {}


def _no_prefetch(ids: Sequence[str], *, edges: bool = False) -> None:
    return None


def vector_literal(vector: npt.NDArray[np.float32]) -> Literal:
    """A float32 vector as a Cypher list literal (9 significant digits: exact for float32)."""
    values = np.asarray(vector, dtype=np.float32).tolist()  # Python's % on floats: twice np.char.mod's speed
    return Literal("[" + ",".join(["%.9g" % x for x in values]) + "]")  # noqa: UP031


def query_literal(vector: npt.NDArray[np.float32]) -> Literal:
    """`vector_literal` of a query vector, remembered: a recall sends it three or four times."""
    values = np.asarray(vector, dtype=np.float32)
    key = values.tobytes()
    with _LITERALS_LOCK:
        found = _LITERALS.get(key)
    if found is None:
        found = vector_literal(values)
        with _LITERALS_LOCK:
            _LITERALS[key] = found
            while len(_LITERALS) > 8:  # a recall writes its query vector three or four times
                del _LITERALS[next(iter(_LITERALS))]
    return found


_LITERALS: dict[bytes, Literal] = {}
_LITERALS_LOCK = threading.Lock()


class FalkorVectorIndex(VectorIndexBase):
    """Unit vectors of one namespace's memories, on the server."""

    def __init__(self, graph: GraphKey, dim: int, *, prefetch: Prefetch = _no_prefetch,
                 cosines: CosineCache | None = None, ahead: Callable[[], Iterable[str]] | None = None) -> None:
        self._g = graph
        self._dim = dim
        self._prefetch = prefetch  # what a search finds is read next: fetch it in one go
        self._cosines = cosines  # the current call's cosines with its query, read beside other rows
        # ids whose cosines the call may ask for next, most likely first (the memories a graph
        # walk reached, `FalkorGraphStore.read_ahead`): read with the first cosines it lacks
        self._ahead = ahead
        self._read: dict[str, Vector] = {}  # vectors the current call read beside other rows

    def remember(self, node_id: str, raw: str | None) -> None:
        """Keep a vector read beside other rows (its raw bytes) for `get_many` in this call."""
        if raw is not None:
            self._read[node_id] = np.frombuffer(base64.b64decode(raw), dtype="<f4").astype(np.float32)

    def forget(self) -> None:
        """A new call, or a change of the vectors: forget what was read."""
        self._read.clear()

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def cosine_batch(self) -> int:
        return COSINE_BATCH

    def __len__(self) -> int:
        rows = self._g.read(q.VECTOR_COUNT)
        return int(rows[0][0]) if rows else 0

    def add(self, ids: Sequence[str], vectors: npt.NDArray[np.float32], *, into: Statements | None = None,
            rows: list[tuple[Literal, str]] | None = None) -> None:
        """Store the vectors; with ``into``, append the statements to it instead (a batch write
        sends them with its others); with ``rows``, append each vector's (`vector_literal`, raw
        bytes in base64) for a statement of the caller's (`cypher.WRITE_NODES`)."""
        if vectors.shape != (len(ids), self._dim):
            raise InvalidEmbeddingError(f"expected {len(ids)} vectors of dimension {self._dim}, got {vectors.shape}")
        if self._cosines is not None:
            self._cosines.clear()
        self._read.clear()
        if rows is not None:
            rows.extend((vector_literal(v), _raw(v)) for v in vectors)
            return
        statements = vector_statements(ids, vectors)
        if into is not None:
            into.extend(statements)
            return
        for query, params in statements:
            self._g.write(query, params)

    def remove(self, ids: Sequence[str]) -> None:
        if self._cosines is not None:
            self._cosines.clear()
        self._read.clear()
        if ids:
            self._g.write(q.REMOVE_VECTORS, {"ids": list(ids)})

    def get(self, node_id: str) -> Vector | None:
        rows = self._g.read(q.GET_VECTOR, {"id": node_id})
        return _vector(*rows[0]) if rows else None

    def search(self, query: Vector, k: int, *, subset: Collection[str] | None = None) -> Hits:
        """The k most similar ids, best first (exact over ``subset`` when given)."""
        if k <= 0:
            return []
        if subset is not None:
            sims = self._among(query, list(subset))
            best = sorted(sims.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
            self._prefetch([i for i, _ in best], edges=k > _WALK)
            return best
        rows = self._g.read(q.VECTOR_SEARCH, {"k": int(k), "query": query_literal(query)})
        hits = [(str(i), float(np.float32(1.0 - float(d)))) for i, d in rows]
        self._prefetch([i for i, _ in hits], edges=k > _WALK)
        return hits

    def get_many(self, ids: Sequence[str]) -> list[Vector | None]:
        """`get` of each id, in one statement."""
        if not ids:
            return []
        found: dict[str, Vector | None] = {i: self._read[i] for i in ids if i in self._read}
        missing = [i for i in dict.fromkeys(ids) if i not in found]
        if missing:
            found.update((str(i), _vector(raw, v)) for i, raw, v in self._g.read(q.VECTORS_AMONG, {"ids": missing}))
        return [found.get(i) for i in ids]

    def similarities(self, query: Vector, ids: Sequence[str], *, ahead: Sequence[str] = ()) -> npt.NDArray[np.float32]:
        """Cosine of ``query`` with each id (0 for an unknown id); a request for the ids the call
        lacks also reads those of ``ahead`` it lacks (to `COSINE_BATCH` in all), then the
        read-ahead list's (to `COSINE_BATCH` as well)."""
        known = self._cosines.of(query) if self._cosines is not None else None
        wanted = list(dict.fromkeys(ids))
        if known is not None and self._cosines is not None:
            sims = {i: known[i] for i in wanted if i in known}
            missing = [i for i in wanted if i not in known]
            if missing:
                asked = set(missing)
                more = [i for i in dict.fromkeys(ahead) if i not in known and i not in asked][
                    :max(0, COSINE_BATCH - len(missing))]
                more += self._next_ahead(known, asked.union(more))
                found = self._among(query, missing + more)
                self._cosines.add(query, {i: found.get(i, 0.0) for i in missing + more})
                sims.update(found)
        else:
            sims = self._among(query, wanted)
        return np.fromiter((sims.get(i, 0.0) for i in ids), dtype=np.float32, count=len(ids))

    def _next_ahead(self, known: dict[str, float], asked: set[str], among: Container[str] | None = None
                    ) -> list[str]:
        """The next ids of the read-ahead list (of ``among``, when given) whose cosines are not
        known (a chunk at most)."""
        out: list[str] = []
        for i in self._ahead() if self._ahead is not None else ():
            if len(out) + len(asked) >= COSINE_BATCH:
                break
            if i not in known and i not in asked and (among is None or i in among):
                out.append(i)
        return out

    def cosines_ahead(self, among: Container[str]) -> tuple[list[str], tuple[str, dict[str, Any]]] | None:
        """The statement reading the cosines with the call's query of the next ids of the
        read-ahead list among ``among`` (the memories a walk reached) whose cosines the call
        lacks, for a caller's pipeline (`keep_cosines` takes its rows); None: no such id, or no
        query."""
        cache = self._cosines
        if cache is None or cache.query is None:
            return None
        ids = self._next_ahead(cache.values, set(), among)
        if not ids:
            return None
        query = np.frombuffer(cache.query, dtype=np.float32)
        return ids, (q.VECTOR_AMONG, {"ids": ids, "query": query_literal(query)})

    def keep_cosines(self, ids: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        """Keep the `VECTOR_AMONG` rows of `cosines_ahead`'s statement (0 for an id without a row)."""
        if self._cosines is None or self._cosines.query is None:
            return
        found = {str(i): float(np.float32(1.0 - float(d))) for i, d in rows}
        self._cosines.values.update({i: found.get(i, 0.0) for i in ids})

    def _among(self, query: Vector, ids: list[str]) -> dict[str, float]:
        out: dict[str, float] = {}
        literal = query_literal(query)
        for start in range(0, len(ids), AMONG_IN_QUERY):
            rows = self._g.read(q.VECTOR_AMONG, {"ids": ids[start:start + AMONG_IN_QUERY], "query": literal})
            out.update((str(i), float(np.float32(1.0 - float(d)))) for i, d in rows)
        return out


def vector_statements(ids: Sequence[str], vectors: npt.NDArray[np.float32]) -> list[tuple[str, dict[str, Any]]]:
    """The statements of `FalkorVectorIndex.add` (a few hundred rows each)."""
    out: list[tuple[str, dict[str, Any]]] = []
    for start in range(0, len(ids), _ROWS_PER_WRITE):
        chunk = zip(ids[start:start + _ROWS_PER_WRITE], vectors[start:start + _ROWS_PER_WRITE], strict=True)
        rows = ", ".join(f"[{quote(i)}, {vector_literal(v)}, '{_raw(v)}']" for i, v in chunk)
        out.append((q.SET_VECTORS, {"rows": Literal(f"[{rows}]")}))
    return out


def term_statements(rows: Sequence[tuple[str, str]]) -> list[tuple[str, dict[str, Any]]]:
    """The statements of `FalkorKeywordIndex.add_many` for (id, text) rows (a later row of an id
    replaces an earlier one), a few hundred rows each."""
    last = dict(rows)
    for node_id, text in last.items():
        if not isinstance(text, str):
            raise InvalidInputError(f"keyword text must be a string, got {type(text).__name__} for {node_id!r}")
    items = [[node_id, terms, q.repeats(terms)]
             for node_id, terms in ((node_id, index_terms(text)) for node_id, text in last.items())]
    return [(q.SET_TERMS, {"rows": items[start:start + _ROWS_PER_WRITE]})
            for start in range(0, len(items), _ROWS_PER_WRITE)]


def _raw(vector: Vector) -> str:
    """A vector's float32 bytes in base64 (see `cypher.SET_VECTORS`)."""
    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode()


def _vector(raw: str | None, values: object) -> Vector | None:
    """A stored vector: its raw float32 bytes (base64) or, lacking them, its elements."""
    if raw is not None:
        return np.frombuffer(base64.b64decode(raw), dtype="<f4").astype(np.float32)
    return None if values is None else np.asarray(values, dtype=np.float32)


def quote(text: str) -> str:
    """A string as a Cypher literal."""
    from falkordb.helpers import quote_string

    quoted: str = quote_string(text)
    return quoted


class FalkorKeywordIndex(KeywordIndexBase):
    """BM25 over one namespace's memories, on the server (see the module docstring)."""

    K1 = 1.2  # `InvertedKeywordIndex`'s defaults, FTS5's
    B = 0.75

    def __init__(self, graph: GraphKey, *, prefetch: Prefetch = _no_prefetch,
                 documents: Callable[[], int | None] = lambda: None, counted: Callable[[], bool] = lambda: False,
                 counts_from: int = ONE_STATEMENT_BELOW) -> None:
        self._g = graph
        self._prefetch = prefetch
        self._documents = documents  # the namespace's documents as this call read them (None: unknown)
        self._counted = counted  # whether the namespace keeps its per-term counts, as this call read it
        self.counts_from = counts_from  # the documents from which the namespace keeps them
        # whether this process has seen the namespace keep them (it only turns on: a write that
        # guesses off is refused if they are kept, `writes.write_batch`)
        self.kept = False

    def __len__(self) -> int:
        rows = self._g.read(q.TERMS_COUNT)
        return int(rows[0][0]) if rows else 0

    def add(self, node_id: str, text: str, *, session_id: str | None = None) -> None:
        self.add_many([(node_id, text, session_id)])

    def add_many(self, rows: Sequence[tuple[str, str, str | None]], *, into: Statements | None = None,
                 terms: list[list[str]] | None = None) -> None:
        """Index many (id, text, session) rows (a later row of an id replaces an earlier one), a
        few hundred per statement, then the one-time count of the per-term counts if the
        namespace has grown large enough (`count_terms`); with ``into``, append the statements to
        it instead (no count: the next write or opening makes it); with ``terms``, append each
        row's terms for a statement of the caller's (`cypher.WRITE_NODES`, one row per id)."""
        if terms is not None:
            for node_id, text, _ in rows:
                if not isinstance(text, str):
                    raise InvalidInputError(f"keyword text must be a string, got {type(text).__name__} for {node_id!r}")
                terms.append(index_terms(text))
            return
        statements = term_statements([(node_id, text) for node_id, text, _ in rows])
        if into is not None:
            into.extend(statements)
            return
        uncounted = None
        for query, params in statements:
            answer = self._g.write(query, params)
            uncounted = answer[0][0] if answer else uncounted
        self.count_terms(uncounted)

    def count_terms(self, uncounted: Any) -> None:
        """After a write that answered ``uncounted`` (`cypher.UNCOUNTED`: the namespace's
        documents while it keeps no per-term counts, else None): count every stem once
        (`cypher.BACKFILL_COUNTS`) if the namespace has reached `counts_from` documents."""
        if uncounted is not None and int(uncounted) >= self.counts_from:
            self._g.write(BACKFILL_COUNTS, {"from": self.counts_from})
            self.kept = True

    def remove(self, node_id: str) -> None:
        self._g.write(q.REMOVE_TERMS, {"id": node_id})

    def counting(self, query: str, k: int) -> tuple[list[str], tuple[str, dict[str, Any]]] | None:
        """A search's first statement, each stem's document count (`cypher.BM25_KEPT_COUNTS` where
        this call read that the namespace keeps them, else `cypher.BM25_COUNTS`, counting its
        postings), with the query's stems (None: no stem, or k <= 0; nothing to search)."""
        stems = query_stems(query)
        if not stems or k <= 0:
            return None
        counts = BM25_KEPT_COUNTS if self._counted() else q.BM25_COUNTS
        return stems, (counts, {"stems": list(dict.fromkeys(stems))})

    def one_statement(self, query: str, k: int) -> dict[str, Any] | None:
        """The parameters of `cypher.bm25_counted` when this namespace is searched in one
        statement (fewer than `ONE_STATEMENT_BELOW` documents as this call read them), with
        ``top`` naming it for `top_statement`, else None (also when the query has no stem:
        `counting` says so)."""
        documents = self._documents()
        if documents is None or documents >= ONE_STATEMENT_BELOW or k <= 0:
            return None  # before stemming: a large namespace's `counting` stems the query
        stems = query_stems(query)
        if not stems:
            return None
        k1, b = self.K1, self.B
        return {"stems": list(dict.fromkeys(stems)), "terms": list(stems), "k1": k1, "b": b, "n0": k1 * (1.0 - b),
                "k": int(k), "top": "counted"}

    @staticmethod
    def plan(stems: Sequence[str], rows: Sequence[Sequence[Any]], k: int) -> dict[str, Any] | None:
        """The parameters of `cypher.bm25` from `BM25_COUNTS`'s rows (None: no document holds a
        query term): each query term's weight ``idf * (k1 + 1)`` and the norm's terms, computed
        as `InvertedKeywordIndex.search` computes them (the same floats), and the terms some
        document holds, heaviest first, for the pruning (see `cypher.bm25`); ``top`` names the
        statement `top_statement` gives: ``pruned`` (`cypher.bm25`) when the query's terms are in
        enough documents, ``heavy`` (`cypher.bm25_heavy`, the same pruning with nothing scored
        twice) when moreover every term some document holds is a heavy one, else ``all``
        (`cypher.bm25_all`).

        >>> p = FalkorKeywordIndex.plan(["milk", "tea"], [[10, 50, "milk", 2]], 3)
        >>> p["sterms"], round(p["ws"][0], 4), p["seeds"]
        (['milk'], 2.6923, [])
        """
        if not rows:
            return None
        docs, tokens = int(rows[0][0]), int(rows[0][1])
        counts = {str(t): int(n) for _, _, t, n in rows}
        if docs <= 0 or tokens <= 0:
            return None
        k1, b = FalkorKeywordIndex.K1, FalkorKeywordIndex.B
        ws = [(k1 + 1.0) * (max(math.log((docs - counts.get(t, 0) + 0.5) / (counts.get(t, 0) + 0.5)), 0.0) or 1e-6)
              for t in stems]
        live = sorted((i for i, t in enumerate(stems) if counts.get(t, 0) > 0), key=lambda i: (-ws[i], i))
        if not live:
            return None
        bs = [ws[i] for i in live]
        rest = [math.fsum(bs[p:]) * (1.0 + 1e-12) for p in range(len(bs))]  # rounded up: a bound
        sterms = [stems[i] for i in live]
        heavy = sterms[:q.HEAVY]
        seeds = [[heavy[x], heavy[y]] for x in range(len(heavy)) for y in range(x + 1, len(heavy))]
        return {"terms": list(stems), "ws": ws, "lw": k1 * b * docs / tokens, "n0": k1 * (1.0 - b), "k": int(k),
                "sterms": sterms, "bs": bs, "rest": rest, "seeds": seeds, "paired": len(heavy),
                "light": rest[len(heavy)] if len(bs) > len(heavy) else 0.0,
                "top": "all" if sum(counts.values()) < max(PRUNE_FROM, PRUNE_PER_HIT * k) else
                "heavy" if len(bs) <= len(heavy) else "pruned"}

    @staticmethod
    def top_statement(plan: dict[str, Any]) -> tuple[Callable[..., str], dict[str, Any]]:
        """The BM25 top-k statement of a plan (`one_statement`'s or `plan`'s parameters), as a
        builder taking ``session``, ``among`` and ``tail`` (`cypher.bm25_counted` for a namespace
        searched in one statement, else `cypher.bm25` or `cypher.bm25_heavy` where `plan` chose to
        prune, `cypher.bm25_all` otherwise; each with `short` of the query's terms), and the
        parameters it takes: the one choice `search` and a recall's `paths.gather` both make.

        >>> build, params = FalkorKeywordIndex.top_statement(
        ...     FalkorKeywordIndex.plan(["milk", "tea"], [[10, 50, "milk", 2]], 3) or {})
        >>> build.func.__name__, build.keywords, "top" in params
        ('bm25_all', {'short': True}, False)
        """
        params = dict(plan)
        builders: dict[str, Callable[..., str]] = {"counted": q.bm25_counted, "pruned": q.bm25, "heavy": q.bm25_heavy,
                                                   "all": q.bm25_all}
        builder = builders[params.pop("top")]
        return partial(builder, short=short(params["terms"])), params

    def search(self, query: str, k: int, *, session_id: str | None = None,
               subset: Collection[str] | None = None) -> list[tuple[str, float]]:
        among = subset is not None and len(subset) <= AMONG_IN_QUERY
        wanted = k if subset is None or among else max(4 * k, k + len(subset))
        plan = self.one_statement(query, wanted)
        if plan is None:
            counting = self.counting(query, wanted)
            if counting is None:
                return []
            stems, counts = counting
            plan = self.plan(stems, self._g.read(*counts), wanted)
            if plan is None:
                return []
        top, params = self.top_statement(plan)
        if session_id is not None:
            params["session"] = session_id
        if among:
            assert subset is not None
            params["ids"] = list(subset)
        rows = self._g.read(top(session=session_id is not None, among=among), params)
        out = [(str(i), float(s)) for i, s in rows]
        if subset is not None and not among:
            out = [(i, s) for i, s in out if i in subset]
        self._prefetch([i for i, _ in out[:k]], edges=k > _WALK)
        return out[:k]
