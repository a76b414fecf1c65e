"""`AtlasStore`: the atlas as a LangGraph long-term memory store (``BaseStore``)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import copy
import math
import threading
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Literal

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    get_text_at_path,
    tokenize_path,
    validate_op_namespace,
)
from langgraph.store.base import InvalidNamespaceError as _InvalidNamespaceError

from shared_core import ElasticMemoryAtlas, InvalidInputError, MemoryNode, MemoryNotFoundError
from shared_core.formulas.filters import compile_filters

__all__ = ["AtlasStore"]

KEY = "langgraph.key"
CREATED = "langgraph.created_at"
TTL = "langgraph.ttl"  # the item's ttl in minutes, as LangGraph gives it
_RESERVED = "langgraph."
_OPERATORS = frozenset({"$eq", "$ne", "$gt", "$gte", "$lt", "$lte"})


class AtlasStore(BaseStore):
    """LangGraph ``BaseStore`` backed by an `ElasticMemoryAtlas`.

    Each item is one memory. The LangGraph namespace ``("memories", "alice")`` is the atlas
    namespace ``"memories.alice"`` (LangGraph labels cannot contain a period, so the mapping is
    exact), under an optional root ``namespace``; isolation between namespaces is therefore the
    atlas's own. The value is kept whole in the memory's metadata, so filters run on its
    top-level fields; the memory's text is taken from ``fields`` of the value (the whole value
    as JSON by default, as in LangGraph's stores), and semantic search uses the atlas's
    embedder and hybrid ranking, reinforcing what it returns.

    Setup:
        ```bash
        pip install ".[langchain]"   # in a checkout of elastic-atlas (not on PyPI)
        ```

    Key init args:
        atlas: ElasticMemoryAtlas | None
            Where items live (default: a new atlas with the offline MiniLM embedder). Any
            LangChain ``Embeddings`` can be the atlas's embedder.
        namespace: str | None
            Root label(s) all of this store's namespaces live under (default: none).
        fields: list[str] | None
            Paths of the value whose text is embedded and searched (default ``["$"]``, the
            whole value); ``put(..., index=[...])`` overrides them per item.
        reinforce: bool
            Whether semantic search reinforces the items it returns (default True).
        ttl: TTLConfig | None
            LangGraph's TTL settings: ``default_ttl`` (minutes, for puts that give no ``ttl``),
            ``refresh_on_read`` (default True: a get or search restarts an item's ttl) and
            ``sweep_interval_minutes`` (for `start_ttl_sweeper`).

    Instantiate:
        >>> from shared_core import ElasticMemoryAtlas, HashingEmbedder
        >>> from langchain_atlas import AtlasStore
        >>> atlas = ElasticMemoryAtlas(embedder=HashingEmbedder())  # omit embedder= for MiniLM
        >>> store = AtlasStore(atlas=atlas, fields=["text"])

    Invoke:
        >>> store.put(("memories", "alice"), "m1", {"text": "Alice likes hiking in the fjords"})
        >>> store.put(("memories", "alice"), "m2", {"text": "Alice works as a nurse"})
        >>> store.get(("memories", "alice"), "m1").value
        {'text': 'Alice likes hiking in the fjords'}
        >>> [item.key for item in store.search(("memories",), query="where does Alice work?", limit=1)]
        ['m2']
        >>> store.list_namespaces()
        [('memories', 'alice')]

    Use with LangGraph:
        ```python
        graph = builder.compile(store=AtlasStore(atlas=atlas))
        ```

    Differences from ``InMemoryStore``: ops in a batch apply in order (a get after a put sees
    it); ``index=False`` items are stored with their key as text; filters take exact values and
    ``$eq``/``$ne``/``$gt``/``$gte``/``$lt``/``$lte`` on top-level fields (a ``$ne`` does not
    match an item without the field). Memories written to the atlas by other means appear as items
    whose key is the memory id and whose value is ``{"content": …, **metadata}``.

    TTL: ``put(..., ttl=minutes)`` (or the config's ``default_ttl``) gives an item a deadline of
    its last write or refreshing read plus ``ttl``, on the atlas's clock. An expired item is never
    returned by get or search (as LangGraph's ``omit_expired``); `sweep_ttl` deletes expired items
    from the atlas, and `start_ttl_sweeper` runs it every ``sweep_interval_minutes`` in a
    background thread until `stop_ttl_sweeper`. Refreshes live in this store object: a new store
    over the same atlas counts each item's ttl from its last write.

        >>> from shared_core import ManualClock
        >>> clock = ManualClock(0.0)
        >>> store = AtlasStore(atlas=ElasticMemoryAtlas(embedder=HashingEmbedder(), clock=clock))
        >>> store.put(("cache",), "q1", {"text": "an answer"}, ttl=1.0)   # one minute
        >>> _ = clock.advance(50); store.get(("cache",), "q1") is not None  # a read restarts the minute
        True
        >>> _ = clock.advance(50); store.get(("cache",), "q1") is not None
        True
        >>> _ = clock.advance(61); store.get(("cache",), "q1") is None, store.sweep_ttl()
        (True, 1)
    """

    supports_ttl = True

    def __init__(self, *, atlas: ElasticMemoryAtlas | None = None, namespace: str | None = None,
                 fields: Sequence[str] | None = None, reinforce: bool = True, ttl: TTLConfig | None = None) -> None:
        self.atlas = atlas if atlas is not None else ElasticMemoryAtlas()
        self._root: tuple[str, ...] = () if namespace is None else tuple(namespace.split("."))
        if any(not label for label in self._root):
            raise InvalidInputError(f"namespace must be None or non-empty labels joined by '.', got {namespace!r}")
        self.fields = list(fields) if fields is not None else ["$"]
        self._paths = [_tokenize(path) for path in self.fields]
        self.reinforce = reinforce
        self._keys: dict[str, dict[str, str]] = {}  # atlas namespace -> item key -> memory id
        self._lock = threading.RLock()
        self.ttl_config = _check_ttl_config(ttl)
        self._deadlines: dict[str, float] = {}  # memory id -> when it expires, after a refresh
        self._ttl_spaces: set[str] = set()  # atlas namespaces known to hold items with a ttl
        self._sweeper: threading.Thread | None = None
        self._sweeper_stop = threading.Event()

    def __repr__(self) -> str:
        root = ".".join(self._root) or None
        return f"AtlasStore(namespace={root!r}, fields={self.fields!r}, atlas={self.atlas!r})"

    # -- namespaces ----------------------------------------------------------------------------
    def _atlas_ns(self, namespace: tuple[str, ...]) -> str:
        return ".".join(self._root + tuple(namespace))

    def _graph_ns(self, atlas_ns: str) -> tuple[str, ...] | None:
        labels = tuple(atlas_ns.split("."))
        n = len(self._root)
        if labels[:n] != self._root or len(labels) == n or not all(labels):
            return None
        return labels[n:]

    def _spaces(self, prefix: tuple[str, ...]) -> list[str]:
        full = self._root + tuple(prefix)
        return [ns for ns in self.atlas.namespaces()
                if self._graph_ns(ns) is not None and tuple(ns.split("."))[:len(full)] == full]

    # -- keys ----------------------------------------------------------------------------------
    def _index(self, atlas_ns: str) -> dict[str, str]:
        ids = self._keys.get(atlas_ns)
        if ids is None:  # first touch: rebuild from the atlas, so a store can reopen a shared atlas
            nodes = self.atlas.memories(namespace=atlas_ns)
            ids = {str(node.metadata.get(KEY, node.id)): node.id for node in nodes}
            if any(TTL in node.metadata for node in nodes):
                self._ttl_spaces.add(atlas_ns)
            self._keys[atlas_ns] = ids
        return ids

    def _current(self, node_id: str, atlas_ns: str) -> MemoryNode | None:
        try:
            node = self.atlas.get(node_id, namespace=atlas_ns)
        except MemoryNotFoundError:
            return None
        now = self.atlas.clock.now()
        return node if node.is_current(now) and not self._expired(node, now) else None

    def _find(self, atlas_ns: str, key: str) -> MemoryNode | None:
        node_id = self._index(atlas_ns).get(key)
        if node_id is not None:
            node = self._current(node_id, atlas_ns)
            if node is not None:
                return node
            # evicted, expired, or updated through the atlas since: look again from the atlas
            self._keys.pop(atlas_ns, None)
            node_id = self._index(atlas_ns).get(key)
            return None if node_id is None else self._current(node_id, atlas_ns)
        node = self._current(key, atlas_ns) if key else None  # written by other means: its key is its id
        if node is not None and KEY not in node.metadata:
            self._index(atlas_ns)[key] = node.id
            return node
        return None

    def _fields(self, node: MemoryNode, namespace: tuple[str, ...]) -> dict[str, Any]:
        meta = dict(node.metadata)
        meta.pop(TTL, None)
        key = meta.pop(KEY, None)
        created = meta.pop(CREATED, node.created_at)
        value = meta if key is not None else {"content": node.content, **meta}
        return {"value": value, "key": str(key if key is not None else node.id), "namespace": namespace,
                "created_at": _time(created), "updated_at": _time(node.created_at)}

    # -- operations ----------------------------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run get, put, delete, search and list-namespaces ops in order; consecutive puts share
        one embedding call."""
        ops = list(ops)
        results: list[Result] = [None] * len(ops)
        with self._lock:
            puts: list[PutOp] = []
            for i, op in enumerate(ops):
                validate_op_namespace(op)
                if isinstance(op, PutOp) and op.value is not None:
                    _check_put(op)
                    puts.append(op)
                    continue
                self._write(puts)
                puts = []
                results[i] = self._run(op)
            self._write(puts)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        return await asyncio.to_thread(self.batch, ops)

    def _run(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            node = self._find(self._atlas_ns(op.namespace), op.key)
            if node is None:
                return None
            if op.refresh_ttl:
                self._refresh(node)
            return Item(**self._fields(node, tuple(op.namespace)))
        if isinstance(op, PutOp):  # a delete
            self._delete(self._atlas_ns(op.namespace), op.key)
            return None
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, ListNamespacesOp):
            return self._list(op)
        raise InvalidInputError(f"unknown store operation {type(op).__name__}")

    def _delete(self, atlas_ns: str, key: str) -> None:
        node = self._find(atlas_ns, key)
        if node is not None:
            with contextlib.suppress(MemoryNotFoundError):  # gone in the meantime
                self.atlas.forget(node.id, namespace=atlas_ns)
        self._index(atlas_ns).pop(key, None)

    def _write(self, puts: list[PutOp]) -> None:
        if not puts:
            return
        latest = {(self._atlas_ns(op.namespace), str(op.key)): op for op in puts}  # last put of a key wins
        items: list[dict[str, Any]] = []
        replaced: list[MemoryNode] = []
        for (atlas_ns, key), op in latest.items():
            value = copy.deepcopy(dict(op.value or {}))
            meta: dict[str, Any] = {**value, KEY: key}
            if op.ttl is not None:
                meta[TTL] = float(op.ttl)
            old = self._find(atlas_ns, key)
            if old is not None:
                meta[CREATED] = old.metadata.get(CREATED, old.created_at)
                replaced.append(old)
            text = self._text(value, op.index)[:self.atlas.config.max_content_chars] or key or "(empty)"
            items.append({"content": text, "namespace": atlas_ns, "metadata": meta})
        nodes = self.atlas.add_memories(items, namespace=items[0]["namespace"])  # all or nothing
        for old in replaced:  # only once the new versions are safely in
            with contextlib.suppress(MemoryNotFoundError):
                self.atlas.forget(old.id, namespace=old.namespace)
        for old in replaced:
            self._deadlines.pop(old.id, None)
        for node in nodes:
            self._index(node.namespace)[str(node.metadata[KEY])] = node.id
            if TTL in node.metadata:
                self._ttl_spaces.add(node.namespace)

    def _text(self, value: Mapping[str, Any], index: Literal[False] | list[str] | None) -> str:
        if index is False:
            return ""
        paths = self._paths if index is None else [_tokenize(path) for path in index]
        texts = [text for path in paths for text in get_text_at_path(value, path) if text.strip()]
        return "\n".join(texts)

    def _search(self, op: SearchOp) -> list[SearchItem]:
        if op.limit <= 0 or op.offset < 0:
            return []
        spaces = self._spaces(tuple(op.namespace_prefix))
        filters = _translate_filter(op.filter)
        found: list[tuple[MemoryNode, float | None]] = []
        if op.query:
            hits = [hit for ns in spaces
                    for hit in self.atlas.retrieve(op.query, namespace=ns, top_k=op.offset + op.limit,
                                                   exclude_ids=self._expired_ids(ns),
                                                   filters=filters, reinforce=self.reinforce)]
            hits.sort(key=lambda hit: -hit.score)
            found = [(hit.node, hit.score) for hit in hits]
        else:
            keep = compile_filters(filters)
            found = [(node, None) for ns in spaces for node in self.atlas.memories(namespace=ns)
                     if keep is None or keep(node)]
        now = self.atlas.clock.now()
        found = [(node, score) for node, score in found if not self._expired(node, now)]
        page = found[op.offset:op.offset + op.limit]
        if op.refresh_ttl:
            for node, _ in page:
                self._refresh(node)
        return [SearchItem(score=score, **self._fields(node, self._graph_ns(node.namespace) or ()))
                for node, score in page]

    # -- ttl ---------------------------------------------------------------------------------------
    def _deadline(self, node: MemoryNode) -> float | None:
        ttl = node.metadata.get(TTL)
        if ttl is None:
            return None
        return self._deadlines.get(node.id, node.created_at + 60.0 * float(ttl))

    def _expired(self, node: MemoryNode, now: float) -> bool:
        deadline = self._deadline(node)
        return deadline is not None and deadline <= now

    def _refresh(self, node: MemoryNode) -> None:
        ttl = node.metadata.get(TTL)
        if ttl is not None:
            self._deadlines[node.id] = self.atlas.clock.now() + 60.0 * float(ttl)

    def _expired_ids(self, atlas_ns: str) -> list[str]:
        self._index(atlas_ns)  # learns whether the namespace holds items with a ttl
        if atlas_ns not in self._ttl_spaces:
            return []
        now = self.atlas.clock.now()
        return [node.id for node in self.atlas.memories(namespace=atlas_ns)
                if TTL in node.metadata and self._expired(node, now)]

    def sweep_ttl(self) -> int:
        """Delete this store's expired items from the atlas; returns how many were deleted."""
        with self._lock:
            swept = 0
            for atlas_ns in self._spaces(()):
                for node_id in self._expired_ids(atlas_ns):
                    with contextlib.suppress(MemoryNotFoundError):  # gone in the meantime
                        self.atlas.forget(node_id, namespace=atlas_ns)
                        swept += 1
                    self._deadlines.pop(node_id, None)
                if swept:
                    self._keys.pop(atlas_ns, None)  # rebuilt from the atlas on next touch
            return swept

    async def asweep_ttl(self) -> int:
        return await asyncio.to_thread(self.sweep_ttl)

    def start_ttl_sweeper(self, sweep_interval_minutes: float | None = None) -> concurrent.futures.Future[None]:
        """Run `sweep_ttl` every ``sweep_interval_minutes`` (default: the TTL config's, else 5) in a
        daemon thread until `stop_ttl_sweeper`; the future completes when the thread ends."""
        interval = sweep_interval_minutes or (self.ttl_config or {}).get("sweep_interval_minutes") or 5
        if not isinstance(interval, int | float) or isinstance(interval, bool) or not interval > 0:
            raise InvalidInputError(f"sweep_interval_minutes must be a number > 0, got {interval!r}")
        done: concurrent.futures.Future[None] = concurrent.futures.Future()
        with self._lock:
            if self._sweeper is not None and self._sweeper.is_alive():
                raise InvalidInputError("this store's TTL sweeper is already running; stop_ttl_sweeper() first")
            self._sweeper_stop.clear()

            def sweep() -> None:
                try:
                    while not self._sweeper_stop.wait(60.0 * float(interval)):
                        self.sweep_ttl()
                finally:
                    done.set_result(None)

            self._sweeper = threading.Thread(target=sweep, name="AtlasStore-ttl-sweeper", daemon=True)
            self._sweeper.start()
        return done

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper thread; True once it has ended (or none was running)."""
        self._sweeper_stop.set()
        thread = self._sweeper
        if thread is None:
            return True
        thread.join(timeout)
        return not thread.is_alive()

    def _list(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        spaces = {ns for atlas_ns in self.atlas.namespaces() if (ns := self._graph_ns(atlas_ns)) is not None}
        matching = [ns for ns in spaces if all(_matches(cond, ns) for cond in op.match_conditions or ())]
        if op.max_depth is not None:
            matching = list({ns[:op.max_depth] for ns in matching})
        return sorted(matching)[op.offset:op.offset + op.limit]


def _tokenize(path: str) -> str | list[str]:
    return path if path == "$" else tokenize_path(path)


def _time(ts: float) -> datetime:
    return datetime.fromtimestamp(float(ts), tz=UTC)


def _check_put(op: PutOp) -> None:
    if not op.namespace:
        raise _InvalidNamespaceError("Namespace cannot be empty.")
    if op.namespace[0] == "langgraph":
        raise _InvalidNamespaceError(f'Root label for namespace cannot be "langgraph". Got: {op.namespace}')
    if op.ttl is not None and (isinstance(op.ttl, bool) or not isinstance(op.ttl, int | float)
                               or not math.isfinite(op.ttl) or op.ttl <= 0):
        raise InvalidInputError(f"ttl must be a number of minutes > 0 (or None), got {op.ttl!r}")
    if not isinstance(op.value, Mapping):
        raise InvalidInputError(f"value must be a mapping, got {type(op.value).__name__}")
    clash = sorted(k for k in op.value if isinstance(k, str) and k.startswith(_RESERVED))
    if clash:
        raise InvalidInputError(f"value keys starting with {_RESERVED!r} are reserved by AtlasStore: {clash}")


def _check_ttl_config(config: TTLConfig | None) -> TTLConfig | None:
    if config is None:
        return None
    unknown = sorted(set(config) - {"refresh_on_read", "default_ttl", "sweep_interval_minutes", "omit_expired"})
    if unknown:
        raise InvalidInputError(f"unknown TTLConfig key(s) {unknown}; LangGraph's are refresh_on_read, default_ttl, "
                                "sweep_interval_minutes and omit_expired")
    for key in ("default_ttl", "sweep_interval_minutes"):
        value = config.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float) or value <= 0):
            raise InvalidInputError(f"TTLConfig {key} must be a number > 0 or None, got {value!r}")
    return config


def _translate_filter(filter: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """LangGraph's filter (exact values, or ``$``-operators per field) as atlas filters."""
    if not filter:
        return None
    out: dict[str, Any] = {}
    for key, cond in filter.items():
        if not isinstance(key, str) or not key or key.startswith("$"):
            raise InvalidInputError(f"filter keys must be field names, got {key!r}")
        if isinstance(cond, Mapping) and cond and all(isinstance(k, str) and k.startswith("$") for k in cond):
            unknown = sorted(set(cond) - _OPERATORS)
            if unknown:
                raise InvalidInputError(f"filter {key!r}: unsupported operator(s) {unknown}; use {sorted(_OPERATORS)}")
            out[key] = dict(cond)
        elif isinstance(cond, Mapping):
            raise InvalidInputError(f"filter {key!r}: nested-field filters are not supported; filter on top-level "
                                    f"fields with exact values or {sorted(_OPERATORS)}")
        else:
            out[key] = {"$eq": cond}
    return out


def _matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    part = namespace[:len(path)] if condition.match_type == "prefix" else namespace[len(namespace) - len(path):]
    return all(want in ("*", have) for want, have in zip(path, part, strict=True))
