"""The baselines of the LoCoMo benchmark, all on the same embedder as the memory.

Each baseline turns a question into a ranking of the conversation's turns (indices into
``Conversation.turns``), best first. Budgets are then packed greedily in rank order with
`pack_lines`, each turn rendered as ``"<date>: <speaker>: <text> [shares <caption>]"``, as in the
dataset README's table.

- ``recency``: the latest turns first (a plain chat buffer);
- ``bm25``: bm25s over the rendered turns (English stopwords, Snowball stemmer);
- ``dense``: cosine of the MiniLM vectors of the turns (the same vectors the memory stores);
- ``hybrid``: reciprocal rank fusion (k = 60) of ``bm25`` and ``dense``;
- ``langchain``: LangChain's ``InMemoryVectorStore`` retriever;
- ``llamaindex``: a LlamaIndex ``VectorStoreIndex`` retriever.

The two framework baselines go through small ``Embeddings`` / ``BaseEmbedding`` wrappers around
the same MiniLM embedder (with a cache keyed by text, so each text is embedded once per run).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from _locomo import Conversation

__all__ = ["BASELINES", "FRAMEWORK_BASELINES", "Ranker", "VectorCache", "make_rankers", "pack_lines"]

Vector = npt.NDArray[np.float32]
Ranker = Callable[[str, Vector], list[int]]
BASELINES = ("recency", "bm25", "dense", "hybrid")
FRAMEWORK_BASELINES = ("langchain", "llamaindex")


class VectorCache:
    """MiniLM vectors by text: every text is embedded once per run, whoever asks for it."""

    def __init__(self, embedder: Any) -> None:
        self.embedder = embedder
        self._vectors: dict[str, Vector] = {}

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        fresh = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        if fresh:
            for text, vec in zip(fresh, self.embedder.embed(fresh), strict=True):
                self._vectors[text] = np.asarray(vec, dtype=np.float32)
        if not texts:
            return np.zeros((0, self.embedder.dim), dtype=np.float32)
        return np.stack([self._vectors[t] for t in texts])


def pack_lines(ranking: Sequence[int], lines: Sequence[str], budget: int,
               count: Callable[[str], int]) -> list[int]:
    """Greedy first-fit packing of rendered lines (joined by newlines) in rank order.

    Returns the indices whose lines fit; the joined text counts at most ``budget`` tokens.
    ``count`` is called once per line considered (pass a memoised counter for speed).
    """
    taken: list[int] = []
    used = 0
    for i in ranking:
        cost = count(lines[i]) + (1 if taken else 0)
        if used + cost <= budget:
            taken.append(i)
            used += cost
        if budget - used < 8:
            break
    while taken and count("\n".join(lines[i] for i in taken)) > budget:  # a merge across "\n"
        taken.pop()
    return taken


def _rrf(rankings: Sequence[Sequence[int]], k: float = 60.0) -> list[int]:
    fused: dict[int, float] = {}
    for ranking in rankings:
        for rank, doc in enumerate(ranking, start=1):
            fused[doc] = fused.get(doc, 0.0) + 1.0 / (k + rank)
    return sorted(fused, key=lambda d: (-fused[d], d))


def make_rankers(conv: Conversation, vectors: npt.NDArray[np.float32], cache: VectorCache, *,
                 names: Sequence[str] = BASELINES + FRAMEWORK_BASELINES) -> dict[str, Ranker]:
    """One ranker per baseline name, built over the turns of ``conv`` (``vectors`` row-aligned).

    A ranker takes the question and its vector and returns turn indices, best first.
    """
    import bm25s
    import Stemmer  # PyStemmer: the Snowball English stemmer bm25s uses

    stemmer = Stemmer.Stemmer("english")
    lines = [t.dated for t in conv.turns]
    n = len(lines)
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(lines, stopwords="en", stemmer=stemmer, show_progress=False),
                    show_progress=False)

    def recency(query: str, qvec: Vector) -> list[int]:
        return list(range(n - 1, -1, -1))

    def bm25(query: str, qvec: Vector) -> list[int]:
        tokens = bm25s.tokenize([query], stopwords="en", stemmer=stemmer, show_progress=False)
        if not tokens.vocab:
            return []
        docs, scores = retriever.retrieve(tokens, k=n, show_progress=False)
        return [int(d) for d, s in zip(docs[0], scores[0], strict=True) if s > 0]

    def dense(query: str, qvec: Vector) -> list[int]:
        sims = vectors @ qvec
        return [int(i) for i in np.argsort(-sims, kind="stable")]

    def hybrid(query: str, qvec: Vector) -> list[int]:
        return _rrf([bm25(query, qvec), dense(query, qvec)])

    rankers: dict[str, Ranker] = {"recency": recency, "bm25": bm25, "dense": dense, "hybrid": hybrid}
    if "langchain" in names:
        rankers["langchain"] = _langchain_ranker(lines, cache, k=n)
    if "llamaindex" in names:
        rankers["llamaindex"] = _llamaindex_ranker(lines, cache, k=n)
    return {name: rankers[name] for name in names}


def _langchain_ranker(lines: Sequence[str], cache: VectorCache, *, k: int) -> Ranker:
    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings
    from langchain_core.vectorstores import InMemoryVectorStore

    class MiniLMEmbeddings(Embeddings):
        """LangChain ``Embeddings`` over the benchmark's MiniLM embedder."""

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return cache.embed(texts).tolist()  # type: ignore[no-any-return]

        def embed_query(self, text: str) -> list[float]:
            return cache.embed([text])[0].tolist()  # type: ignore[no-any-return]

    store = InMemoryVectorStore(MiniLMEmbeddings())
    store.add_documents([Document(page_content=line, metadata={"i": i}) for i, line in enumerate(lines)])
    retriever = store.as_retriever(search_kwargs={"k": k})

    def rank(query: str, qvec: Vector) -> list[int]:
        return [int(doc.metadata["i"]) for doc in retriever.invoke(query)]

    return rank


def _llamaindex_ranker(lines: Sequence[str], cache: VectorCache, *, k: int) -> Ranker:
    from llama_index.core import Settings, VectorStoreIndex
    from llama_index.core.embeddings import BaseEmbedding
    from llama_index.core.schema import TextNode

    from shared_core import TiktokenCounter

    # LlamaIndex's default tokenizer downloads its tiktoken file at first use: give it ours.
    Settings.tokenizer = TiktokenCounter().encode

    class MiniLMEmbedding(BaseEmbedding):
        """LlamaIndex ``BaseEmbedding`` over the benchmark's MiniLM embedder."""

        @classmethod
        def class_name(cls) -> str:
            return "MiniLMEmbedding"

        def _get_query_embedding(self, query: str) -> list[float]:
            return cache.embed([query])[0].tolist()  # type: ignore[no-any-return]

        def _get_text_embedding(self, text: str) -> list[float]:
            return cache.embed([text])[0].tolist()  # type: ignore[no-any-return]

        def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
            return cache.embed(texts).tolist()  # type: ignore[no-any-return]

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_query_embedding(query)

    nodes = [TextNode(text=line, id_=str(i), metadata={"i": i}, excluded_embed_metadata_keys=["i"],
                      excluded_llm_metadata_keys=["i"]) for i, line in enumerate(lines)]
    index = VectorStoreIndex(nodes, embed_model=MiniLMEmbedding(embed_batch_size=64))
    retriever = index.as_retriever(similarity_top_k=k)

    def rank(query: str, qvec: Vector) -> list[int]:
        return [int(hit.node.metadata["i"]) for hit in retriever.retrieve(query)]

    return rank
