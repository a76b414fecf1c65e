"""`InvertedKeywordIndex`: the same rankings as FTS5's bm25(), its tokenizer, filters, removals
(document frequencies and average length as if freshly built), odd queries and threads; the
behaviour both keyword indexes share runs against each."""

from __future__ import annotations

import math
import random
import threading
from collections import Counter
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared_core import FTS5KeywordIndex, InProcessBackend, InvalidInputError, InvertedKeywordIndex
from shared_core.store.memory.inverted_index import index_terms, query_stems

Index = InvertedKeywordIndex | FTS5KeywordIndex

_NAMES = ["Alice", "Bob", "Carla", "Dmitri", "Elena", "Farid", "Grace", "Hiro", "Ines", "Jonas"]
_VERBS = ["prefers", "preferred", "likes", "liked", "bought", "visits", "visited", "cooks", "cooked", "plans",
          "planned", "reads", "painted", "collects", "forgot", "remembers", "recommended", "hates", "booked"]
_THINGS = ["oat milk", "black coffee", "green tea", "a red bicycle", "the Lisbon hotel", "spicy ramen",
           "jazz records", "a mystery novel", "hiking boots", "the piano lessons", "a birthday cake",
           "sourdough bread", "the train tickets", "vintage cameras", "running shoes", "a yoga class",
           "the museum tour", "strawberry jam", "a camping trip", "the football match"]
_TAILS = ["on Monday", "every morning", "in June", "with her sister", "after work", "near the river",
          "for the party", "last weekend", "at the market", "because it was cheap", "", "", ""]


def _corpus(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        s = f"{rng.choice(_NAMES)} {rng.choice(_VERBS)} {rng.choice(_THINGS)} {rng.choice(_TAILS)}".strip()
        if i % 5 == 0:
            s += f" and {rng.choice(_VERBS)} {rng.choice(_THINGS)}"
        out.append(s + ".")
    return out


CORPUS = _corpus(400)
QUERIES = ["What does Alice prefer?", "who liked coffee", "milk", "Bob planned a camping trip in June",
           "green tea every morning", "the", "train tickets booked", "piano", "Which novel did Grace read?",
           "sister river", "cake party", "running", "cooking ramen", "museum", "jazz vinyl records",
           "Hiro visited the market last weekend", "cheap bicycle", "hates football", "yoga", "jam"]


def _build(kind: type[Index], rows: list[tuple[str, str, str | None]]) -> Index:
    index: Index = FTS5KeywordIndex.create() if kind is FTS5KeywordIndex else InvertedKeywordIndex()
    index.add_many(rows)
    return index


def _rows(texts: list[str], sessions: int = 3) -> list[tuple[str, str, str | None]]:
    return [(f"m{i}", t, f"s{i % sessions}") for i, t in enumerate(texts)]


def _assert_same_ranking(got: list[tuple[str, float]], want: list[tuple[str, float]], tol: float = 1e-9) -> None:
    """Same ids with the same scores, best first; ids of equal scores may come in any order."""
    assert len(got) == len(want)
    for (_, a), (_, b) in zip(got, want, strict=True):
        assert a == pytest.approx(b, rel=tol, abs=0)
    groups_got: dict[float, set[str]] = {}
    groups_want: dict[float, set[str]] = {}
    for (i, a), (j, b) in zip(got, want, strict=True):
        groups_got.setdefault(float(f"{b:.9g}"), set()).add(i)
        groups_want.setdefault(float(f"{b:.9g}"), set()).add(j)
        assert a > 0
    assert groups_got == groups_want


def _reference(texts: dict[str, str], query: str, k1: float = 1.2, b: float = 0.75) -> list[tuple[str, float]]:
    """BM25 as FTS5's bm25() defines it, written out plainly over the index's own terms."""
    docs = {i: Counter(index_terms(t)) for i, t in texts.items()}
    lengths = {i: sum(c.values()) for i, c in docs.items()}
    avg = sum(lengths.values()) / len(docs)
    out: dict[str, float] = {}
    for term in query_stems(query):
        n_t = sum(term in c for c in docs.values())
        if not n_t:
            continue
        idf = math.log((len(docs) - n_t + 0.5) / (n_t + 0.5))
        idf = idf if idf > 0 else 1e-6
        for i, c in docs.items():
            if term in c:
                tf = c[term]
                out[i] = out.get(i, 0.0) + idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * lengths[i] / avg))
    return sorted(out.items(), key=lambda p: -p[1])


