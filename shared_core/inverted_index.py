"""`InvertedKeywordIndex`: BM25 over in-memory posting lists, the in-process default `KeywordIndex`.

It ranks as SQLite FTS5's ``bm25()`` does with its defaults (k1 = 1.2, b = 0.75) on a
``tokenize='porter unicode61'`` table, so it can replace `FTS5KeywordIndex` without changing
rankings (scores agree to about 1e-14):

    score(d) = sum over query words t found in d of
               idf(t) * tf(t, d) * (k1 + 1) / (tf(t, d) + k1 * (1 - b + b * len(d) / avglen))
    idf(t)   = ln((N - n_t + 0.5) / (n_t + 0.5)), or 1e-6 where that is not positive

with N the number of documents, n_t those containing t, len(d) a document's number of tokens
and avglen their mean, all over the documents indexed now. Query words are OR-ed (a document
needs one of them); two query words with one stem count twice, as in FTS5.

Why hand-written: FTS5 calls ``bm25()`` through an auxiliary-function callback once per
matching row, which made a 200-result search over 10,000 memories cost 0.41 ms, nearly all of it
in that callback; here a search is a dozen numpy operations over the query words' postings. The
BM25 libraries do not fit a store that changes on every write: ``bm25s`` scores from a static
sparse matrix (each write would rebuild it) and ``rank_bm25`` scores every document in pure Python.

Layout. Each term maps to its postings, 6-byte records ``(row int32, tf uint16)`` in row order:
an immutable ``bytes`` while a term has at most 16 (most terms are rare, and a numpy array costs
112 bytes of header), then a numpy array that grows by half when full. Each row has its length,
session code and alive flag in numpy arrays. A removal only clears the alive flag and the totals;
while dead rows exist, a search counts each term's live postings for its document frequency and
skips the dead ones. Once dead rows are a quarter of all rows (and at least 64), the live rows are
renumbered and the postings rebuilt without them, dropping terms no live document holds. Every
method holds the index's lock, arrays are replaced (never resized in place) when they grow, and
``bytes`` are never mutated, so a search never sees half of a write.

>>> index = InvertedKeywordIndex()
>>> index.add_many([("a", "Alice prefers oat milk", None), ("b", "Bob likes tea", None)])
>>> [node_id for node_id, _ in index.search("who preferred milk?", 5)]
['a']
"""

from __future__ import annotations

import math
import re
import struct
import threading
from collections import Counter
from collections.abc import Collection, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import Stemmer

from .errors import InvalidInputError
from .keyword_index import _STOPWORDS

__all__ = ["InvertedKeywordIndex", "index_terms", "query_stems"]

# -- tokenizer: FTS5's unicode61 (remove_diacritics=1), then its porter stemmer ----------------------
# letters, digits and private-use characters; everything else separates, "_" included
_TOKEN = re.compile(r"(?:[^\W_]|[\ue000-\uf8ff\U000f0000-\U0010fffd])+")
_ASCII_TOKEN = re.compile(r"[a-z0-9]+", re.ASCII)  # the same on lower-cased ASCII text, 40% faster
_STEM_CACHE_MAX = 1 << 16  # words; about 8 MB when full, shared by every index of the process
_stemmer = Stemmer.Stemmer("porter")  # Snowball's Porter: the algorithm FTS5's porter tokenizer runs
_stem_lock = threading.Lock()  # a Stemmer object must not be used by two threads at once
_stems: dict[str, str] = {}


# The combining marks unicode61 drops as diacritics; every other mark separates tokens, as in FTS5.
_DIACRITICS = (*range(0x300, 0x305), *range(0x306, 0x30D), 0x30F, 0x311, 0x31B, *range(0x323, 0x329), 0x32D,
               0x32E, 0x330, 0x331)


def _fold_table() -> dict[int, str | None]:
    """What unicode61 does beyond `str.lower`, as a `str.translate` table: a Latin letter with
    one diacritic becomes its base letter (remove_diacritics=1), a lone diacritic disappears, and
    the lower-case letters with another case-folded form take it ("ς" -> "σ", "ſ" -> "s")."""
    import unicodedata

    table: dict[int, str | None] = dict.fromkeys(_DIACRITICS)
    for cp in (*range(0x80, 0x1000), *range(0x1E00, 0x1F00)):  # Latin, Greek, Cyrillic
        ch = chr(cp)
        parts = unicodedata.normalize("NFD", ch)
        if len(parts) == 2 and parts[0].isascii() and ord(parts[1]) in table:
            table[cp] = parts[0]
        elif unicodedata.category(ch) == "Ll" and len(ch.casefold()) == 1 and ch.casefold() != ch:
            table[cp] = ch.casefold()
    return table


