"""`FTS5KeywordIndex`: BM25 through SQLite FTS5 from the standard library.

The in-process default is `shared_core.store.memory.inverted_index.InvertedKeywordIndex`, which
ranks as this index does (same BM25, same tokenizer) and faster; FTS5 remains the alternative.

FTS5 is incremental (insert and delete one memory at a time, no rebuild), ranks with BM25
(``bm25()``, k1 = 1.2, b = 0.75) and stems English with the Porter tokenizer, so "prefers" finds
"preferred". Tables keep full detail (positions): ``bm25()`` runs several times faster with it
than with ``detail='column'``, for a few more index bytes per memory. Each namespace gets its own
table, so term statistics (document frequencies) never mix namespaces: one tenant's words cannot
change another tenant's scores.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Collection, Sequence

from ..base import KeywordIndexBase
from ..contract import KeywordIndex
from ..terms import query_terms

logger = logging.getLogger("shared_core")

__all__ = ["FTS5KeywordIndex", "KeywordIndex", "query_terms"]


class _SharedDatabase:
    """One in-memory SQLite database shared by the FTS5 tables of every namespace."""

    def __init__(self) -> None:
        self.conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        self.lock = threading.Lock()
        self._next = 0

    def new_table(self) -> str:
        with self.lock:
            self._next += 1
            name = f"kw_{self._next}"
            self.conn.execute(
                f"CREATE VIRTUAL TABLE {name} USING fts5("
                "content, session UNINDEXED, tokenize='porter unicode61', detail='full')"
            )
            return name


class FTS5KeywordIndex(KeywordIndexBase):
    """BM25 over one FTS5 table. Create through `FTS5KeywordIndex.create()`."""

    def __init__(self, db: _SharedDatabase, table: str) -> None:
        self._db = db
        self._table = table
        self._rowid: dict[str, int] = {}
        self._ids: dict[int, str] = {}
        self._next = 0

    @classmethod
    def create(cls, db: _SharedDatabase | None = None) -> FTS5KeywordIndex:
        db = db or _SharedDatabase()
        return cls(db, db.new_table())

    def __len__(self) -> int:
        return len(self._rowid)

    def add(self, node_id: str, text: str, *, session_id: str | None = None) -> None:
        if node_id in self._rowid:
            self.remove(node_id)
        self._next += 1
        rowid = self._next
        with self._db.lock:
            self._db.conn.execute(
                f"INSERT INTO {self._table}(rowid, content, session) VALUES (?, ?, ?)",
                (rowid, text, session_id),
            )
        self._rowid[node_id] = rowid
        self._ids[rowid] = node_id

    def add_many(self, rows: Sequence[tuple[str, str, str | None]]) -> None:
        """Insert many (id, text, session) rows in one transaction."""
        fresh: list[tuple[int, str, str | None]] = []
        for node_id, text, session in rows:
            if node_id in self._rowid:
                self.remove(node_id)
            self._next += 1
            fresh.append((self._next, text, session))
            self._rowid[node_id] = self._next
            self._ids[self._next] = node_id
        with self._db.lock:
            try:
                self._db.conn.execute("BEGIN")
                self._db.conn.executemany(
                    f"INSERT INTO {self._table}(rowid, content, session) VALUES (?, ?, ?)", fresh)
                self._db.conn.execute("COMMIT")
            except BaseException:
                self._db.conn.execute("ROLLBACK")
                for rowid, _, _ in fresh:
                    self._rowid.pop(self._ids.pop(rowid), None)
                raise

    def remove(self, node_id: str) -> None:
        rowid = self._rowid.pop(node_id, None)
        if rowid is None:
            return
        del self._ids[rowid]
        with self._db.lock:
            self._db.conn.execute(f"DELETE FROM {self._table} WHERE rowid = ?", (rowid,))

    def search(self, query: str, k: int, *, session_id: str | None = None,
               subset: Collection[str] | None = None) -> list[tuple[str, float]]:
        terms = query_terms(query)
        if not terms or k <= 0 or not self._rowid:
            return []
        match = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
        sql = f"SELECT rowid, -bm25({self._table}) FROM {self._table} WHERE {self._table} MATCH ?"
        params: list[object] = [match]
        if session_id is not None:
            sql += " AND session = ?"
            params.append(session_id)
        sql += " ORDER BY bm25(" + self._table + ") LIMIT ?"
        params.append(k if subset is None else max(4 * k, k + len(subset)))
        with self._db.lock:
            try:
                rows = self._db.conn.execute(sql, params).fetchall()
            except sqlite3.OperationalError:  # a query FTS5 cannot parse finds nothing, it never fails recall
                logger.warning("keyword search could not run for %r", match, exc_info=True)
                return []
        out = [(self._ids[r], float(s)) for r, s in rows if r in self._ids]
        if subset is not None:
            out = [(i, s) for i, s in out if i in subset]
        return out[:k]

    def drop(self) -> None:
        with self._db.lock:
            self._db.conn.execute(f"DROP TABLE IF EXISTS {self._table}")
        self._rowid.clear()
        self._ids.clear()