# -- agreement with FTS5 and with the formula ---------------------------------------------------------
@pytest.mark.parametrize("query", QUERIES)
def test_rankings_and_scores_agree_with_fts5(query: str) -> None:
    rows = _rows(CORPUS)
    fts, inverted = _build(FTS5KeywordIndex, rows), _build(InvertedKeywordIndex, rows)
    want = fts.search(query, 1000)
    assert want, query  # every query matches something, so the comparison is not vacuous
    _assert_same_ranking(inverted.search(query, 1000), want)
    assert [i for i, _ in inverted.search(query, 5)] == [i for i, _ in inverted.search(query, 1000)][:5]


def test_repeated_words_count_as_in_fts5() -> None:
    texts = [f"{'coffee ' * n}and tea" for n in (1, 2, 3, 15, 16, 17, 33, 40)] + CORPUS[:60]
    texts += ["tea " * 20 + "coffee", "Coffee, coffee! COFFEE? tea tea"]
    rows = _rows(texts)
    fts = _build(FTS5KeywordIndex, rows)
    single = InvertedKeywordIndex()
    for node_id, text, session in rows:  # one at a time and in a batch: the same postings
        single.add(node_id, text, session_id=session)
    for index in (_build(InvertedKeywordIndex, rows), single):
        for query in ("coffee", "tea", "coffee tea", "Alice coffee"):
            got = index.search(query, 1000)
            _assert_same_ranking(got, fts.search(query, 1000))
            _assert_same_ranking(got, _reference(dict((i, t) for i, t, _ in rows), query))


def test_the_session_filter_agrees_with_fts5() -> None:
    rows = _rows(CORPUS)
    fts, inverted = _build(FTS5KeywordIndex, rows), _build(InvertedKeywordIndex, rows)
    for query in QUERIES[:8]:
        _assert_same_ranking(inverted.search(query, 1000, session_id="s1"), fts.search(query, 1000, session_id="s1"))


def test_scores_follow_the_bm25_formula_after_random_writes_and_compactions() -> None:
    rng = random.Random(3)
    index = InvertedKeywordIndex()
    index.MIN_DEAD = 8  # compact often: the test crosses several compactions
    texts: dict[str, str] = {}
    pool = _corpus(300, seed=11)
    for step in range(600):
        if texts and rng.random() < 0.4:
            victim = rng.choice(sorted(texts))
            index.remove(victim)
            del texts[victim]
        else:
            node_id = f"d{rng.randrange(250)}"  # ids come back: re-adds replace
            texts[node_id] = rng.choice(pool)
            index.add(node_id, texts[node_id])
        if step % 60 == 59:
            for query in QUERIES[:6]:
                _assert_same_ranking(index.search(query, 1000), _reference(texts, query))
    assert len(index) == len(texts)


_TEXTS = st.one_of(st.sampled_from(["", "?!"]), st.lists(  # wordless texts are common: they have broken batches
    st.sampled_from(["coffee", "tea", "Tea!", "milk", "runs", "running", "the", "?", "é", "x1", "7", "2023", "007"]),
    max_size=20
).map(" ".join))
_OPS = st.lists(st.one_of(
    st.tuples(st.just("add"), st.integers(0, 30), _TEXTS, st.sampled_from([None, "s1", "s2"])),
    st.tuples(st.just("batch"), st.lists(st.tuples(st.integers(0, 30), _TEXTS), max_size=8)),
    st.tuples(st.just("remove"), st.integers(0, 30)),
), max_size=40)


