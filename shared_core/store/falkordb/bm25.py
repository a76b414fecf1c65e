"""BM25's Cypher statements for the FalkorDB backend (`shared_core.store.falkordb.indexes.FalkorKeywordIndex`
and `paths.gather` run them; `cypher` re-exports them with every other statement).

A document is its terms (`shared_core.store.terms.index_terms`) in ``n.terms`` under a range index,
with their number (``n.tlen``) and their repeats (``n.reps``: each term again for each occurrence
after its first, `repeats`), written with the terms, so that scoring a (term, document) row reads
neither the list nor counts in it; the (:Atlas) node counts the documents and their tokens and
numbers them in the order they were indexed (``kwseq``: equal scores rank the earlier first). A
search scores as the in-process `InvertedKeywordIndex` does, to the same floats: in one statement
for a small namespace (`bm25_counted`), else the counts (`BM25_COUNTS`) then the exact, pruned top
k (`bm25`; `bm25_heavy` for a query of heavy terms only, which scores no document twice) or every
match (`bm25_all`). Each statement's ``short`` variant sums a query of fewer
than 9 terms the plain way (`indexes.short`).

A large namespace also keeps each stem's document count, a ``(:Term {t, df})`` node under a range
index (`TERM_INDEX`), so that its search reads a stem's count with one index lookup
(`BM25_KEPT_COUNTS`) instead of counting its postings. The counts exist only once the (:Atlas)
node's ``dfs`` flag is set, by a one-time count (`BACKFILL_COUNTS`) when the namespace reaches
`indexes.ONE_STATEMENT_BELOW` documents (the backend's ``term_counts_from``); from then on every
statement that changes a memory's terms changes them in the same statement (`counted`:
`SET_TERMS`, `REMOVE_TERMS`, `cypher.DELETE_NODE`, `cypher.WRITE_NODES`), so a smaller
namespace's writes carry none of their index updates. The flag only ever turns on.

What a statement costs the server grows with the rows it carries: a list carried along a row
(the top k so far, the weights) is copied at each ``WITH`` of each row, so the pruned search reads
its terms in subqueries (``CALL {}``) that carry only what they need.

>>> "LIMIT $k" in bm25_all(session=True, among=False)
True
"""

from __future__ import annotations

__all__ = ["BACKFILL_COUNTS", "BACKFILL_REPEATS", "BM25_COUNTS", "BM25_KEPT_COUNTS", "HEAVY", "REMOVE_TERMS",
           "SET_TERMS", "TERMS_COUNT", "TERM_COUNTS", "TERM_INDEX", "TERM_RECOUNT", "UNCOUNTED", "add_counts", "bm25",
           "bm25_all", "bm25_counted", "bm25_heavy", "bm25_scan", "counted", "distinct", "drop_counts", "repeats"]


def repeats(terms: list[str]) -> list[str]:
    """A document's repeated terms: each term once more for each occurrence after its first, in
    order (a term's count in the document is one more than its count here; `_scored`).

    >>> repeats(["tea", "milk", "tea", "tea", "cup"])
    ['tea', 'tea']
    """
    seen: set[str] = set()
    out: list[str] = []
    for t in terms:
        if t in seen:
            out.append(t)
        seen.add(t)
    return out


#: `repeats` of ``terms`` in Cypher (the backfill's)
def _repeats(terms: str) -> str:
    return f"[i IN range(0, size({terms}) - 1) WHERE {terms}[i] IN {terms}[0..i] | {terms}[i]]"


# -- the per-term document counts of a large namespace (see the module docstring) ------------------
TERM_INDEX = "CREATE INDEX FOR (w:Term) ON (w.t)"


def distinct(terms: str) -> str:
    """The distinct elements of the list expression ``terms``, in first-seen order (Cypher has
    no function for it)."""
    return f"[i IN range(0, size({terms}) - 1) WHERE NOT {terms}[i] IN {terms}[0..i] | {terms}[i]]"


def counted(updates: str) -> str:
    """``updates`` (clauses) only where the namespace keeps its counts: evaluated inside the
    statement, after the (:Atlas) node ``c`` was matched, so a write never misses a count that
    the one-time count (`BACKFILL_COUNTS`, which holds the graph's write lock as any write
    does) turned on."""
    return f"FOREACH (_ IN CASE WHEN c.dfs THEN [1] ELSE [] END | {updates}) "