_FOLD = _fold_table()


def _words(text: str) -> list[str]:
    """The tokens unicode61 makes of ``text``: lower-cased, Latin diacritics removed."""
    text = text.lower()
    if text.isascii():
        return _ASCII_TOKEN.findall(text)
    return _TOKEN.findall(text.translate(_FOLD))


def _stem_all(words: list[str]) -> list[str]:
    """Porter stems, through a bounded cache. As in FTS5, words under 3 or over 64 bytes stay as
    they are; so do numbers (no suffix to strip), which are not cached."""
    cache = _stems
    out = [cache.get(w) for w in words]
    if None not in out:
        return out  # type: ignore[return-value]
    fresh: dict[str, str] = {}
    for w in words:
        if w not in cache and w not in fresh:
            size = len(w) if w.isascii() else len(w.encode())
            fresh[w] = w if size < 3 or size > 64 or w.isdigit() else ""
    todo = [w for w, s in fresh.items() if not s]
    if todo:
        with _stem_lock:
            stems = _stemmer.stemWords(todo)
        if len(cache) + len(todo) > _STEM_CACHE_MAX:
            cache.clear()  # bounded; the next texts refill it
        for w, s in zip(todo, stems, strict=True):
            fresh[w] = cache[w] = s
    return [fresh[w] if s is None else s for w, s in zip(words, out, strict=True)]


def index_terms(text: str) -> list[str]:
    """The terms a document is indexed under, in order: unicode61 tokens, Porter-stemmed.

    >>> index_terms("Préférés: the runners' RUNNING shoes")
    ['prefer', 'the', 'runner', 'run', 'shoe']
    """
    return _stem_all(_words(text))


def query_stems(query: str, *, max_terms: int = 32) -> list[str]:
    """The stems a query looks for: its distinct words less stopwords (all of them if it has only
    stopwords), the first ``max_terms`` of them, stemmed; what `query_terms` and FTS5 make of it.
    FTS5's operators are plain words here.

    >>> query_stems('What milk does Alice prefer? "milk" AND NEAR *')
    ['milk', 'alic', 'prefer', 'near']
    """
    words = _words(query)
    kept = [w for w in words if w not in _STOPWORDS] or words
    return _stem_all(list(dict.fromkeys(kept))[:max_terms])


# -- postings -------------------------------------------------------------------------------------
POSTING = np.dtype([("row", "<i4"), ("tf", "<u2")])  # 6 bytes, packed
_pack = struct.Struct("<iH").pack
_SMALL = 16 * POSTING.itemsize  # a term's postings stay a bytes object up to 16 records
_TF_MAX = 0xFFFF  # a word repeated more often in one memory counts this often (BM25 saturates long before)
Records = npt.NDArray[np.void]