@settings(max_examples=60, deadline=None)
@given(ops=_OPS)
def test_property_any_writes_score_as_the_formula(ops: list[tuple]) -> None:  # type: ignore[type-arg]
    index = InvertedKeywordIndex()
    index.MIN_DEAD = 2  # compactions happen within the few operations of an example
    texts: dict[str, str] = {}
    for op in ops:
        if op[0] == "add":
            index.add(f"d{op[1]}", op[2], session_id=op[3])
            texts[f"d{op[1]}"] = op[2]
        elif op[0] == "batch":
            index.add_many([(f"d{i}", text, None) for i, text in op[1]])
            texts.update((f"d{i}", text) for i, text in op[1])
        else:
            index.remove(f"d{op[1]}")
            texts.pop(f"d{op[1]}", None)
    assert len(index) == len(texts)
    for query in ("coffee", "tea milk", "running the", "é x1", "2023 coffee", "7 007"):
        want = _reference(texts, query) if texts else []
        _assert_same_ranking(index.search(query, 100), want)


def test_removals_leave_the_statistics_of_a_freshly_built_index() -> None:
    rows = _rows(CORPUS)
    index = InvertedKeywordIndex()
    index.add_many(rows)
    gone = {f"m{i}" for i in range(0, 400, 3)}  # enough to trigger a compaction
    for node_id in sorted(gone):
        index.remove(node_id)
    kept = [r for r in rows if r[0] not in gone]
    fresh = _build(InvertedKeywordIndex, kept)
    fts = _build(FTS5KeywordIndex, kept)
    for query in QUERIES:
        got = index.search(query, 1000)
        assert got == fresh.search(query, 1000)
        _assert_same_ranking(got, fts.search(query, 1000))
    assert len(index) == len(kept)


def test_removals_before_a_compaction_count_only_live_documents() -> None:
    rows = _rows(CORPUS[:100])
    index = _build(InvertedKeywordIndex, rows)
    for node_id in ("m1", "m2", "m3"):  # far below MIN_DEAD: tombstones only
        index.remove(node_id)
    fresh = _build(InvertedKeywordIndex, rows[4:] + rows[:1])
    for query in QUERIES:
        assert dict(index.search(query, 1000)) == pytest.approx(dict(fresh.search(query, 1000)), rel=1e-12)


# -- behaviour both indexes share -----------------------------------------------------------------------
BOTH: list[type[Index]] = [InvertedKeywordIndex, FTS5KeywordIndex]


@pytest.fixture(params=BOTH, ids=["inverted", "fts5"])
def make(request: pytest.FixtureRequest) -> Callable[[list[tuple[str, str, str | None]]], Index]:
    return lambda rows: _build(request.param, rows)


def test_stemming_finds_other_forms(make: Callable[..., Index]) -> None:
    index = make([("a", "Alice preferred the cheaper flights", None), ("b", "Bob runs daily", None)])
    assert [i for i, _ in index.search("who prefers a cheap flight?", 5)] == ["a"]
    assert [i for i, _ in index.search("running", 5)] == ["b"]


def test_case_and_diacritics_are_folded(make: Callable[..., Index]) -> None:
    index = make([("a", "Meeting at the CAFÉ in Malmö", None), ("b", "naïve résumé advice", None),
                  ("c", "plain text", None)])
    assert [i for i, _ in index.search("cafe malmo", 5)] == ["a"]
    assert [i for i, _ in index.search("Naive RESUME", 5)] == ["b"]
    assert [i for i, _ in index.search("café", 5)] == ["a"]


def test_session_and_subset_filters(make: Callable[..., Index]) -> None:
    index = make([("a", "coffee one", "s1"), ("b", "coffee two", "s2"), ("c", "coffee three", "s1"),
                  ("d", "tea four", "s1")])
    assert {i for i, _ in index.search("coffee", 10, session_id="s1")} == {"a", "c"}
    assert index.search("coffee", 10, session_id="unknown") == []
    assert {i for i, _ in index.search("coffee", 10, subset={"b", "c", "zzz"})} == {"b", "c"}
    assert {i for i, _ in index.search("coffee", 10, session_id="s1", subset={"b", "c"})} == {"c"}
    assert index.search("coffee", 10, subset=set()) == []