def drop_counts(terms: str) -> str:
    """Each distinct stem of the list expression ``terms`` (a document's terms that it no
    longer holds; null: none) counted once a document less."""
    return (f"FOREACH (t IN {distinct(f'coalesce({terms}, [])')} | "
            "MERGE (w:Term {t: t}) SET w.df = coalesce(w.df, 0) - 1)")


def add_counts(terms: str) -> str:
    """Each distinct stem of the list expression ``terms`` (a document's new terms) counted
    once a document more."""
    return f"FOREACH (t IN {distinct(terms)} | MERGE (w:Term {{t: t}}) SET w.df = coalesce(w.df, 0) + 1)"


# each query stem's kept count, with the namespace's counts (no row: no document holds any)
BM25_KEPT_COUNTS = ("MATCH (c:Atlas) WITH coalesce(c.docs, 0) AS docs, coalesce(c.tokens, 0) AS tokens "
                    "UNWIND $stems AS t MATCH (w:Term {t: t}) WHERE w.df > 0 RETURN docs, tokens, t, w.df")
# the one-time count: a namespace of at least $from documents without the flag gets every stem
# counted from the memories' terms and the flag, in one statement (a write: it holds the graph's
# write lock, so no write runs between the count and the flag). Idempotent: the counts are set,
# not added (any left from before set to 0 first), and a flagged namespace is left alone
BACKFILL_COUNTS = ("MATCH (c:Atlas) WHERE c.dfs IS NULL AND coalesce(c.docs, 0) >= $from SET c.dfs = true "
                   "WITH c OPTIONAL MATCH (w:Term) SET w.df = 0 "
                   "WITH DISTINCT c MATCH (n:Memory) WHERE n.terms IS NOT NULL "
                   f"UNWIND {distinct('n.terms')} AS t WITH t, count(*) AS df "
                   "MERGE (w:Term {t: t}) SET w.df = df")
# each stem's count as the statements keep it, and as its postings give it (tests)
TERM_COUNTS = "MATCH (w:Term) WHERE w.df <> 0 RETURN w.t, w.df ORDER BY w.t"
TERM_RECOUNT = (f"MATCH (n:Memory) WHERE n.terms IS NOT NULL UNWIND {distinct('n.terms')} AS t "
                "RETURN t, count(*) ORDER BY t")
# what a write that may have made the namespace large enough answers: its documents while it
# keeps no counts (then `indexes.FalkorKeywordIndex.count_terms` may run `BACKFILL_COUNTS`), else null
UNCOUNTED = "CASE WHEN c.dfs THEN null ELSE c.docs END"

# rows are [id, terms, repeats]; answers `UNCOUNTED`
SET_TERMS = ("MATCH (c:Atlas) WITH c, coalesce(c.kwseq, 0) AS base "
             "UNWIND range(0, size($rows) - 1) AS j WITH c, base, j, $rows[j] AS row "
             "MATCH (n:Memory {id: row[0]}) WITH c, base, j, row, n, n.terms AS old "
             "SET n.terms = row[1], n.tlen = size(row[1]), n.reps = row[2], n.kwseq = base + j + 1 "
             f"{counted(drop_counts('old') + ' ' + add_counts('row[1]'))}"
             "WITH c, base, toInteger(sum(CASE WHEN old IS NULL THEN 1 ELSE 0 END)) AS docs, "
             "toInteger(sum(size(row[1]) - coalesce(size(old), 0))) AS tokens "
             "SET c.docs = coalesce(c.docs, 0) + docs, c.tokens = coalesce(c.tokens, 0) + tokens, "
             f"c.kwseq = base + size($rows) RETURN {UNCOUNTED}")
REMOVE_TERMS = ("MATCH (n:Memory {id: $id}) WHERE n.terms IS NOT NULL WITH n, n.terms AS terms "
                "SET n.terms = null, n.tlen = null, n.reps = null, n.kwseq = null WITH terms MATCH (c:Atlas) "
                f"SET c.docs = c.docs - 1, c.tokens = c.tokens - size(terms) {counted(drop_counts('terms'))}")