class _Block:
    """The postings of a frequent term: a records array, the first ``used`` of them valid."""

    __slots__ = ("data", "used")

    def __init__(self, records: Records) -> None:
        self.data = np.empty(max(len(records) * 3 // 2, 2 * _SMALL // POSTING.itemsize), dtype=POSTING)
        self.data[:len(records)] = records
        self.used = len(records)

    def extend(self, records: Records) -> None:
        need = self.used + len(records)
        if need > len(self.data):  # grow into a new array; a search in progress keeps the old one
            bigger = np.empty(max(need, len(self.data) * 3 // 2), dtype=POSTING)
            bigger[:self.used] = self.data[:self.used]
            self.data = bigger
        self.data[self.used:need] = records
        self.used = need

    def append(self, row: int, tf: int) -> None:
        if self.used == len(self.data):
            self.extend(np.array([(row, tf)], dtype=POSTING))
            return
        self.data[self.used] = (row, tf)
        self.used += 1


Postings = bytes | _Block


def _records(postings: Postings) -> Records:
    if type(postings) is bytes:
        return np.frombuffer(postings, dtype=POSTING)
    assert isinstance(postings, _Block)
    return postings.data[:postings.used]


def _merged(postings: Postings | None, records: Records) -> Postings:
    """``postings`` (None: none yet) followed by ``records``: bytes while small, else a `_Block`."""
    if isinstance(postings, _Block):
        postings.extend(records)
        return postings
    if postings is None:
        postings = b""
    if len(postings) + records.nbytes <= _SMALL:
        return postings + records.tobytes()
    return _Block(np.concatenate([np.frombuffer(postings, dtype=POSTING), records]))


def _grown(array: npt.NDArray[Any], need: int) -> npt.NDArray[Any]:
    """``array`` if it has room for ``need`` items, else a copy with at least twice the room."""
    if need <= len(array):
        return array
    bigger = np.zeros(max(need, 2 * len(array)), dtype=array.dtype)
    bigger[:len(array)] = array
    return bigger


# -- the index --------------------------------------------------------------------------------------
class InvertedKeywordIndex:
    """BM25 over in-memory posting lists (see the module docstring). Thread-safe."""

    MIN_DEAD = 64  # compaction waits for at least this many removed rows ...
    DEAD_FRACTION = 0.25  # ... and for this fraction of all rows

    def __init__(self, *, k1: float = 1.2, b: float = 0.75) -> None:
        if not (math.isfinite(k1) and k1 >= 0 and 0 <= b <= 1):
            raise InvalidInputError(f"BM25 needs k1 >= 0 and 0 <= b <= 1, got k1={k1!r}, b={b!r}")
        self.k1, self.b = float(k1), float(b)
        self._lock = threading.RLock()
        self._clear()

    def _clear(self) -> None:
        self._vocab: dict[str, Postings] = {}
        self._row: dict[str, int] = {}  # id -> row
        self._rows = 0  # rows in use, dead ones included
        self._names = np.empty(16, dtype=object)  # row -> id (None once removed)
        self._length = np.zeros(16, dtype=np.int32)  # tokens per row
        self._session = np.zeros(16, dtype=np.int32)  # session code per row (-1: none)
        self._alive = np.zeros(16, dtype=bool)
        self._sessions: dict[str, int] = {}
        self._tokens = 0  # total length of the live rows
        self._dead = 0

    # -- size -----------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._row)

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._row

    def nbytes(self) -> int:
        """Bytes of the postings and per-row arrays (not of the dicts of ids and terms)."""
        with self._lock:
            rows = self._names.nbytes + self._length.nbytes + self._session.nbytes + self._alive.nbytes
            return rows + sum(p.data.nbytes if isinstance(p, _Block) else len(p) for p in self._vocab.values())

    # -- writes ---------------------------------------------------------------------------------
    def add(self, node_id: str, text: str, *, session_id: str | None = None) -> None:
        """Index one document, replacing any of the same id."""
        self.add_many([(node_id, text, session_id)])

    def add_many(self, rows: Sequence[tuple[str, str, str | None]]) -> None:
        """Index many ``(id, text, session)`` rows; a later row replaces an earlier one of its id."""
        last = {node_id: (text, session) for node_id, text, session in rows}
        for node_id, (text, _) in last.items():
            if not isinstance(text, str):
                raise InvalidInputError(f"keyword text must be a string, got {type(text).__name__} for {node_id!r}")
        if not last:
            return
        if len(last) == 1:
            [(text, _)] = last.values()
            terms = [index_terms(text)]
        else:  # the whole batch's words through one cache pass and one stemmer call
            words = [_words(text) for text, _ in last.values()]
            flat = _stem_all([w for ws in words for w in ws])
            ends = np.cumsum([len(ws) for ws in words]).tolist()
            terms = [flat[lo:hi] for lo, hi in zip([0, *ends[:-1]], ends, strict=True)]
        docs = [(node_id, t, session) for (node_id, (_, session)), t in zip(last.items(), terms, strict=True)]
        with self._lock:
            for node_id in last:
                if node_id in self._row:
                    self._remove(node_id)
            self._reserve(self._rows + len(docs))
            if len(docs) == 1:
                self._append_one(*docs[0])
            else:
                self._append_many(docs)
            self._maybe_compact()

    def _reserve(self, rows: int) -> None:
        if rows > len(self._length):
            self._names, self._length = _grown(self._names, rows), _grown(self._length, rows)
            self._session, self._alive = _grown(self._session, rows), _grown(self._alive, rows)

    def _session_code(self, session: str | None) -> int:
        if session is None:
            return -1
        code = self._sessions.get(session)
        if code is None:
            code = self._sessions[session] = len(self._sessions)
        return code

    def _append_one(self, node_id: str, terms: list[str], session: str | None) -> None:
        """One document, with scalar writes (cheaper than the batch path's numpy calls for one)."""
        row, vocab = self._rows, self._vocab
        for term, tf in Counter(terms).items():
            postings = vocab.get(term)
            if isinstance(postings, _Block):
                postings.append(row, min(tf, _TF_MAX))
            elif postings is None:
                vocab[term] = _pack(row, min(tf, _TF_MAX))
            elif len(postings) < _SMALL:
                vocab[term] = postings + _pack(row, min(tf, _TF_MAX))
            else:
                vocab[term] = _merged(postings, np.array([(row, min(tf, _TF_MAX))], dtype=POSTING))
        self._publish([node_id], [len(terms)], [session])

    def _append_many(self, docs: Sequence[tuple[str, list[str], str | None]]) -> None:
        """Many documents: their (term, row) counts with one `np.unique`, then each term's new
        postings appended in one piece."""
        flat = [t for _, terms, _ in docs for t in terms]
        local = {t: i for i, t in enumerate(dict.fromkeys(flat))}
        names = list(local)
        lengths = [len(terms) for _, terms, _ in docs]
        term_ids = np.fromiter(map(local.__getitem__, flat), dtype=np.int64, count=len(flat))
        rows = np.repeat(np.arange(len(docs), dtype=np.int64), lengths)
        keys, tf = np.unique(term_ids * len(docs) + rows, return_counts=True)  # by term, then row
        records = np.empty(len(keys), dtype=POSTING)
        records["row"] = keys % len(docs) + self._rows
        records["tf"] = np.minimum(tf, _TF_MAX)
        starts = np.flatnonzero(np.diff(keys // len(docs), prepend=-1)).tolist()
        vocab = self._vocab
        for term_id, lo, hi in zip((keys[starts] // len(docs)).tolist(), starts, [*starts[1:], len(keys)],
                                   strict=True):
            term = names[term_id]
            vocab[term] = _merged(vocab.get(term), records[lo:hi])
        self._publish([node_id for node_id, _, _ in docs], lengths, [s for _, _, s in docs])

    def _publish(self, ids: list[str], lengths: list[int], sessions: list[str | None]) -> None:
        """Make rows ``_rows ..`` visible: their ids, lengths and sessions (room already reserved)."""
        first, end = self._rows, self._rows + len(ids)
        self._length[first:end] = lengths
        self._session[first:end] = [self._session_code(s) for s in sessions]
        self._names[first:end] = ids
        self._alive[first:end] = True
        self._row.update(zip(ids, range(first, end), strict=True))
        self._tokens += sum(lengths)
        self._rows = end

    def remove(self, node_id: str) -> None:
        """Forget a document (an unknown id is ignored)."""
        with self._lock:
            if node_id in self._row:
                self._remove(node_id)
                self._maybe_compact()

    def _remove(self, node_id: str) -> None:
        row = self._row.pop(node_id)
        self._names[row] = None
        self._alive[row] = False
        self._tokens -= int(self._length[row])
        self._dead += 1

    def _maybe_compact(self) -> None:
        """Renumber the live rows and rebuild the postings without the dead ones, once dead rows
        reach ``DEAD_FRACTION`` of all rows (and ``MIN_DEAD``)."""
        if self._dead < max(self.MIN_DEAD, self.DEAD_FRACTION * self._rows):
            return
        n = self._rows
        alive = self._alive[:n]
        renumber = np.cumsum(alive, dtype=np.int32) - 1
        terms = list(self._vocab)
        parts = [_records(p) for p in self._vocab.values()]
        sizes = np.fromiter(map(len, parts), dtype=np.int64, count=len(parts))
        records = np.concatenate(parts) if parts else np.empty(0, dtype=POSTING)
        keep = alive[records["row"]]
        records = records[keep]
        records["row"] = renumber[records["row"]]
        sizes = np.add.reduceat(keep, np.cumsum(sizes) - sizes, dtype=np.int64) if len(parts) else sizes
        ends = np.cumsum(sizes).tolist()
        vocab: dict[str, Postings] = {}
        for term, lo, hi in zip(terms, [0, *ends[:-1]], ends, strict=True):
            if hi > lo:
                vocab[term] = _merged(None, records[lo:hi])
        live = np.flatnonzero(alive)
        ids, lengths, sessions = self._names[live], self._length[live], self._session[live]
        codes, tokens = self._sessions, self._tokens
        self._clear()
        self._vocab, self._sessions, self._tokens = vocab, codes, tokens
        self._reserve(len(live))
        self._rows = len(live)
        self._names[:len(live)], self._length[:len(live)], self._session[:len(live)] = ids, lengths, sessions
        self._alive[:len(live)] = True
        self._row = {node_id: r for r, node_id in enumerate(ids.tolist())}

    def drop(self) -> None:
        """Forget everything."""
        with self._lock:
            self._clear()

    # -- search ---------------------------------------------------------------------------------
    def search(self, query: str, k: int, *, session_id: str | None = None,
               subset: Collection[str] | None = None) -> list[tuple[str, float]]:
        """Up to ``k`` (id, BM25 score) pairs, best first (equal scores: earlier documents first),
        among the documents of ``session_id`` and in ``subset`` when given."""
        stems = query_stems(query)
        if not stems or k <= 0:
            return []
        with self._lock:
            vocab = self._vocab
            parts = [_records(p) for p in map(vocab.get, stems) if p is not None]
            n_docs = len(self._row)
            code = -1 if session_id is None else self._sessions.get(session_id)
            if not parts or n_docs == 0 or code is None:
                return []
            hits = np.concatenate(parts) if len(parts) > 1 else parts[0]
            rows, tf = hits["row"], hits["tf"].astype(np.float64)
            sizes = [len(p) for p in parts]
            if self._dead:  # document frequencies count live postings only; dead ones score nothing
                live = self._alive[rows]
                sizes = np.add.reduceat(live, np.cumsum([0, *sizes[:-1]]), dtype=np.int64).tolist()
                rows, tf = rows[live], tf[live]
                if not len(rows):
                    return []
            k1, b = self.k1, self.b
            weights = [(k1 + 1.0) * (max(math.log((n_docs - n + 0.5) / (n + 0.5)), 0.0) or 1e-6)
                       for n in sizes]  # idf * (k1 + 1); FTS5 floors a non-positive idf at 1e-6
            norm = self._length[rows] * (k1 * b * n_docs / self._tokens) + k1 * (1.0 - b)
            scores = np.repeat(weights, sizes) * tf / (tf + norm)
            if len(parts) > 1:  # sum per row: each term's rows ascend, so a stable sort merges runs
                order = np.argsort(rows, kind="stable")
                rows, scores = rows[order], scores[order]
                first = np.empty(len(rows), dtype=bool)
                first[0] = True
                np.not_equal(rows[1:], rows[:-1], out=first[1:])
                firsts = np.flatnonzero(first)
                rows, scores = rows[firsts], np.add.reduceat(scores, firsts)
            keep = self._among(rows, code, subset)
            if keep is not None:
                rows, scores = rows[keep], scores[keep]
            best = _top(scores, k)
            return list(zip(self._names[rows[best]].tolist(), scores[best].tolist(), strict=True))

    def _among(self, rows: npt.NDArray[np.int32], code: int,
               subset: Collection[str] | None) -> npt.NDArray[np.bool_] | None:
        """Which of ``rows`` are in the session of ``code`` (-1: any) and in ``subset`` (None: all)."""
        keep: npt.NDArray[np.bool_] | None = None
        if code >= 0:
            keep = self._session[rows] == code
        if subset is not None:
            allowed = np.zeros(self._rows, dtype=bool)
            row = self._row
            allowed[[r for r in map(row.get, subset) if r is not None]] = True
            keep = allowed[rows] if keep is None else keep & allowed[rows]
        return keep


def _top(scores: npt.NDArray[np.float64], k: int) -> npt.NDArray[np.intp]:
    """Positions of the ``k`` highest scores, best first; equal scores keep their order."""
    if len(scores) > k:
        kth = scores[np.argpartition(-scores, k - 1)[k - 1]]
        pool = np.flatnonzero(scores >= kth)
        return pool[np.argsort(-scores[pool], kind="stable")[:k]]
    return np.argsort(-scores, kind="stable")
