"""``elastic-atlas-mcp``: serve one atlas to MCP clients over stdio or streamable HTTP.

The SDK is imported only once the arguments are parsed and the atlas is built, so ``--help`` and
argument errors are instant and a missing ``mcp`` extra is reported as such.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from ...atlas import ElasticMemoryAtlas
from ...text.embedding import HashingEmbedder
from ...values.config import AtlasConfig
from ...values.errors import AtlasError, MissingDependencyError
from ._autosave import AutoSaver
from ._service import MemoryService

if TYPE_CHECKING:
    from ._server import AtlasMCPServer

__all__ = ["build_parser", "main"]

PROG = "elastic-atlas-mcp"
PRESETS: dict[str, Callable[..., AtlasConfig]] = {
    "default": AtlasConfig.default, "chat": AtlasConfig.chat, "archive": AtlasConfig.archive,
    "linear": AtlasConfig.linear, "rich": AtlasConfig.rich,
}
logger = logging.getLogger("shared_core.apps.mcp")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="Serve an Elastic Atlas memory to MCP clients (Claude Desktop, IDEs, agents).")
    net = parser.add_argument_group("transport")
    net.add_argument("--transport", choices=["stdio", "http"], default="stdio",
                     help="stdio (the client starts the server) or streamable HTTP (default: stdio)")
    net.add_argument("--host", default="127.0.0.1",
                     help="HTTP interface to bind (default: 127.0.0.1; the server has no authentication)")
    net.add_argument("--port", type=int, default=8000, help="HTTP port; 0 picks a free one (default: 8000)")
    net.add_argument("--path", default="/mcp", help="HTTP endpoint path (default: /mcp)")
    scope = parser.add_argument_group("namespaces")
    scope.add_argument("--namespace", metavar="NS",
                       help="namespace for calls that name none (default: every call must name one)")
    scope.add_argument("--fixed-namespace", action="store_true",
                       help="hold every call to --namespace: a single-user server")
    scope.add_argument("--session-only", action="store_true",
                       help="a read or search that names a session sees only that session "
                            "(default: other sessions too, ranked lower)")
    atlas = parser.add_argument_group("atlas")
    atlas.add_argument("--embedder", choices=["minilm", "hashing"],
                       help="minilm: the bundled all-MiniLM-L6-v2 model (default for a new atlas; a loaded "
                            "one keeps its own); hashing: instant, not semantic (tests and demos)")
    atlas.add_argument("--preset", choices=sorted(PRESETS), help="AtlasConfig preset of a new atlas (default: default)")
    atlas.add_argument("--max-nodes", type=int, metavar="N", help="capacity: evict the weakest memories beyond N")
    atlas.add_argument("--max-bytes", type=int, metavar="B",
                       help="capacity: evict the weakest memories beyond B bytes, however many namespaces")
    atlas.add_argument("--max-namespaces", type=int, metavar="N",
                       help="refuse a write that would start namespace N+1 (counting namespaces with memories)")
    atlas.add_argument("--max-content-chars", type=int, metavar="N",
                       help="longest memory accepted (default: 100000 characters)")
    atlas.add_argument("--token-budget", type=int, default=1000, metavar="N",
                       help="memory_read's default token budget (default: 1000)")
    atlas.add_argument("--backend", metavar="URL", help="storage backend URL, e.g. falkordb://localhost:6379")
    files = parser.add_argument_group("persistence", "a loaded atlas keeps the configuration it was saved with")
    files.add_argument("--load", metavar="FILE", help="start from the atlas saved in FILE")
    files.add_argument("--save", metavar="FILE",
                       help="save the atlas to FILE (atomically) when it changed: every --save-every seconds "
                            "and when the server stops")
    files.add_argument("--store", metavar="FILE", help="both: load FILE if it exists, and save to it; "
                       "chroma:DIR instead keeps every write durably in the directory DIR (the chroma backend)")
    files.add_argument("--save-every", type=float, default=30.0, metavar="SECONDS",
                       help="how often to save a changed atlas; 0: only when the server stops (default: 30)")
    parser.add_argument("--log-level", choices=["DEBUG", "INFO", "WARNING", "ERROR"], default="WARNING",
                        help="server log level, on stderr (default: WARNING)")
    return parser


def _files(args: argparse.Namespace) -> tuple[Path | None, Path | None]:
    """The file to load (if any) and the file to save to (if any)."""
    if args.store:
        store = Path(args.store).expanduser()
        return (store if store.exists() else None), store
    return (Path(args.load).expanduser() if args.load else None,
            Path(args.save).expanduser() if args.save else None)


def open_atlas(args: argparse.Namespace, load: Path | None) -> ElasticMemoryAtlas:
    """A new atlas configured by the options, or the one saved in ``load``."""
    overrides: dict[str, Any] = {}
    if args.max_nodes is not None:
        overrides["max_nodes"] = args.max_nodes
    for name in ("max_bytes", "max_namespaces"):
        if getattr(args, name) is not None:
            overrides[name] = getattr(args, name)
    if args.max_content_chars is not None:
        overrides["max_content_chars"] = args.max_content_chars
    kwargs: dict[str, Any] = {"backend": args.backend}
    if args.embedder == "hashing":
        kwargs["embedder"] = HashingEmbedder()
    if load is None:
        return ElasticMemoryAtlas(config=PRESETS[args.preset or "default"](**overrides), **kwargs)
    ignored = [f"--{name.replace('_', '-')}" for name in ("preset", *overrides) if getattr(args, name) is not None]
    if ignored:
        logger.warning("%s: ignored, the atlas loaded from %s keeps its saved configuration",
                       ", ".join(ignored), load)
    if args.embedder == "minilm":
        kwargs["embedder"] = None
    return ElasticMemoryAtlas.load(load, **kwargs)


def _import_server() -> Callable[..., AtlasMCPServer]:
    try:
        from ._server import build_server
    except ImportError as exc:
        if (exc.name or "").split(".")[0] not in {"mcp", "mcp_types", "pydantic", "uvicorn", "starlette"}:
            raise
        raise MissingDependencyError.for_extra("the MCP SDK (mcp)", "mcp") from exc
    return build_server


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt  # SIGTERM ends the server as Ctrl-C does: through the finally clauses


async def _serve_http(server: AtlasMCPServer, *, host: str, port: int, path: str, log_level: str) -> None:
    import uvicorn

    app = server.streamable_http_app(streamable_http_path=path, host=host)
    config = uvicorn.Config(app, host=host, port=port, log_level=log_level.lower(), lifespan="on")

    class Announcing(uvicorn.Server):
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            if self.started:
                bound = self.servers[0].sockets[0].getsockname()[1] if self.servers else port
                shown = f"[{host}]" if ":" in host else host
                print(f"{PROG}: serving streamable HTTP at http://{shown}:{bound}{path}", file=sys.stderr,
                      flush=True)

    await Announcing(config).serve()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the server until the client disconnects (stdio) or a signal arrives; the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.fixed_namespace and not args.namespace:
        parser.error("--fixed-namespace needs --namespace")
    if not 0 <= args.port <= 65535:
        parser.error(f"--port must be in 0..65535, got {args.port}")
    if not args.path.startswith("/"):
        parser.error(f"--path must start with '/', got {args.path!r}")
    if args.store and (args.load or args.save):
        parser.error("--store is --load and --save of one file: give either --store or --load/--save")
    if args.save_every < 0:
        parser.error(f"--save-every must be >= 0, got {args.save_every}")
    if args.store and args.store.startswith("chroma:"):  # durable as it goes: nothing to load or save
        if args.backend:
            parser.error("--store chroma:DIR is the backend: give either it or --backend")
        args.backend, args.store = args.store, None
    logging.basicConfig(level=args.log_level, stream=sys.stderr, format=f"{PROG}: %(levelname)s %(message)s")
    load, save = _files(args)
    try:
        atlas = open_atlas(args, load)
        build_server = _import_server()
        service = MemoryService(atlas, default_namespace=args.namespace, fixed_namespace=args.fixed_namespace,
                                default_token_budget=args.token_budget, cross_session=not args.session_only)
        saver = AutoSaver(atlas, save, every=args.save_every) if save is not None else None
    except (AtlasError, OSError) as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    server = build_server(service, log_level=args.log_level)
    if args.transport == "http" and args.host not in ("127.0.0.1", "localhost", "::1"):
        logger.warning("listening on %s: anyone who can reach it can read and change every namespace", args.host)
    signal.signal(signal.SIGTERM, _interrupt)
    status = 0
    try:
        if args.transport == "stdio":
            server.run("stdio")
        else:
            import anyio

            anyio.run(lambda: _serve_http(server, host=args.host, port=args.port, path=args.path,
                                          log_level=args.log_level))
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # let the last save finish
        if saver is not None:
            try:
                saver.close()
            except (AtlasError, OSError) as exc:
                print(f"{PROG}: error: could not save the atlas to {str(save)!r}: {exc}", file=sys.stderr)
                status = 1
        try:
            atlas.close()  # a durable backend (--store chroma:DIR) commits its last writes
        except (AtlasError, OSError) as exc:
            print(f"{PROG}: error: could not close the memory store: {exc}", file=sys.stderr)
            status = 1
    return status
