"""The derived conveniences of `ElasticMemoryAtlas`: persistence, async forms, notebook views.

They hold no state and no logic of their own: each async form runs its sync method in a worker
thread (as LlamaIndex's ``BaseMemory`` does; never ``asyncio.run``, which breaks inside Jupyter's
running loop), each view hands the atlas's state to `shared_core.engine.views`, and saving, loading and
exporting hand it to `shared_core.engine.persistence`. Kept apart so that
``atlas.py`` stays the engine's public core.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, Self, cast, overload

if TYPE_CHECKING:
    from .engine.lifecycle.compression import CompressionReport
    from .engine.lifecycle.manager import Lifecycle
    from .engine.state import EngineState
    from .values.config import AtlasConfig
    from .values.model import Context, MemoryNode, ScoredMemory

__all__ = ["AsyncForms", "NotebookViews", "Persistence"]


class _Atlas(Protocol):
    """What the mixins use of `shared_core.atlas.ElasticMemoryAtlas` (which they are mixed into)."""

    _state: EngineState
    _life: Lifecycle

    @property
    def config(self) -> AtlasConfig: ...

    def __len__(self) -> int: ...

    def add_memory(self, content: str, **kwargs: Any) -> MemoryNode: ...

    def add_memories(self, items: Sequence[str | Mapping[str, Any]], **kwargs: Any) -> list[MemoryNode]: ...

    def retrieve(self, query: str, **kwargs: Any) -> list[ScoredMemory]: ...

    def build_context(self, query: str, **kwargs: Any) -> Context: ...

    def update_memory(self, node_id: str, content: str, **kwargs: Any) -> MemoryNode: ...

    def forget(self, node_id: str, **kwargs: Any) -> None: ...

    def end_session(self, session_id: str, **kwargs: Any) -> int: ...

    def compress(self, **kwargs: Any) -> CompressionReport: ...


class AsyncForms:
    """``a``-prefixed forms of the atlas's blocking methods, run with `asyncio.to_thread`."""

    def _sync(self) -> _Atlas:
        return cast("_Atlas", self)

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

    def _viewed(self) -> _Atlas:
        return cast("_Atlas", self)

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
        from .engine.views import graph_view, render_html

        state = self._viewed()._state
        return render_html(graph_view(state, namespace=namespace, max_nodes=max_nodes), color_by=color_by,
                           title=f"Elastic Atlas · {namespace or 'all namespaces'}", compressed=compressed,
                           now=state.clock.now())

    def _repr_html_(self) -> str:
        from html import escape

        page = self._page(namespace=None, color_by="session", max_nodes=200, compressed=True)
        return f'<iframe srcdoc="{escape(page, quote=True)}" style="width:100%;height:620px;border:0"></iframe>'

    def plot(self, *, namespace: str | None = None, color_by: str = "session", ax: Any = None,
             max_nodes: int = 300) -> Any:
        """A static matplotlib view of the graph (or one namespace); returns the axes."""
        from .engine.views import graph_view, plot_graph

        view = graph_view(self._viewed()._state, namespace=namespace, max_nodes=max_nodes)
        return plot_graph(view, ax=ax, color_by=color_by)

    def plot_weights(self, *, namespace: str | None = None, axes: Any = None) -> Any:
        """The weight histogram and the decay curve of the current config; returns the axes."""
        from .engine.views import graph_view, plot_weights

        atlas = self._viewed()
        view = graph_view(self._viewed()._state, namespace=namespace, max_nodes=max(1, len(atlas)))
        cfg = atlas.config
        return plot_weights(view.weights.values(), half_life=cfg.half_life, floor=cfg.weight_floor,
                            cap=cfg.weight_cap, unit=cfg.decay_unit, axes=axes)


class Persistence:
    """Explicit persistence: the memory lives in process; these write and read it."""

    def _saved(self) -> _Atlas:
        return cast("_Atlas", self)

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write everything to one file atomically; `load` reads it back. See `shared_core.engine.persistence`."""
        from .engine.persistence import save_atlas

        atlas = self._saved()
        return save_atlas(atlas._state, path, lifecycle=atlas._life.state)

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, max_unpacked: int | None = None, **kwargs: Any) -> Self:
        """A new atlas from a `save` file (`CorruptFileError` if it is damaged or crafted, with
        nothing half-loaded); ``kwargs`` go to the constructor (an ``embedder`` of the saved
        dimension, a ``clock``, an ``llm`` ...). ``max_unpacked``: the most bytes the file may
        unpack to (default `shared_core.engine.persistence.unpack_limit` of its size)."""
        from .engine.persistence import load_atlas

        def parts(atlas: object) -> tuple[EngineState, Any]:
            loaded = cast("_Atlas", atlas)
            return loaded._state, loaded._life.restore

        return load_atlas(cls, parts, path, max_unpacked=max_unpacked, **kwargs)

    def export_jsonl(self, path: str | os.PathLike[str], *, namespace: str | None = None,
                     embeddings: bool = False) -> Path:
        """Memories then edges, one JSON object per line, for other tools."""
        from .engine.persistence import export_jsonl
        from .values import _validate as check

        ns = None if namespace is None else check.namespace(namespace)
        return export_jsonl(self._saved()._state, path, namespace=ns, embeddings=check.flag(embeddings, "embeddings"))

    def export_graphml(self, path: str | os.PathLike[str], *, namespace: str | None = None) -> Path:
        """The graph as GraphML (Gephi, Cytoscape, yEd)."""
        from .engine.persistence import export_graphml
        from .values import _validate as check

        ns = None if namespace is None else check.namespace(namespace)
        return export_graphml(self._saved()._state, path, namespace=ns)
