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

Why hand-written: FTS5 calls ``bm25()`` through an auxiliary-function callback once per matching
row, and nearly all of a search's time goes to that callback; here a search is a few dozen numpy
operations over the query words' postings. The BM25 libraries do not fit a store that changes on
every write: ``bm25s`` scores from a static sparse matrix (each write would rebuild it) and
``rank_bm25`` scores every document in pure Python. Nor is the text kept: only the terms and their
postings.

Tokens are FTS5's: unicode61 (lower case, Latin diacritics removed, letters and digits make
words) then Porter stems from PyStemmer, whose Snowball "porter" is the 1980 algorithm; FTS5's
has three later rules, so a few words stem apart ("possibly", "apology", "trekked": 6 of the
6,614 distinct words of LoCoMo), and characters newer than SQLite's Unicode tables may split
differently. The tokenizer is `shared_core.store.terms`'s, which the FalkorDB backend's BM25 uses
too.

Layout. Each term maps to its postings, one int32 each (the row and the term's count there, see
`_packed`), ascending by row (stems and numbers in two dicts: see `_clear`); each row has its
length, session code, alive flag and id in numpy arrays. A search joins the query terms' postings
into one array, scores them all with numpy, sums per row (each term's rows ascend, so a stable
sort merges them) and takes the top k with `np.argpartition`. A removal only clears the row's
alive flag and the totals; while dead rows exist, a search counts only the live postings of each
term for its document frequency. Once dead rows are a quarter of all rows (and at least 64), the
live rows are renumbered and the postings rebuilt without the dead ones, dropping the terms no
live document holds. Every method holds the index's lock, and a search works on a joined copy of
the postings, so it never sees half of a write.