def test_k_limits_and_orders_results(make: Callable[..., Index]) -> None:
    index = make(_rows(CORPUS))
    full = index.search("Alice coffee", 1000)
    assert len(full) > 10
    assert index.search("Alice coffee", 10) == full[:10]
    assert [s for _, s in full] == sorted((s for _, s in full), reverse=True)
    assert index.search("Alice coffee", 0) == [] and index.search("Alice coffee", -3) == []


def test_re_adding_an_id_replaces_its_text(make: Callable[..., Index]) -> None:
    index = make([("a", "old words about gardening", None), ("b", "other things", None)])
    index.add("a", "new words about sailing")
    assert index.search("gardening", 5) == []
    assert [i for i, _ in index.search("sailing", 5)] == ["a"]
    assert len(index) == 2


def test_removal_and_unknown_ids(make: Callable[..., Index]) -> None:
    index = make([("a", "alpha beta", None), ("b", "beta gamma", None)])
    index.remove("a")
    index.remove("never-added")
    assert [i for i, _ in index.search("alpha beta", 5)] == ["b"]
    assert len(index) == 1
    index.add("a", "alpha again")
    assert [i for i, _ in index.search("alpha", 5)] == ["a"]


@pytest.mark.parametrize("query", ["", "   ", "?!", '"', "'", '""', "AND", "OR", "NOT", "NEAR", "*", "a*", "^",
                                   "NEAR(x y)", "col:term", "(", ")", "-", "+", "\x00", "🙂", "_", "a_b"])
def test_odd_queries_never_fail(make: Callable[..., Index], query: str) -> None:
    index = make([("a", "Meet NEAR the AND gate or not", None), ("b", "a b c", None)])
    assert isinstance(index.search(query, 5), list)


def test_fts5_operators_are_plain_words(make: Callable[..., Index]) -> None:
    index = make([("a", "The shop is near the station and not far", None), ("b", "nothing here", None)])
    for query in ("NEAR", "AND", "NOT", "near*", '"near"'):
        assert [i for i, _ in index.search(query, 5)] == ["a"], query


def test_stopword_only_queries_fall_back_to_all_words(make: Callable[..., Index]) -> None:
    index = make([("a", "to be or not to be", None), ("b", "something else entirely", None)])
    assert [i for i, _ in index.search("to be", 5)] == ["a"]


def test_drop_empties_the_index(make: Callable[..., Index]) -> None:
    index = make([("a", "alpha", None)])
    index.drop()
    assert len(index) == 0


# -- the inverted index on its own ----------------------------------------------------------------------
def test_an_empty_index_and_empty_texts() -> None:
    index = InvertedKeywordIndex()
    assert index.search("anything", 5) == [] and len(index) == 0
    empty = index.nbytes()
    index.add_many([("a", "", None), ("b", "...", None), ("c", "words", None)])
    assert len(index) == 3 and [i for i, _ in index.search("words", 5)] == ["c"]
    assert "a" in index and "zzz" not in index
    index.add_many([])
    assert len(index) == 3
    index.add_many([("d", ":", "s"), ("e", "", "s")])  # a batch without a single word
    assert len(index) == 5 and index.search("words", 5, session_id="s") == []
    index.add_many([(f"m{i}", "five more words in here", None) for i in range(100)])
    assert index.nbytes() >= empty + 100 * 5 * 4  # four bytes a posting at least


def test_compacting_an_index_of_empty_texts() -> None:
    index = InvertedKeywordIndex()
    index.add_many([(f"e{i}", "?!", None) for i in range(100)])
    for i in range(80):  # past MIN_DEAD and a quarter of the rows: a compaction with no terms at all
        index.remove(f"e{i}")
    assert len(index) == 20 and index.search("anything", 5) == []
    index.add("w", "a word")
    assert [i for i, _ in index.search("word", 5)] == ["w"]


def test_a_batch_with_a_repeated_id_keeps_the_last_text() -> None:
    index = InvertedKeywordIndex()
    index.add_many([("a", "first text", None), ("b", "bee", None), ("a", "second text", "s")])
    assert len(index) == 2
    assert index.search("first", 5) == []
    assert [i for i, _ in index.search("second", 5, session_id="s")] == ["a"]