TERMS_COUNT = "MATCH (c:Atlas) RETURN coalesce(c.docs, 0)"
# a graph written before ``n.tlen`` and ``n.reps`` (its (:Atlas) node without ``reps``): each
# document's, from its terms, in one statement, then the flag (nothing for a flagged graph; a new
# graph's (:Atlas) node is made with it: `cypher.COUNTER`, `cypher.WRITE_NODES`)
BACKFILL_REPEATS = ("MATCH (c:Atlas) WHERE c.reps IS NULL SET c.reps = true "
                    "WITH c MATCH (n:Memory) WHERE n.terms IS NOT NULL "
                    f"SET n.tlen = size(n.terms), n.reps = {_repeats('n.terms')}")


def _keep(session: bool, among: bool) -> str:
    """The filter of a BM25 search's documents ``n`` (true: none)."""
    where = (["n.session_id = $session"] if session else []) + (["n.id IN $ids"] if among else [])
    return " AND ".join(where) if where else "true"


def _sum_after_first(parts: str) -> str:
    """The sum of the list ``parts`` as numpy's ``np.add.reduceat`` adds a run (the in-process
    index's sum per document), so that equal scores stay equal bit for bit: the first element
    plus the pairwise sum of the others, which below 8 is a plain sum from 0.0, else 8 running
    sums combined in a tree, then the remainder (query terms are fewer than numpy's 128-element
    block). Each branch is a filtered comprehension, so only the one that applies is evaluated
    (FalkorDB evaluates every branch of a CASE)."""
    r = "(size(p) - 1)"
    r8 = f"({r} - {r} % 8)"
    acc = [f"reduce(s = p[{1 + j}], i IN range({9 + j}, {r8}, 8) | s + p[i])" for j in range(8)]
    tree = f"(({acc[0]} + {acc[1]}) + ({acc[2]} + {acc[3]})) + (({acc[4]} + {acc[5]}) + ({acc[6]} + {acc[7]}))"
    return (f"coalesce(head([p IN [{parts}] WHERE size(p) < 9 | p[0] + reduce(s = 0.0, x IN p[1..] | s + x)] + "
            f"[p IN [{parts}] WHERE size(p) >= 9 | p[0] + reduce(s = {tree}, i IN range({r8} + 1, {r}) | s + p[i])]), "
            "0.0)")


# each query stem's document count, with the namespace's counts (no row: no document holds any)
BM25_COUNTS = ("MATCH (c:Atlas) WITH coalesce(c.docs, 0) AS docs, coalesce(c.tokens, 0) AS tokens "
               "UNWIND $stems AS t MATCH (m:Memory) WHERE t IN m.terms RETURN docs, tokens, t, count(m)")


def _sum(short: bool) -> str:
    """The sum of the list ``parts`` (see `_sum_after_first`); ``short``: the query has fewer than
    9 terms, so the sum is the plain one (the only branch that can apply, without the choice)."""
    return "coalesce(parts[0] + reduce(s = 0.0, x IN parts[1..] | s + x), 0.0)" if short else \
        _sum_after_first("parts")


def _score(*, short: bool = False) -> str:
    """``score``: the BM25 of each row's document ``n`` from its own terms, the weights ``$ws`` of
    the query terms ``$terms`` and the norm's ``$lw`` (per token) and ``$n0``, summed in query
    order (`_sum`, with ``short``). The terms' list is only tested for each query term; a held
    term's count is one more than its count in ``n.reps``, the length ``n.tlen``.

    >>> "reduce(s = 0.0, x IN parts[1..]" in _score(short=True)
    True
    """
    return ("WITH n, n.terms AS ts WITH n, ts, toFloat(n.tlen) * $lw + $n0 AS norm "
            "WITH n, [i IN range(0, size($terms) - 1) WHERE $terms[i] IN ts | "
            "[tf IN [toFloat(1 + size([x IN n.reps WHERE x = $terms[i]]))] | $ws[i] * tf / (tf + norm)][0]] AS parts "
            f"WITH n, {_sum(short)} AS score ")


