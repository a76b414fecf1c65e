"""A namespace's sessions: each session's memory ids in write order, compactly.

`SessionIds` keeps a plain list (one pointer a memory, where a dict of ids would add a hash
table entry) and removes
lazily: a removed id goes into a small set of removal marks and is skipped by every reader;
the list is compacted once the marks reach a quarter of it, so a removal costs
``O(1)`` amortised (a compaction of ``n`` ids after ``n / 4`` removals). A removal of the last
id (a failed write's rollback) pops it at once. ``SessionMap`` is the partition's
``sessions`` mapping over these lists; assigning any collection of ids (compression's
reordering) stores it as a `SessionIds`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, MutableMapping

__all__ = ["SessionIds", "SessionMap"]


class SessionIds(Collection[str]):
    """One session's ids in write order (no repeats), with lazy removal (see the module docstring).

    >>> s = SessionIds(["a", "b", "c"])
    >>> s.discard("b"), list(s), len(s), s.latest(5)
    (False, ['a', 'c'], 2, ['c', 'a'])
    """

    __slots__ = ("_gone", "_ids")

    def __init__(self, ids: Iterable[str] = ()) -> None:
        self._ids: list[str] = list(dict.fromkeys(ids))
        self._gone: set[str] | None = None  # removal marks (None: none; a set costs 216 bytes)

    def append(self, node_id: str) -> None:
        """Add a new id at the end (the caller guarantees it is not in the session)."""
        if self._gone is not None and node_id in self._gone:  # re-added after a removal
            self._compact()
        self._ids.append(node_id)

    def discard(self, node_id: str) -> bool:
        """Remove ``node_id`` (known to be in the session); True if the session is now empty."""
        ids, gone = self._ids, self._gone
        if ids and ids[-1] == node_id:
            ids.pop()
            if gone is not None:  # marked ids now at the end go too
                while ids and ids[-1] in gone:
                    gone.discard(ids.pop())
                if not gone:
                    self._gone = None
            return not ids
        if gone is None:
            gone = self._gone = set()
        gone.add(node_id)
        if 4 * len(gone) >= len(ids):  # so marks never cover the whole list
            self._compact()
        return not self._ids

    def _compact(self) -> None:
        gone = self._gone
        if gone:
            self._ids = [i for i in self._ids if i not in gone]
        self._gone = None

    def latest(self, n: int) -> list[str]:
        """The last ``n`` ids, newest first."""
        ids, gone = self._ids, self._gone
        if gone is None:
            return ids[:-n - 1:-1] if n > 0 else []
        out: list[str] = []
        for node_id in reversed(ids):
            if len(out) >= n:
                break
            if node_id not in gone:
                out.append(node_id)
        return out

    def __iter__(self) -> Iterator[str]:
        gone = self._gone
        if gone is None:
            return iter(self._ids)
        return (i for i in self._ids if i not in gone)

    def __reversed__(self) -> Iterator[str]:
        gone = self._gone
        if gone is None:
            return reversed(self._ids)
        return (i for i in reversed(self._ids) if i not in gone)

    def __len__(self) -> int:
        return len(self._ids) - (0 if self._gone is None else len(self._gone))

    def __contains__(self, node_id: object) -> bool:
        return (self._gone is None or node_id not in self._gone) and node_id in self._ids

    def __repr__(self) -> str:
        return f"SessionIds({list(self)!r})"


class SessionMap(MutableMapping[str | None, Collection[str]]):
    """Session id -> its `SessionIds`, sessions in first-write order (a view of ``store``)."""

    __slots__ = ("_store",)

    def __init__(self, store: dict[str | None, SessionIds]) -> None:
        self._store = store

    def __getitem__(self, session: str | None) -> SessionIds:
        return self._store[session]

    def get(self, session: str | None, default: object = None) -> object:  # type: ignore[override]
        return self._store.get(session, default)

    def __setitem__(self, session: str | None, ids: Collection[str]) -> None:
        """Store (or reorder) a session's ids."""
        self._store[session] = SessionIds(ids)

    def __delitem__(self, session: str | None) -> None:
        del self._store[session]

    def __contains__(self, session: object) -> bool:
        return session in self._store

    def __iter__(self) -> Iterator[str | None]:
        return iter(self._store)

    def __len__(self) -> int:
        return len(self._store)