def test_frequent_terms_and_repeated_words() -> None:
    index = InvertedKeywordIndex()
    index.add_many([(f"m{i}", f"common word {i}", None) for i in range(100)])  # "common": past the small lists
    for i in range(100, 140):
        index.add(f"m{i}", f"common word {i}")
    index.add("rep", "echo " * 70_000)  # 70,000 occurrences: counted exactly
    assert len(index.search("common", 1000)) == 140
    assert [i for i, _ in index.search("echo", 1)] == ["rep"]


def test_rows_run_out_only_when_live_documents_fill_them(monkeypatch: pytest.MonkeyPatch) -> None:
    from shared_core import AtlasError
    from shared_core.store.memory import inverted_index

    monkeypatch.setattr(inverted_index, "MAX_ROWS", 100)
    index = InvertedKeywordIndex()
    index.add_many([(f"m{i}", f"word {i}", None) for i in range(100)])
    with pytest.raises(AtlasError, match="at most 100 documents"):
        index.add("one-more", "word")
    index.remove("m5")  # a dead row: the next add compacts and fits
    index.add("one-more", "word again")
    assert len(index) == 100
    assert {i for i, _ in index.search("again", 5)} == {"one-more"}


def test_non_string_text_is_refused() -> None:
    index = InvertedKeywordIndex()
    with pytest.raises(InvalidInputError, match="string"):
        index.add("a", 3)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        InvertedKeywordIndex(b=2.0)
    assert len(index) == 0


TRICKY = ["Préférés: the runners' RUNNING shoes", "e-mail x²y ½ ① U.S.A. 3.14 can't foo_bar", "ΣΟΦΊΑ σοφός µ ſ",
          "Ærøskøbing façade ŒUVRE İstanbul ǅemal", "cafe\u0301 e\u0301te\u0301 a\u0305b", "日本語テキスト 한국어",
          "as is was has caresses ponies skies generously connection", "हिन्दी भाषा", "private \ue000 use"]


def _fts5_tokens(text: str) -> list[str]:
    import sqlite3

    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='porter unicode61')")
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
    conn.execute("INSERT INTO t VALUES (?)", (text,))
    return [term for (term,) in conn.execute("SELECT term FROM v ORDER BY offset")]


@pytest.mark.parametrize("text", TRICKY)
def test_tokens_are_those_of_fts5_porter_unicode61(text: str) -> None:
    assert index_terms(text) == _fts5_tokens(text)


def test_tokenizer_details() -> None:
    assert index_terms("Préférés: the runners' RUNNING shoes") == ["prefer", "the", "runner", "run", "shoe"]
    assert index_terms("as is was has") == ["as", "is", "wa", "ha"]  # under 3 bytes: not stemmed
    assert index_terms("12345 1990s") == ["12345", "1990"]
    assert query_stems("What did ALICE prefer? Alice, prefer!") == ["alic", "prefer"]
    assert query_stems(" ".join(f"w{i}" for i in range(50)), max_terms=4) == ["w0", "w1", "w2", "w3"]


def test_the_in_process_backend_uses_it() -> None:
    part = InProcessBackend(dim=4).partition("ns", create=True)
    assert part is not None and isinstance(part.keywords, InvertedKeywordIndex)