def _scored(*, ws: str, lw: str, short: bool = False) -> str:
    """`_score` of rows ``(i, n)``, one per document ``n`` holding the query term ``$terms[i]`` (each
    occurrence in the query its own rows, in query order): each row's share is computed from that
    term alone, then the shares of each document are collected, in the order the rows came (the
    query's), and summed as `_score` sums them, to the same floats. ``ws`` and ``lw`` are variables
    of the rows (`bm25_counted` computes them on the server), which this form does not carry through
    a ``DISTINCT``; the term's count in the document is read once a (document, term) pair, one more
    than its count in the document's repeats (``n.reps``), and the document's length is ``n.tlen``:
    the terms' list is not read. Cheaper than `_score` over the few hundred postings of a small
    namespace, dearer over thousands (`bm25_all` keeps `_score`).

    >>> "collect(w * tf / (tf + norm)) AS parts" in _scored(ws="ws", lw="lw", short=True)
    True
    """
    return (f"WITH n, {ws}[i] AS w, $terms[i] AS t, {lw} AS lw, n.reps AS rs, n.tlen AS len "
            "WITH n, w, toFloat(1 + size([x IN rs WHERE x = t])) AS tf, toFloat(len) * lw + $n0 AS norm "
            f"WITH n, collect(w * tf / (tf + norm)) AS parts WITH n, {_sum(short)} AS score ")


def _rows_of_terms(session: bool, among: bool) -> str:
    """The rows ``(i, n)`` of `_scored`: each query term's documents (of ``$session``, among
    ``$ids``, when asked), query term after query term."""
    return ("UNWIND range(0, size($terms) - 1) AS i MATCH (n:Memory) WHERE $terms[i] IN n.terms AND "
            f"{_keep(session, among)} ")


def bm25_counted(*, session: bool, among: bool, tail: str = "RETURN n.id, score", short: bool = False) -> str:
    """`bm25_all` in one statement: the query stems' document counts (``$stems``, distinct), the
    weights and the norm computed from them on the server with the in-process expressions
    (``idf * (k1 + 1)``, the same floats: `FalkorKeywordIndex.plan` computes them in Python for
    the two-statement search), then every document holding a query term scored. The search of a
    small namespace, where one round trip costs more than counting the postings twice.
    ``short``: the query has fewer than 9 terms (see `_score`)."""
    idf = "log((docs - d + 0.5) / (d + 0.5))"
    return ("MATCH (c:Atlas) WITH coalesce(c.docs, 0) AS docs, toFloat(coalesce(c.tokens, 0)) AS tokens "
            "WHERE docs > 0 AND tokens > 0.0 "
            "UNWIND $stems AS t OPTIONAL MATCH (m:Memory) WHERE t IN m.terms "
            "WITH docs, tokens, t, count(m) AS df WITH docs, tokens, collect([t, df]) AS dfs "
            "WITH docs, dfs, $k1 * $b * docs / tokens AS lw, "
            "[t IN $terms | [p IN dfs WHERE p[0] = t | p[1]][0]] AS ds "
            f"WITH lw, [d IN ds | ($k1 + 1.0) * (CASE WHEN {idf} > 0.0 THEN {idf} ELSE 0.000001 END)] AS ws "
            f"{_rows_of_terms(session, among)}{_scored(ws='ws', lw='lw', short=short)}"
            f"WITH n, score ORDER BY score DESC, n.kwseq LIMIT $k {tail}")


def bm25_all(*, session: bool, among: bool, tail: str = "RETURN n.id, score", short: bool = False) -> str:
    """`bm25` without the pruning: every document holding one of ``$sterms`` scored (fewer
    statements' work where the query's terms are in few documents, `FalkorKeywordIndex.plan`);
    ``short`` as in `bm25_counted`. Each document once, scored against every query term
    (`_score`): over the thousands of postings of a large namespace this cost the server less
    than `bm25_counted`'s rows of (term, document)."""
    return ("UNWIND $sterms AS t MATCH (n:Memory) WHERE t IN n.terms "
            f"WITH DISTINCT n WHERE {_keep(session, among)} {_score(short=short)}"
            f"WITH n, score ORDER BY score DESC, n.kwseq LIMIT $k {tail}")


