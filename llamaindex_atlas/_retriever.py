"""`AtlasRetriever`: the atlas's hybrid recall as a LlamaIndex retriever."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import NodeWithScore, QueryBundle
from llama_index.core.vector_stores.types import MetadataFilters

from shared_core import ElasticMemoryAtlas
from shared_core.values import _validate as check
from shared_core.values._arguments import check_arguments

from ._convert import to_atlas_filters, to_node
from ._memory import resolve_atlas

__all__ = ["AtlasRetriever"]

DEFAULT_TOP_K = 4  # the LangChain AtlasRetriever's k agrees
_ACCEPTED = frozenset({"namespace", "session_id", "similarity_top_k", "filters", "cross_session", "reinforce",
                       "include_history", "callback_manager", "verbose"})
_RENAMES = {"k": "similarity_top_k", "top_k": "similarity_top_k", "limit": "similarity_top_k",
            "filter": "filters"}


class AtlasRetriever(BaseRetriever):
    """Retrieve memories from an `ElasticMemoryAtlas` as ``NodeWithScore``.

    Recall fuses vector, keyword, graph, recency and time paths (see `ElasticMemoryAtlas.retrieve`).
    Each node's id is the memory's id, its text the memory's content and its metadata
    `ScoredMemory.to_metadata()`, exactly as the LangChain retriever returns: the caller's
    metadata plus ``id``, ``score``, ``score_breakdown``, ``paths``, ``weight``, ``timestamp``,
    ``session_id``, ``namespace``, ``other_session``, … The LLM sees the text with its
    ``timestamp`` and the caller's metadata; the atlas's bookkeeping is hidden from it.

    Args:
        atlas: the atlas to search (default: a new `ElasticMemoryAtlas`).
        namespace: the namespace to search; recall never leaves it.
        session_id: search this session only, unless ``cross_session`` lets the namespace's
            other sessions in (penalised, with ``other_session=True``). None searches the whole
            namespace.
        similarity_top_k: how many memories to return (default 4).
        filters: LlamaIndex ``MetadataFilters`` (AND of ==, !=, <, <=, >, >=, in, nin, any,
            contains) or the atlas's own filter mapping, on the memories' metadata.
        cross_session: see ``session_id``; None takes the atlas config's default.
        reinforce: strengthen the memories returned (the atlas's elastic weights).
        include_history: also return superseded versions of updated memories.

    Example:
        .. code-block:: python

            from llama_index.core.query_engine import RetrieverQueryEngine
            from llamaindex_atlas import AtlasRetriever

            retriever = AtlasRetriever(atlas=atlas, namespace="alice", similarity_top_k=4)
            nodes = retriever.retrieve("Where does Alice live?")
            engine = RetrieverQueryEngine.from_args(retriever, llm=llm)
    """

    def __init__(self, *, atlas: ElasticMemoryAtlas | None = None, namespace: str = "default",
                 session_id: str | None = None, similarity_top_k: int = DEFAULT_TOP_K,
                 filters: MetadataFilters | Mapping[str, Any] | None = None, cross_session: bool | None = None,
                 reinforce: bool = True, include_history: bool = False,
                 callback_manager: CallbackManager | None = None, verbose: bool = False, **unknown: Any) -> None:
        check_arguments("AtlasRetriever", unknown, accepted=_ACCEPTED, renames=_RENAMES)
        check.namespace(namespace)  # the core's rule (InvalidInputError, a ValueError), checked at once
        check.session(session_id)
        if isinstance(similarity_top_k, bool) or not isinstance(similarity_top_k, int) or similarity_top_k < 1:
            raise ValueError(f"similarity_top_k must be an int >= 1, got {similarity_top_k!r}")
        self._atlas = resolve_atlas(atlas)
        self.namespace = namespace
        self.session_id = session_id
        self.similarity_top_k = similarity_top_k
        self.filters = to_atlas_filters(filters)
        self.cross_session = cross_session
        self.reinforce = reinforce
        self.include_history = include_history
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    @classmethod
    def class_name(cls) -> str:
        return "AtlasRetriever"

    @classmethod
    def from_defaults(cls, *, atlas: ElasticMemoryAtlas | None = None, namespace: str = "default",
                      session_id: str | None = None, similarity_top_k: int = DEFAULT_TOP_K,
                      embed_model: BaseEmbedding | None = None, **kwargs: Any) -> AtlasRetriever:
        """Build a retriever; ``embed_model`` is the embedder of the new atlas made when ``atlas`` is not given."""
        return cls(atlas=resolve_atlas(atlas, embed_model), namespace=namespace, session_id=session_id,
                   similarity_top_k=similarity_top_k, **kwargs)

    @property
    def atlas(self) -> ElasticMemoryAtlas:
        """The atlas this retriever searches."""
        return self._atlas

    def _kwargs(self) -> dict[str, Any]:
        return {"namespace": self.namespace, "session_id": self.session_id, "top_k": self.similarity_top_k,
                "filters": self.filters, "cross_session": self.cross_session, "reinforce": self.reinforce,
                "include_history": self.include_history}

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        if not query_bundle.query_str.strip():
            return []
        return [to_node(hit) for hit in self._atlas.retrieve(query_bundle.query_str, **self._kwargs())]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        if not query_bundle.query_str.strip():
            return []
        hits = await self._atlas.aretrieve(query_bundle.query_str, **self._kwargs())
        return [to_node(hit) for hit in hits]

    def __repr__(self) -> str:
        return (f"AtlasRetriever(namespace={self.namespace!r}, session_id={self.session_id!r}, "
                f"similarity_top_k={self.similarity_top_k}, atlas={self._atlas!r})")
