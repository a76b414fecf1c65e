"""`AtlasRetriever`: the atlas's hybrid recall as a LangChain retriever."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field

from shared_core import ElasticMemoryAtlas
from shared_core.values._arguments import check_arguments

from ._convert import to_document

__all__ = ["AtlasRetriever"]

DEFAULT_K = 4  # LangChain's usual default; LlamaIndex's AtlasRetriever.similarity_top_k agrees
_RENAMES = {"top_k": "k", "similarity_top_k": "k", "n": "k", "limit": "k", "filter": "filters"}


class AtlasRetriever(BaseRetriever):
    """Retriever over one namespace of an `ElasticMemoryAtlas`.

    Each query runs the atlas's multi-path recall (vector, keyword, graph, recency and time
    cues, fused and weighted by each memory's elastic weight). Recalled memories are reinforced,
    so what keeps being useful stays easy to find; pass ``reinforce=False`` for read-only use.

    Setup:
        Install the LangChain extra; the default embedder runs offline.

        ```bash
        pip install ".[langchain]"   # in a checkout of elastic-atlas (not on PyPI)
        ```

    Key init args:
        atlas: ElasticMemoryAtlas
            The memory to search (default: a new atlas with the offline MiniLM embedder).
        namespace: str
            The tenant whose memories are searched; other namespaces are never seen.
        session_id: str | None
            Search one session only (others join, labelled, when ``cross_session``).
        k: int
            Number of documents to return (default 4); ``invoke(query, k=…)`` overrides it.
        filters: dict | None
            Atlas filters, e.g. ``{"type": "preference"}`` or ``{"$session": ["s1", "s2"]}``.

    Instantiate:
        >>> from shared_core import ElasticMemoryAtlas, HashingEmbedder
        >>> from langchain_atlas import AtlasRetriever
        >>> atlas = ElasticMemoryAtlas(embedder=HashingEmbedder())  # omit embedder= for MiniLM
        >>> _ = atlas.add_memories(["Alice prefers oat milk", "Alice's cat is called Miso",
        ...                         "The office is on the 4th floor"], namespace="alice")
        >>> retriever = AtlasRetriever(atlas=atlas, namespace="alice", k=2)

    Invoke:
        >>> docs = retriever.invoke("what milk does Alice like?")
        >>> docs[0].page_content
        'Alice prefers oat milk'
        >>> docs[0].id == docs[0].metadata["id"], docs[0].metadata["namespace"]
        (True, 'alice')
        >>> len(retriever.invoke("Alice", k=1))
        1

    Use within a chain:
        ```python
        chain = {"context": retriever | format_docs, "question": RunnablePassthrough()} | prompt | llm
        ```

    Each document's ``metadata`` holds the caller's metadata plus ``id``, ``score``,
    ``score_breakdown``, ``paths``, ``weight``, ``importance``, ``timestamp``, ``created_at``,
    ``last_accessed_at``, ``access_count``, ``session_id``, ``namespace``, ``other_session`` and
    ``kind`` (the atlas's keys win on a clash); ``Document.id`` is the memory id.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    atlas: ElasticMemoryAtlas = Field(default_factory=ElasticMemoryAtlas,
                                      description="The atlas to search.")
    namespace: str = Field(min_length=1, description="The namespace (tenant) to search.")
    session_id: str | None = Field(default=None, description="Search this session only (None: all).")
    k: int = Field(default=DEFAULT_K, ge=0, description="Number of documents to return.")
    filters: dict[str, Any] | None = Field(default=None, description="Atlas retrieval filters.")
    cross_session: bool | None = Field(
        default=None, description="Let the namespace's other sessions in (None: the atlas config).")
    reinforce: bool = Field(default=True, description="Reinforce the memories that are returned.")

    def __init__(self, **data: Any) -> None:
        check_arguments("AtlasRetriever", data, accepted=type(self).model_fields, renames=_RENAMES)
        super().__init__(**data)

    def _recall_args(self, k: int | None, filters: Mapping[str, Any] | None) -> dict[str, Any]:
        return {"namespace": self.namespace, "session_id": self.session_id,
                "top_k": self.k if k is None else k,
                "filters": self.filters if filters is None else filters,
                "cross_session": self.cross_session, "reinforce": self.reinforce}

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
                                k: int | None = None, filters: Mapping[str, Any] | None = None) -> list[Document]:
        hits = self.atlas.retrieve(query, **self._recall_args(k, filters))
        return [to_document(hit) for hit in hits]

    async def _aget_relevant_documents(self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun,
                                       k: int | None = None, filters: Mapping[str, Any] | None = None
                                       ) -> list[Document]:
        hits = await self.atlas.aretrieve(query, **self._recall_args(k, filters))
        return [to_document(hit) for hit in hits]