def bm25(*, session: bool, among: bool, tail: str = "RETURN n.id, score", short: bool = False) -> str:
    """BM25 as `shared_core.store.memory.inverted_index.InvertedKeywordIndex` scores it, for
    the parameters `FalkorKeywordIndex.plan` derives from `BM25_COUNTS`: the ``$k`` best (of
    ``$session``, among ``$ids``, when asked), best first, equal scores in the order they were
    indexed; ``tail`` projects ``n`` and ``score``; ``short`` as in `bm25_counted`.

    Exact, without scoring every document that holds a query term (a MaxScore-style pruning):
    a term's share of a score is ``w * tf / (tf + norm)`` with ``norm > 0``, below its weight
    ``w``, and a sum of shares is at least each of them (floating-point addition of positive
    numbers is monotone). With the query's terms that some document holds sorted by weight,
    heaviest first (``$sterms``, ``$bs``; ``$rest[z]`` the sum of ``$bs[z:]``, rounded up), the
    first ``$paired`` the heavy ones and ``$light`` the sum of the weights of the others:

    1. ``theta``, a lower bound of the k-th best score: the exact k-th best of the documents
       holding a pair of heavy terms (the ``$seeds``, an index intersection each), 0 if fewer
       than k. Those documents are scored exactly; any other holds at most one heavy term;
    2. such a document whose heaviest term is at place a and its second at place z scores below
       ``bs[a] + rest[z]``; so every one that may reach ``theta`` holds a term of weight
       >= theta, or a pair (a, z) of lighter ones with ``bs[a] + rest[z] >= theta`` (intersected);
    3. a term of weight >= theta is read whole, but each of its documents is kept only if its
       own share plus ``$light`` reaches ``theta`` (a bound of the score of a document holding no
       other heavy term; one holding two was scored in step 1): one share a document, not its
       whole score. With ``theta`` 0 (fewer than k documents hold two heavy terms) every one is
       kept, unread;
    4. the documents kept, those of the pairs and the seeds' best k scored exactly; the k best.

    A term in many documents weighs little: it is read whole only when its weight may reach the
    k-th score, and then one share of each of its documents is computed.

    >>> "$light" in bm25(session=False, among=False)
    True
    """
    keep = _keep(session, among)
    score = _score(short=short)
    # the reads of step 3 and of the pairs run in subqueries: a row carries only what it needs
    # (a list carried along is copied at each projection of each row)
    return (
        f"{_seeded(keep, score)}WITH top, theta "
        "CALL { WITH theta "
        f"{_HEAVY_TERMS}"
        f"OPTIONAL MATCH (n:Memory) WHERE t IN n.terms AND {keep} "
        "WITH theta, w, n, CASE WHEN theta > 0.0 THEN toFloat(1 + size([x IN n.reps WHERE x = t])) END AS tf, "
        "toFloat(n.tlen) * $lw + $n0 AS norm "
        "RETURN collect(CASE WHEN theta <= 0.0 OR w * tf / (tf + norm) + $light >= theta THEN n END) AS kept } "
        "CALL { WITH theta "
        "UNWIND reduce(acc = [], a IN [p IN range(0, size($bs) - 1) WHERE $bs[p] < theta] | acc + "
        "[z IN range(a + 1, size($bs) - 1) WHERE $bs[z] < theta AND $bs[a] + $rest[z] >= theta "
        "AND NOT (a < $paired AND z < $paired) | [$sterms[a], $sterms[z]]]) + [['', '']] AS pr "
        "OPTIONAL MATCH (n:Memory) WHERE pr[0] IN n.terms AND pr[1] IN n.terms "
        "RETURN collect(DISTINCT n) AS more } "
        "UNWIND top + kept + more AS n "
        f"WITH DISTINCT n WHERE {keep} {score}"
        f"WITH n, score ORDER BY score DESC, n.kwseq LIMIT $k {tail}")


def _seeded(keep: str, score: str) -> str:
    """Step 1 of `bm25` and `bm25_heavy`: ``top`` and ``best``, the k best documents holding a
    pair of heavy terms (``$seeds``) and their scores, and ``theta``, the lower bound of the
    k-th score."""
    return ("UNWIND $seeds AS pr OPTIONAL MATCH (n:Memory) WHERE pr[0] IN n.terms AND pr[1] IN n.terms "
            f"WITH DISTINCT n WHERE n IS NOT NULL AND {keep} {score}"
            "WITH n, score ORDER BY score DESC, n.kwseq LIMIT $k WITH collect(n) AS top, collect(score) AS best "
            "WITH top, best, CASE WHEN size(best) >= $k THEN best[$k - 1] * (1.0 - 1e-9) ELSE 0.0 END AS theta ")


