"""`MemoryService`: the six memory tools as plain methods over one atlas, with no MCP in sight.

The MCP binding (`shared_core.apps.mcp._server`) only declares schemas and turns `AtlasError` into
error results; everything a tool does happens here, so it can be read and tested on its own.
Results are frozen dataclasses holding JSON-ready values (ISO times, lists, plain dicts); the SDK
derives each tool's output schema from them. (They have no ``__slots__``: the SDK would read the
slot descriptors as default values.)

>>> from shared_core import ElasticMemoryAtlas, HashingEmbedder
>>> service = MemoryService(ElasticMemoryAtlas(embedder=HashingEmbedder()), default_namespace="alice")
>>> written = service.write("Alice is allergic to peanuts")
>>> [hit.content for hit in service.search("allergies").memories]
['Alice is allergic to peanuts']
>>> service.search("allergies", namespace="bob").memories
[]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ...atlas import ElasticMemoryAtlas
from ...values import _validate as check
from ...values.errors import InvalidInputError, NamespaceViolationError
from ...values.model import MemoryNode, ScoredMemory, iso

__all__ = ["Forgotten", "MemoryService", "ReadResult", "SearchHit", "SearchResult", "StatsResult",
           "Style", "Updated", "Written"]

Style = Literal["timeline", "bullet", "narrative"]


@dataclass(frozen=True, kw_only=True)
class Written:
    """A memory just stored."""

    id: str
    namespace: str
    session_id: str | None
    importance: float
    pinned: bool
    created_at: str | None


@dataclass(frozen=True, kw_only=True)
class Updated:
    """A corrected memory: the new version and the id of the version it supersedes."""

    id: str
    supersedes: str
    namespace: str
    session_id: str | None
    created_at: str | None


@dataclass(frozen=True, kw_only=True)
class Forgotten:
    """A memory deleted for good."""

    id: str
    namespace: str


@dataclass(frozen=True, kw_only=True)
class ReadResult:
    """A context block for an LLM and its accounting (``tokens`` never exceeds ``budget``)."""

    text: str
    tokens: int
    budget: int
    style: str
    memory_ids: list[str]
    dropped_ids: list[str]


@dataclass(frozen=True, kw_only=True)
class SearchHit:
    """One recalled memory with its score and where the score came from.

    ``score_breakdown`` holds each factor (relevance, weight, recency, session) and each recall
    path's raw signal; ``paths`` names the paths that found the memory; ``metadata`` is the
    caller's own.
    """

    id: str
    content: str
    score: float
    score_breakdown: dict[str, float]
    paths: list[str]
    weight: float
    importance: float
    timestamp: str | None
    created_at: str | None
    last_accessed_at: str | None
    access_count: int
    session_id: str | None
    namespace: str
    other_session: bool
    kind: str
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class SearchResult:
    """The best matches, best first."""

    memories: list[SearchHit]


@dataclass(frozen=True, kw_only=True)
class StatsResult:
    """What one namespace holds; ``weight_histogram`` rows are ``[low, high, count]``."""

    namespace: str
    memories: int
    edges: int
    pinned: int
    superseded: int
    evictions: int
    expirations: int
    nodes_by_kind: dict[str, int]
    nodes_by_session: dict[str, int]
    edges_by_relation: dict[str, int]
    weight_histogram: list[tuple[float, float, int]]
    vector_bytes: int


def _hit(hit: ScoredMemory) -> SearchHit:
    meta = hit.to_metadata()  # the atlas's keys win over the caller's, so these can be trusted
    return SearchHit(
        id=meta["id"], content=hit.node.content, score=float(meta["score"]),
        score_breakdown=meta["score_breakdown"], paths=meta["paths"], weight=float(meta["weight"]),
        importance=float(meta["importance"]), timestamp=meta["timestamp"], created_at=meta["created_at"],
        last_accessed_at=meta["last_accessed_at"], access_count=meta["access_count"],
        session_id=meta["session_id"], namespace=meta["namespace"], other_session=meta["other_session"],
        kind=meta["kind"], metadata=dict(hit.node.metadata))


class MemoryService:
    """The memory tools over one atlas, each namespace taken from the call or the server's default.

    Nothing is remembered between calls: a call that names no namespace gets ``default_namespace``
    (or an error when there is none), never the namespace of an earlier call. With
    ``fixed_namespace=True`` every call is held to the default namespace, for a server that
    serves a single user. ``cross_session`` lets a read or search that names a session also see
    the namespace's other sessions (ranked lower and labelled ``other_session``).
    """

    def __init__(self, atlas: ElasticMemoryAtlas, *, default_namespace: str | None = None,
                 fixed_namespace: bool = False, default_token_budget: int = 1000,
                 cross_session: bool = True) -> None:
        if not isinstance(atlas, ElasticMemoryAtlas):
            raise InvalidInputError(f"atlas must be an ElasticMemoryAtlas, got {type(atlas).__name__}")
        if default_namespace is not None:
            check.name(default_namespace, "default_namespace")
        if fixed_namespace and default_namespace is None:
            raise InvalidInputError("fixed_namespace needs a default_namespace to hold the calls to")
        if isinstance(default_token_budget, bool) or not isinstance(default_token_budget, int) \
                or default_token_budget < 1:
            raise InvalidInputError(f"default_token_budget must be an int >= 1, got {default_token_budget!r}")
        self.atlas = atlas
        self.default_namespace = default_namespace
        self.fixed_namespace = fixed_namespace
        self.default_token_budget = default_token_budget
        self.cross_session = cross_session

    def namespace(self, requested: str | None) -> str:
        """The namespace a call acts on: its own, else the default; never another caller's."""
        if requested is None:
            if self.default_namespace is None:
                raise InvalidInputError("namespace is required: this server has no default namespace")
            return self.default_namespace
        if self.fixed_namespace and requested != self.default_namespace:
            raise NamespaceViolationError(
                f"this server serves only namespace {self.default_namespace!r}, not {requested!r}")
        return requested

    def write(self, content: str, *, namespace: str | None = None, session_id: str | None = None,
              metadata: dict[str, Any] | None = None, importance: float = 1.0,
              pinned: bool = False) -> Written:
        """Store one memory; see `ElasticMemoryAtlas.add_memory`. A client that calls the tool asks
        for the memory to be kept: the atlas's write filter does not hold it back."""
        node = self.atlas.add_memory(content, namespace=self.namespace(namespace), session_id=session_id,
                                     metadata=metadata, importance=importance, pinned=pinned, keep=True)
        return Written(id=node.id, namespace=node.namespace, session_id=node.session_id,
                       importance=node.importance, pinned=node.pinned, created_at=iso(node.created_at))

    def read(self, query: str, *, namespace: str | None = None, session_id: str | None = None,
             token_budget: int | None = None, style: Style = "timeline") -> ReadResult:
        """The context block for ``query``; see `ElasticMemoryAtlas.build_context`."""
        budget = self.default_token_budget if token_budget is None else token_budget
        ctx = self.atlas.build_context(query, namespace=self.namespace(namespace), session_id=session_id,
                                       token_budget=budget, style=style, cross_session=self.cross_session)
        return ReadResult(text=ctx.text, tokens=ctx.tokens, budget=ctx.budget, style=ctx.style,
                          memory_ids=[m.node.id for m in ctx.memories],
                          dropped_ids=[m.node.id for m in ctx.dropped])

    def search(self, query: str, *, namespace: str | None = None, session_id: str | None = None,
               top_k: int = 5) -> SearchResult:
        """The ``top_k`` best memories for ``query``; see `ElasticMemoryAtlas.retrieve`."""
        hits = self.atlas.retrieve(query, namespace=self.namespace(namespace), session_id=session_id,
                                   top_k=top_k, cross_session=self.cross_session)
        return SearchResult(memories=[_hit(h) for h in hits])

    def update(self, id: str, content: str, *, namespace: str | None = None,
               metadata: dict[str, Any] | None = None, importance: float | None = None) -> Updated:
        """Store a corrected version that supersedes memory ``id``; see `ElasticMemoryAtlas.update_memory`."""
        node: MemoryNode = self.atlas.update_memory(id, content, namespace=self.namespace(namespace),
                                                    metadata=metadata, importance=importance)
        return Updated(id=node.id, supersedes=id, namespace=node.namespace, session_id=node.session_id,
                       created_at=iso(node.created_at))

    def forget(self, id: str, *, namespace: str | None = None) -> Forgotten:
        """Delete memory ``id`` and its edges; see `ElasticMemoryAtlas.forget`."""
        ns = self.namespace(namespace)
        self.atlas.forget(id, namespace=ns)
        return Forgotten(id=id, namespace=ns)

    def stats(self, *, namespace: str | None = None) -> StatsResult:
        """Counts, weights and evictions of one namespace; see `ElasticMemoryAtlas.stats`."""
        ns = self.namespace(namespace)
        s = self.atlas.stats(namespace=ns)
        return StatsResult(namespace=ns, memories=s.nodes, edges=s.edges, pinned=s.pinned,
                           superseded=s.superseded, evictions=s.evictions, expirations=s.expirations,
                           nodes_by_kind=dict(s.nodes_by_kind), nodes_by_session=dict(s.nodes_by_session),
                           edges_by_relation=dict(s.edges_by_relation),
                           weight_histogram=list(s.weight_histogram),
                           vector_bytes=s.vector_bytes)