>>> index = InvertedKeywordIndex()
>>> index.add_many([("a", "Alice prefers oat milk", None), ("b", "Bob likes tea", None)])
>>> [node_id for node_id, _ in index.search("who preferred milk?", 5)]
['a']
"""

from __future__ import annotations

import math
import struct
import threading
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from itertools import chain, count
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from ...values.errors import AtlasError, InvalidInputError
from ..base import KeywordIndexBase
from ..terms import ASCII_FOLD, index_terms, query_stems, stem_word, words
from ._ints import number, numbers, shared

__all__ = ["InvertedKeywordIndex", "index_terms", "query_stems"]

# -- tokenizer: `shared_core.store.terms` (shared with the server backends), numbers keyed apart ----
_ASCII_FOLD = ASCII_FOLD
_words = words


class _StemCache(dict[str, str]):
    """word -> stem, bounded (see `shared_core.store.terms.stem_word`); a missing word's
    vocabulary key comes from `__missing__`, so `_keys` maps a text's words through
    ``__getitem__`` without a Python step per word found (numbers are keyed there each time,
    never cached)."""

    __slots__ = ()

    def __missing__(self, word: str) -> Term:
        return _number(word) if word.isdigit() else stem_word(word, self)


_stems = _StemCache()


def _stem(word: str) -> str:
    """The Porter stem of a word not in the cache (see `shared_core.store.terms.stem_word`)."""
    return stem_word(word, _stems)


#: A vocabulary key: a term's stem, or for an ASCII numeral of up to 18 digits without a leading
#: zero the number itself (an int takes 32 bytes, the string of its digits 64: numbers are often
#: the rarest words of a memory, a term of their own).
Term = str | int


def _key(term: str) -> Term:
    """The vocabulary key of a term.

    >>> _key("2023"), _key("007"), _key("run"), _key("0")
    (2023, '007', 'run', 0)
    """
    return _number(term) if term.isdigit() else term


def _keys(words: list[str]) -> list[Term]:
    """Porter stems through a bounded cache, numbers as `_key` makes them (numbers are never
    stemmed or cached)."""
    return list(map(_key_of, words))


#: a word's vocabulary key: the cache's own lookup, its `_StemCache.__missing__` on a miss
_key_of = cast(Callable[[str], Term], _stems.__getitem__)


def _number(digits: str) -> Term:
    """`_key` of a term of digits: a number below the size of `shared_core.store.memory._ints`'s table is its
    shared object (a number in a text is often a term of one row: 32 bytes saved a term)."""
    if digits.isascii() and len(digits) <= 18 and (digits[0] != "0" or len(digits) == 1):
        return shared(int(digits))
    return digits


# -- postings -------------------------------------------------------------------------------------
# A posting is one int32: ``row << 4 | (tf - 1)``, a row holding the term and the term's count
# there (1 to 16; a larger count takes several postings of the row, whose counts add up). A
# term's postings ascend by row, back to back: while the term is in one row only, once, that
# row's number as an int, the shared object of `shared_core.store.memory._ints` that the id -> row dict holds
# too (no object of its own, where a bytes object takes 48 bytes; about half of a vocabulary's
# terms occur once); else an immutable bytes object while there are at most 256 (1 KB: an
# append copies it, which costs less than a bytearray's 56-byte header and spare room on every
# rare term), then a bytearray extended in place (amortised O(1), 1/8 spare room). numpy never
# views a bytearray in place (a search reads a joined copy), so no buffer export can block a
# resize.
Postings = int | bytes | bytearray
_POSTING = np.dtype("<i4")
_pack = struct.Struct("<i").pack
_unpack = struct.Struct("<i").unpack
_TF_BITS = 4
_TF_MASK = (1 << _TF_BITS) - 1
_TF_CAP = 1 << _TF_BITS  # the largest count one posting holds
MAX_ROWS = 1 << (31 - _TF_BITS)  # rows per index (live ones, after a compaction): 134,217,728
_SMALL = 256 * _POSTING.itemsize


def _merged(postings: Postings | None, chunk: bytes) -> Postings:
    """``postings`` (None: none yet) followed by the postings in ``chunk``.

    >>> _merged(None, _pack(48)), _merged(3, _pack(64)) == _pack(48) + _pack(64), _merged(None, _pack(49))
    (3, True, b'1\\x00\\x00\\x00')
    """
    if type(postings) is bytearray:
        postings += chunk
        return postings
    if postings is None and len(chunk) == _POSTING.itemsize:
        one: int = _unpack(chunk)[0]
        if not one & _TF_MASK:
            return number(one >> _TF_BITS)
    joined = chunk if postings is None else bytes(_bytes(postings) + chunk)
    return joined if len(joined) <= _SMALL else bytearray(joined)


def _bytes(postings: Postings) -> bytes | bytearray:
    """The postings as bytes (a term once in one row is kept as that row's number)."""
    return _pack(postings << _TF_BITS) if isinstance(postings, int) else postings


def _packed(row: int, tf: int) -> bytes:
    """The postings of a row where a term occurs ``tf`` times: ``row << 4 | (tf - 1)`` while
    ``tf <= 16``, else as many postings of the row as it takes, their counts adding up to ``tf``.

    >>> import numpy as np
    >>> np.frombuffer(_packed(3, 1) + _packed(3, 40), dtype="<i4").tolist()  # 1; then 16 + 16 + 8
    [48, 63, 63, 55]
    """
    if tf <= _TF_CAP:
        return _pack(row << _TF_BITS | (tf - 1))
    full, rest = divmod(tf, _TF_CAP)
    return _pack(row << _TF_BITS | _TF_MASK) * full + (_pack(row << _TF_BITS | (rest - 1)) if rest else b"")


def _grown(array: npt.NDArray[Any], need: int) -> npt.NDArray[Any]:
    """``array`` if it has room for ``need`` items, else a copy with a quarter more room (17
    bytes a row over the four arrays: doubling left up to half of them spare)."""
    if need <= len(array):
        return array
    bigger = np.zeros(max(need, len(array) + len(array) // 4 + 16), dtype=array.dtype)
    bigger[:len(array)] = array
    return bigger


# -- the index --------------------------------------------------------------------------------------
class InvertedKeywordIndex(KeywordIndexBase):
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
        # a term's postings: stems and numbers apart, so that the stems' dict has str keys only
        # and is CPython's compact kind (16 bytes an entry, where a dict with any int key takes 24)
        self._vocab: dict[str, Postings] = {}
        self._nums: dict[int, Postings] = {}
        self._split: set[Term] = set()  # terms with a row over several postings (a count past _TF_CAP)
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
            return rows + sum(_POSTING.itemsize if isinstance(p, int) else len(p)
                              for p in chain(self._vocab.values(), self._nums.values()))

    # -- writes ---------------------------------------------------------------------------------
    def add(self, node_id: str, text: str, *, session_id: str | None = None) -> None:
        """Index one document, replacing any of the same id."""
        if not isinstance(text, str):
            raise InvalidInputError(f"keyword text must be a string, got {type(text).__name__} for {node_id!r}")
        terms = _keys(_words(text))
        counts = Counter(terms)
        with self._lock:
            self._room(1)  # first: an index that is full keeps the document it would replace
            if node_id in self._row:
                self._remove(node_id)
            row, words, nums = self._rows, self._vocab, self._nums
            once = _pack(row << _TF_BITS)
            for term, tf in counts.items():  # plain bytes appends: no numpy call for one row
                packed = once if tf == 1 else _packed(row, tf)
                if tf > _TF_CAP:
                    self._split.add(term)
                vocab: dict[Any, Postings] = nums if type(term) is int else words
                postings = vocab.get(term)
                if type(postings) is bytearray:
                    postings += packed
                else:
                    vocab[term] = _merged(postings, packed)
            self._length[row] = len(terms)
            self._session[row] = self._session_code(session_id)
            self._names[row] = node_id
            self._alive[row] = True
            self._row[node_id] = number(row)  # shared int objects (see shared_core.store.memory._ints)
            self._tokens += len(terms)
            self._rows = row + 1
            self._maybe_compact()

    def add_many(self, rows: Sequence[tuple[str, str, str | None]]) -> None:
        """Index many ``(id, text, session)`` rows; a later row replaces an earlier one of its id."""
        last = {node_id: (text, session) for node_id, text, session in rows}
        for node_id, (text, _) in last.items():
            if not isinstance(text, str):
                raise InvalidInputError(f"keyword text must be a string, got {type(text).__name__} for {node_id!r}")
        if len(last) <= 1:
            for node_id, (text, session) in last.items():
                self.add(node_id, text, session_id=session)
            return
        # a text's words are dropped as soon as they are stemmed (stems are shared strings): a
        # batch's worth of word strings at once fragments the heap
        fold, key_of = _ASCII_FOLD, _key_of  # `_keys(_words(text))`, inlined for ASCII text
        terms = [list(map(key_of, text.encode().translate(fold).decode().split())) if text.isascii()
                 else _keys(_words(text)) for text, _ in last.values()]
        with self._lock:
            self._room(len(last))
            for node_id in last:
                if node_id in self._row:
                    self._remove(node_id)
            self._append_many(list(last), terms, [session for _, session in last.values()])
            self._maybe_compact()

    def _room(self, count: int) -> None:
        """Room for ``count`` more rows in the arrays (compacting first if rows would run out)."""
        if self._rows + count > MAX_ROWS and self._dead:
            self._compact()
        if self._rows + count > MAX_ROWS:
            raise AtlasError(f"an InvertedKeywordIndex holds at most {MAX_ROWS:,} documents; "
                             f"it has {len(self._row):,} and was given {count:,} more")
        need = self._rows + count
        if need > len(self._length):
            self._names, self._length = _grown(self._names, need), _grown(self._length, need)
            self._session, self._alive = _grown(self._session, need), _grown(self._alive, need)

    def _session_code(self, session: str | None) -> int:
        if session is None:
            return -1
        code = self._sessions.get(session)
        if code is None:
            code = self._sessions[session] = len(self._sessions)
        return code

    def _append_many(self, ids: list[str], terms: list[list[Term]], sessions: list[str | None]) -> None:
        """New rows: their (term, row) counts with one `np.unique`, then each term's postings
        appended in one piece."""
        flat = list(chain.from_iterable(terms))
        # each term numbered by its first place in `flat`, in one pass (`setdefault` keeps the first)
        local: dict[Term, int] = {}
        term_ids = np.fromiter(map(local.setdefault, flat, count()), dtype=np.int64, count=len(flat))
        names = list(local)  # in first-place order, as the numbers ascend
        lengths = [len(doc) for doc in terms]
        n, first = len(ids), self._rows
        keys, tf = np.unique(term_ids * n + np.repeat(np.arange(n, dtype=np.int64), lengths),
                             return_counts=True)  # ordered by term, then row
        term_of, rows = keys // n, keys % n + first
        if len(tf) and tf.max() > _TF_CAP:  # rare: split those counts over several postings
            self._split.update(flat[t] for t in np.unique(term_of[tf > _TF_CAP]).tolist())
            pieces = -(-tf // _TF_CAP)
            spread = np.repeat(np.arange(len(tf)), pieces)
            counts = np.full(len(spread), _TF_CAP)
            counts[np.cumsum(pieces) - 1] = tf - _TF_CAP * (pieces - 1)
            term_of, rows, tf = term_of[spread], rows[spread], counts
        blob = ((rows << _TF_BITS) | (tf - 1)).astype(_POSTING).tobytes()
        # each term's postings, in the order of `names` (term_of ascends through every local id)
        starts = np.flatnonzero(np.diff(term_of, prepend=-1))
        stops = np.append(starts[1:], len(tf))[:len(starts)]
        # a term once in one row of the batch: that row, relative to the batch (else -1)
        lone = np.where((stops - starts == 1) & (tf[starts] == 1), rows[starts] - first, -1).tolist()
        end = first + n
        row_numbers = numbers(first, end)
        words, nums, one = self._vocab, self._nums, _POSTING.itemsize
        pack, small = _pack, _SMALL
        for term, lo, hi, row in zip(names, (starts * one).tolist(), (stops * one).tolist(), lone, strict=True):
            vocab: dict[Any, Postings] = nums if type(term) is int else words
            postings = vocab.get(term)
            if type(postings) is bytearray:
                postings += blob[lo:hi]
            elif postings is None:
                if row >= 0:  # a new term once in one row: `_merged`'s number, inlined
                    vocab[term] = row_numbers[row]
                else:  # in several rows, or more than once (`_merged`, inlined: as below)
                    vocab[term] = chunk if len(chunk := blob[lo:hi]) <= small else bytearray(chunk)
            else:  # `_merged`, inlined: bytes (or a row's number) joined, a bytearray past `_SMALL`
                joined = (postings if type(postings) is bytes else pack(cast(int, postings) << _TF_BITS)) + blob[lo:hi]
                vocab[term] = joined if len(joined) <= small else bytearray(joined)
        self._length[first:end] = lengths
        codes = {s: self._session_code(s) for s in dict.fromkeys(sessions)}  # a batch has few sessions
        self._session[first:end] = list(map(codes.__getitem__, sessions))
        self._names[first:end] = ids
        self._alive[first:end] = True
        self._row.update(zip(ids, row_numbers, strict=True))
        self._tokens += len(flat)
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
        if self._dead >= max(self.MIN_DEAD, self.DEAD_FRACTION * self._rows):
            self._compact()

    def _compact(self) -> None:
        """Renumber the live rows and rebuild the postings without the dead ones; terms no live
        row holds are dropped."""
        alive = self._alive[:self._rows]
        renumber = np.cumsum(alive, dtype=np.int32) - 1
        terms: list[Term] = [*self._vocab, *self._nums]
        raw = [*map(_bytes, self._vocab.values()), *map(_bytes, self._nums.values())]
        sizes = np.fromiter(map(len, raw), dtype=np.int64, count=len(terms)) // _POSTING.itemsize
        postings = np.frombuffer(b"".join(raw), dtype=_POSTING)
        keep = alive[postings >> _TF_BITS]
        sizes = np.add.reduceat(keep, np.cumsum(sizes) - sizes, dtype=np.int64) if len(terms) else sizes
        kept = postings[keep]
        blob = ((renumber[kept >> _TF_BITS] << _TF_BITS) | (kept & _TF_MASK)).astype(_POSTING).tobytes()
        ends = (np.cumsum(sizes) * _POSTING.itemsize).tolist()
        words: dict[str, Postings] = {}
        nums: dict[int, Postings] = {}
        for term, lo, hi in zip(terms, [0, *ends][:len(ends)], ends, strict=True):
            if hi > lo:
                if isinstance(term, int):
                    nums[term] = _merged(None, blob[lo:hi])
                else:
                    words[term] = _merged(None, blob[lo:hi])
        live = np.flatnonzero(alive)
        ids, lengths, sessions = self._names[live], self._length[live], self._session[live]
        split, codes, tokens = self._split, self._sessions, self._tokens
        self._clear()
        self._vocab, self._nums, self._sessions, self._tokens = words, nums, codes, tokens
        self._split = {t for t in split if t in words or t in nums}
        self._room(len(live))
        self._rows = len(live)
        self._names[:len(live)], self._length[:len(live)], self._session[:len(live)] = ids, lengths, sessions
        self._alive[:len(live)] = True
        self._row = dict(zip(ids.tolist(), numbers(0, len(live)), strict=True))

    def drop(self) -> None:
        """Forget everything."""
        with self._lock:
            self._clear()

    # -- search ---------------------------------------------------------------------------------
    def search(self, query: str, k: int, *, session_id: str | None = None,
               subset: Collection[str] | None = None) -> list[tuple[str, float]]:
        """Up to ``k`` (id, BM25 score) pairs, best first (equal scores: earlier documents first),
        among the documents of ``session_id`` and in ``subset`` when given."""
        stems = [_key(s) for s in query_stems(query)]
        if not stems or k <= 0:
            return []
        with self._lock:
            words, nums = self._vocab, self._nums
            found = [_bytes(p) for p in [nums.get(s) if isinstance(s, int) else words.get(s) for s in stems]
                     if p is not None]
            n_docs = len(self._row)
            code = -1 if session_id is None else self._sessions.get(session_id)
            if not found or n_docs == 0 or code is None:
                return []
            # the query terms' postings joined into one copy and read as one array (cheaper than
            # numpy's concatenate of many small arrays)
            postings = np.frombuffer(b"".join(found), dtype=_POSTING)
            rows = np.right_shift(postings, _TF_BITS, dtype=np.intp)  # intp: numpy indexes with it directly
            tf = (postings & _TF_MASK) + 1.0
            sizes = [len(p) // _POSTING.itemsize for p in found]  # postings per term
            if not self._split.isdisjoint(stems):  # a row over several postings of a term: add them up
                starts = np.cumsum([0, *sizes[:-1]])
                first = np.empty(len(rows), dtype=bool)
                np.not_equal(rows[1:], rows[:-1], out=first[1:])
                first[starts] = True
                runs = np.flatnonzero(first)
                rows, tf = rows[runs], np.add.reduceat(tf, runs)
                sizes = np.add.reduceat(first, starts, dtype=np.int64).tolist()
            if self._dead:  # dead rows count for nothing
                live = self._alive[rows]
                sizes = np.add.reduceat(live, np.cumsum([0, *sizes[:-1]]), dtype=np.int64).tolist()
                rows, tf = rows[live], tf[live]
                if not len(rows):
                    return []
            k1, b = self.k1, self.b
            weights = [(k1 + 1.0) * (max(math.log((n_docs - n + 0.5) / (n + 0.5)), 0.0) or 1e-6)
                       for n in sizes]  # idf * (k1 + 1), with sizes now the document frequencies
            norm = self._length[rows] * (k1 * b * n_docs / self._tokens) + k1 * (1.0 - b)
            scores = np.repeat(weights, sizes) * tf / (tf + norm)
            if len(found) > 1:  # sum per row: each term's rows ascend, so a stable sort merges runs
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

    def _among(self, rows: npt.NDArray[np.intp], code: int,
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