def test_threads_writing_and_searching_at_once() -> None:
    index = InvertedKeywordIndex()
    index.MIN_DEAD = 16
    errors: list[BaseException] = []
    barrier = threading.Barrier(6)
    texts = _corpus(200, seed=5)

    def writer(w: int) -> None:
        try:
            barrier.wait()
            for i in range(300):
                index.add(f"w{w}-{i}", texts[(w * 31 + i) % len(texts)], session_id=f"s{w}")
                if i % 3 == 2:
                    index.remove(f"w{w}-{i - 1}")
                if i % 50 == 0:
                    index.add_many([(f"b{w}-{i}-{j}", texts[j], None) for j in range(20)])
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    def reader() -> None:
        try:
            barrier.wait()
            for i in range(400):
                for node_id, score in index.search(QUERIES[i % len(QUERIES)], 50):
                    assert node_id is not None and score > 0
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(3)]
    threads += [threading.Thread(target=reader) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(index) == 3 * (300 - 100) + 3 * 6 * 20
    alive = {f"w{w}-{i}": texts[(w * 31 + i) % len(texts)] for w in range(3) for i in range(300) if i % 3 != 1}
    alive |= {f"b{w}-{i}-{j}": texts[j] for w in range(3) for i in range(0, 300, 50) for j in range(20)}
    for query in QUERIES[:5]:
        _assert_same_ranking(index.search(query, 5000), _reference(alive, query))


def test_a_term_in_one_document_keeps_its_lone_posting_as_an_int() -> None:
    index = InvertedKeywordIndex()
    index.add("a", "zebra crossing")
    index.add_many([("b", "zebra stripes", None), ("c", "okapi", None)])
    assert type(index._vocab["okapi"]) is int and type(index._vocab["stripe"]) is int
    assert isinstance(index._vocab["zebra"], bytes)  # two documents
    assert index.nbytes() > 0 and [i for i, _ in index.search("zebra okapi", 5)] == ["c", "a", "b"]
    for node_id in "ab":
        index.remove(node_id)
    index._compact()
    assert list(index._vocab) == ["okapi"] and index.search("okapi", 1)[0][0] == "c"
    index.add("d", "okapi again")
    assert [i for i, _ in index.search("okapi", 5)] == ["c", "d"]


def test_a_lone_posting_is_the_row_number_object_the_id_map_holds() -> None:
    index = InvertedKeywordIndex()
    index.add_many([(f"n{i}", f"word{i} common", None) for i in range(2000)])  # rows past CPython's small ints
    index.add("single", "solitary solitary common")  # twice in its row: not a lone posting
    index.add("one", "hermit common")
    assert all(index._vocab[f"word{i}"] is index._row[f"n{i}"] for i in range(0, 2000, 7))
    assert index._vocab["hermit"] is index._row["one"] and isinstance(index._vocab["solitari"], bytes)
    for i in range(0, 1000):
        index.remove(f"n{i}")  # compactions renumber the rows
    index._compact()
    assert index._dead == 0 and index._row["n1999"] == 999
    assert all(index._vocab[f"word{i}"] is index._row[f"n{i}"] for i in range(1000, 2000, 7))
    assert index._vocab["hermit"] is index._row["one"]
    assert index.search("solitary", 5)[0][0] == "single" and index.search("word1500", 5)[0][0] == "n1500"
    scores = dict(index.search("hermit solitary word1999", 5))
    assert set(scores) == {"one", "single", "n1999"} and scores["single"] > scores["n1999"]  # tf 2 against 1


def test_numbers_in_texts_share_the_row_number_objects() -> None:
    index = InvertedKeywordIndex()
    index.add_many([(f"n{i}", f"item {i}", None) for i in range(1500)])
    big = 10 ** 15
    index.add("big", f"item {big}")
    by_value = {k: k for k in index._nums}
    assert by_value[1234] is index._row["n1234"]  # the same shared object
    assert big in by_value and [i for i, _ in index.search(str(big), 5)] == ["big"]


def test_numbers_are_kept_as_ints_and_found_as_written() -> None:
    index = InvertedKeywordIndex()
    index.add_many([("a", "room 2023 code 007", None), ("b", "room 7 and 0", None), ("c", "year ٢٠٢٣", None)])
    assert set(index._nums) == {2023, 7, 0} and {"007", "٢٠٢٣"} <= set(index._vocab)  # those two stay text
    assert all(type(k) is str for k in index._vocab)
    assert [i for i, _ in index.search("2023", 5)] == ["a"]
    assert [i for i, _ in index.search("007", 5)] == ["a"] and [i for i, _ in index.search("7", 5)] == ["b"]
    assert [i for i, _ in index.search("٢٠٢٣", 5)] == ["c"] and [i for i, _ in index.search("0", 5)] == ["b"]


@settings(max_examples=40, deadline=None)
@given(text=st.text(alphabet=st.characters(max_codepoint=127), max_size=60))
def test_ascii_texts_tokenize_as_fts5_does(text: str) -> None:
    """Every ASCII character (the fast path: a byte table and `str.split`, no regex)."""
    assert index_terms(text) == _fts5_tokens(text)


def test_a_text_that_lowers_to_ascii_tokenizes_as_fts5_does() -> None:
    text = "\u212aELVIN and \u212a9 RUNS"  # the Kelvin sign lowers to "k"
    assert index_terms(text) == _fts5_tokens(text) == ["kelvin", "and", "k9", "run"]


def _state(index: InvertedKeywordIndex) -> tuple[object, ...]:
    rows = index._rows
    return (list(index._vocab.items()), list(index._nums.items()), index._split, list(index._row.items()), rows,
            index._names[:rows].tolist(), index._length[:rows].tolist(), index._session[:rows].tolist(),
            index._alive[:rows].tolist(), list(index._sessions.items()), index._tokens, index._dead)


@settings(max_examples=40, deadline=None)
@given(batches=st.lists(st.lists(st.tuples(st.integers(0, 40), _TEXTS, st.sampled_from([None, "s1", "s2"])),
                                 max_size=12), max_size=6))
def test_a_batch_leaves_the_index_its_documents_one_by_one_leave(
        batches: list[list[tuple[int, str, str | None]]]) -> None:
    """Words stemmed once a batch (words sharing a stem, numbers, repeated words, repeated ids):
    the same postings, in the same order, as adding the batch's last texts of each id one by one."""
    many, one = InvertedKeywordIndex(), InvertedKeywordIndex()
    many.MIN_DEAD = one.MIN_DEAD = 1 << 20  # no compaction: one-by-one adds would take it at other times
    for batch in batches:
        rows = [(f"d{i}", f"{text} running runs RUN 007 12 {text}", session) for i, text, session in batch]
        many.add_many(rows)
        last = {node_id: (text, session) for node_id, text, session in rows}
        for node_id, (text, session) in last.items():
            one.add(node_id, text, session_id=session)
    assert _state(many) == _state(one)


def test_the_stem_cache_keys_words_alike_when_full_or_cleared(monkeypatch: pytest.MonkeyPatch) -> None:
    """`_keys` through the bounded cache (a miss stems, a full cache is cleared): the same keys
    whether the cache holds the words or not; numbers are keyed but never cached."""
    from shared_core.store import terms
    from shared_core.store.memory import inverted_index as ii

    text = "Running runners ran 2023 007 a an is on ЁЖИК walked walking 12 éclair"
    want = ["run", "runner", "ran", 2023, "007", "a", "an", "is", "on", "ёжик", "walk", "walk", 12, "eclair"]
    monkeypatch.setattr(terms, "STEM_CACHE_MAX", 3)  # cleared again and again within one text
    ii._stems.clear()
    assert ii._keys(ii._words(text)) == want
    assert ii._keys(ii._words(text)) == want  # now from the cache, as far as it holds them
    assert not any(word.isdigit() for word in ii._stems)
    monkeypatch.setattr(terms, "STEM_CACHE_MAX", 1 << 14)
    assert ii._keys(ii._words(text)) == want and "is" in ii._stems and "2023" not in ii._stems


def test_a_batch_with_counts_over_a_posting_leaves_what_one_by_one_leaves() -> None:
    """Counts past 16 (several postings of a row) for terms first met anywhere in the batch."""
    rows = [("a", "tea and 7 cakes", None), ("b", "cakes " + "coffee " * 17 + "7 " * 20, "s1"),
            ("c", "coffee tea " + "tea " * 33, None), ("d", "milk", "s1")]
    many, one = InvertedKeywordIndex(), InvertedKeywordIndex()
    many.add_many(rows)
    for node_id, text, session in rows:
        one.add(node_id, text, session_id=session)
    assert _state(many) == _state(one)
    assert many._split == {"coffe", 7, "tea"}