#: the rows ``(theta, t, w)`` of step 3: each query term of weight >= ``theta`` (`bm25`: and a
#: row of no term, so that the subquery answers a row)
_HEAVY_TERMS = ("UNWIND [p IN range(0, size($bs) - 1) WHERE $bs[p] >= theta | p] + [-1] AS p "
                "WITH theta, CASE WHEN p < 0 THEN '' ELSE $sterms[p] END AS t, "
                "CASE WHEN p < 0 THEN 0.0 ELSE $bs[p] END AS w ")


def bm25_heavy(*, session: bool, among: bool, tail: str = "RETURN n.id, score", short: bool = False) -> str:
    """`bm25` where every query term some document holds is a heavy one (``$light`` is 0: at
    most `HEAVY` such terms, counted with their repeats in the query), to the same ids, scores
    and order. Every document holding two of those terms, or one twice in the query, holds a
    pair of ``$seeds`` and was scored in step 1; any other holds one query term once, and its
    score is that term's share, computed as `_score` computes it (one part: the same float).
    So step 3 keeps ``[n, share]`` for the documents whose share reaches ``theta`` and nothing
    is scored again: the k best of step 1's top k (exact) and step 3's shares, a document in
    both taking the larger (its exact score: a sum of positive shares is at least each of them).
    A document of the seeds outside their top k that step 3 finds gets its share, not its
    score; it ranks after the top k's k documents either way, as in `bm25`. There are no
    lighter pairs to intersect (step 2 has none).

    >>> "$light" in bm25_heavy(session=False, among=False)
    False
    """
    keep = _keep(session, among)
    return (
        f"{_seeded(keep, _score(short=short))}"
        "CALL { WITH theta UNWIND [p IN range(0, size($bs) - 1) WHERE $bs[p] >= theta | p] AS p "
        "WITH theta, $sterms[p] AS t, $bs[p] AS w "
        f"MATCH (n:Memory) WHERE t IN n.terms AND {keep} "
        "WITH theta, w, n, toFloat(1 + size([x IN n.reps WHERE x = t])) AS tf, toFloat(n.tlen) * $lw + $n0 AS norm "
        "WITH theta, n, w * tf / (tf + norm) AS share WHERE share >= theta RETURN collect([n, share]) AS kept } "
        "UNWIND [i IN range(0, size(top) - 1) | [top[i], best[i]]] + kept AS pair "
        "WITH pair[0] AS n, pair[1] AS score WITH n, max(score) AS score "
        f"WITH n, score ORDER BY score DESC, n.kwseq LIMIT $k {tail}")


#: `FalkorKeywordIndex.plan`'s seeds: the pairs of this many of the heaviest terms
HEAVY = 6


def bm25_scan(*, session: bool, among: bool, tail: str = "RETURN n.id, score") -> str:
    """`bm25` by scoring every document that holds a query term (the statement `bm25` replaced;
    `benchmarks/falkordb_bm25.py` times both)."""
    where = []
    if session:
        where.append("n.session_id = $session")
    if among:
        where.append("n.id IN $ids")
    keep = f"WHERE {' AND '.join(where)} " if where else ""
    return ("MATCH (c:Atlas) WITH c.docs AS docs, toFloat(c.tokens) AS tokens "
            "UNWIND range(0, size($terms) - 1) AS i WITH docs, tokens, i, $terms[i] AS t "
            "MATCH (n:Memory) WHERE t IN n.terms "
            "WITH docs, tokens, i, t, collect(n) AS found "
            "WITH docs, tokens, t, found, log((docs - size(found) + 0.5) / (size(found) + 0.5)) AS idf "
            "WITH docs, tokens, t, found, ($k1 + 1.0) * (CASE WHEN idf > 0.0 THEN idf ELSE 0.000001 END) AS w "
            f"UNWIND found AS n WITH docs, tokens, t, w, n {keep}"
            "WITH n, w, toFloat(size([x IN n.terms WHERE x = t])) AS tf, "
            "toFloat(size(n.terms)) * ($k1 * $b * docs / tokens) + $k1 * (1.0 - $b) AS norm "
            "WITH n, sum(w * tf / (tf + norm)) AS score "
            f"WITH n, score ORDER BY score DESC, n.kwseq LIMIT $k {tail}")
