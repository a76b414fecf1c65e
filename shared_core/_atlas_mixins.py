"""The derived conveniences of `ElasticMemoryAtlas`: persistence, async forms, notebook views.

They hold no state and no logic of their own: each async form runs its sync method in a worker
thread (as LlamaIndex's ``BaseMemory`` does; never ``asyncio.run``, which breaks inside Jupyter's
running loop), each view hands the atlas to `shared_core.visual`, and saving, loading and exporting hand it to
`shared_core.persistence`. Kept apart so that
``atlas.py`` stays the engine's public core.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast, overload

if TYPE_CHECKING:
    from .atlas import ElasticMemoryAtlas
    from .compression import CompressionReport
    from .model import Context, MemoryNode, ScoredMemory

__all__ = ["AsyncForms", "NotebookViews", "Persistence"]


class AsyncForms:
    """``a``-prefixed forms of the atlas's blocking methods, run with `asyncio.to_thread`."""

    def _sync(self) -> ElasticMemoryAtlas:
        return cast("ElasticMemoryAtlas", self)

    async def aadd_memory(self, content: str, **kwargs: Any) -> MemoryNode:
        return await asyncio.to_thread(lambda: self._sync().add_memory(content, **kwargs))

    async def aadd_memories(self, items: Sequence[str | Mapping[str, Any]], **kwargs: Any) -> list[MemoryNode]:
        return await asyncio.to_thread(lambda: self._sync().add_memories(items, **kwargs))

    async def aretrieve(self, query: str, **kwargs: Any) -> list[ScoredMemory]:
        return await asyncio.to_thread(lambda: self._sync().retrieve(query, **kwargs))

    async def abuild_context(self, query: str, **kwargs: Any) -> Context:
        return await asyncio.to_thread(lambda: self._sync().build_context(query, **kwargs))

    async def aupdate_memory(self, node_id: str, content: str, **kwargs: Any) -> MemoryNode:
        return await asyncio.to_thread(lambda: self._sync().update_memory(node_id, content, **kwargs))

    async def aforget(self, node_id: str, **kwargs: Any) -> None:
        await asyncio.to_thread(lambda: self._sync().forget(node_id, **kwargs))

    async def aend_session(self, session_id: str, **kwargs: Any) -> int:
        return await asyncio.to_thread(lambda: self._sync().end_session(session_id, **kwargs))

    async def acompress(self, **kwargs: Any) -> CompressionReport:
        return await asyncio.to_thread(lambda: self._sync().compress(**kwargs))


class NotebookViews:
    """The graph in Jupyter (extra ``notebooks``): an interactive page and static plots."""

    def _viewed(self) -> ElasticMemoryAtlas:
        return cast("ElasticMemoryAtlas", self)

    @overload
    def to_html(self, path: None = None, *, namespace: str | None = None, color_by: str = "session",
                max_nodes: int = 400) -> str: ...

    @overload
    def to_html(self, path: str | os.PathLike[str], *, namespace: str | None = None, color_by: str = "session",
                max_nodes: int = 400) -> Path: ...

    def to_html(self, path: str | os.PathLike[str] | None = None, *, namespace: str | None = None,
                color_by: str = "session", max_nodes: int = 400) -> str | Path:
        """A self-contained interactive page of the graph: written to ``path`` (and the path
        returned, as `save` does) when given, else returned as a string."""
        page = self._page(namespace=namespace, color_by=color_by, max_nodes=max_nodes)
        if path is None:
            return page
        out = Path(path)
        out.write_text(page, encoding="utf-8")
        return out

    def _page(self, *, namespace: str | None, color_by: str, max_nodes: int, compressed: bool = False) -> str:
        from .visual import graph_view, render_html

        atlas = self._viewed()
        return render_html(graph_view(atlas, namespace=namespace, max_nodes=max_nodes), color_by=color_by,
                           title=f"Elastic Atlas · {namespace or 'all namespaces'}", compressed=compressed,
                           now=atlas.clock.now())

    def _repr_html_(self) -> str:
        from html import escape

        page = self._page(namespace=None, color_by="session", max_nodes=200, compressed=True)
        return f'<iframe srcdoc="{escape(page, quote=True)}" style="width:100%;height:620px;border:0"></iframe>'

    def plot(self, *, namespace: str | None = None, color_by: str = "session", ax: Any = None,
             max_nodes: int = 300) -> Any:
        """A static matplotlib view of the graph (or one namespace); returns the axes."""
        from .visual import graph_view, plot_graph

        view = graph_view(self._viewed(), namespace=namespace, max_nodes=max_nodes)
        return plot_graph(view, ax=ax, color_by=color_by)

    def plot_weights(self, *, namespace: str | None = None, axes: Any = None) -> Any:
        """The weight histogram and the decay curve of the current config; returns the axes."""
        from .visual import graph_view, plot_weights

        atlas = self._viewed()
        view = graph_view(atlas, namespace=namespace, max_nodes=max(1, len(atlas)))
        cfg = atlas.config
        return plot_weights(view.weights.values(), half_life=cfg.half_life, floor=cfg.weight_floor,
                            cap=cfg.weight_cap, unit=cfg.decay_unit, axes=axes)


class Persistence:
    """Explicit persistence: the memory lives in process; these write and read it."""

    def _saved(self) -> ElasticMemoryAtlas:
        return cast("ElasticMemoryAtlas", self)

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write everything to one file atomically; `load` reads it back. See `shared_core.persistence`."""
        from .persistence import save_atlas

        return save_atlas(self._saved(), path)

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, max_unpacked: int | None = None,
             **kwargs: Any) -> ElasticMemoryAtlas:
        """A new atlas from a `save` file (`CorruptFileError` if it is damaged or crafted, with
        nothing half-loaded); ``kwargs`` go to the constructor (an ``embedder`` of the saved
        dimension, a ``clock``, an ``llm`` ...). ``max_unpacked``: the most bytes the file may
        unpack to (default `shared_core.persistence.unpack_limit` of its size)."""
        from .atlas import ElasticMemoryAtlas
        from .persistence import load_atlas

        atlas_cls = cls if issubclass(cls, ElasticMemoryAtlas) else ElasticMemoryAtlas
        return load_atlas(atlas_cls, path, max_unpacked=max_unpacked, **kwargs)

    def export_jsonl(self, path: str | os.PathLike[str], *, namespace: str | None = None,
                     embeddings: bool = False) -> Path:
        """Memories then edges, one JSON object per line, for other tools."""
        from . import _validate as check
        from .persistence import export_jsonl

        ns = None if namespace is None else check.namespace(namespace)
        return export_jsonl(self._saved(), path, namespace=ns, embeddings=check.flag(embeddings, "embeddings"))

    def export_graphml(self, path: str | os.PathLike[str], *, namespace: str | None = None) -> Path:
        """The graph as GraphML (Gephi, Cytoscape, yEd)."""
        from . import _validate as check
        from .persistence import export_graphml

        return export_graphml(self._saved(), path, namespace=None if namespace is None else check.namespace(namespace))
