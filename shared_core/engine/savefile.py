"""The save file's container: a versioned zip, written atomically and read as untrusted input.

`atomic_write` writes a file whole or not at all: a temporary file in the same directory,
flushed and fsynced, then renamed over the target (and the directory fsynced), so a crash
leaves either the old file or the new one. `read_savefile` reads a save file
(`shared_core.engine.persistence`): a zip whose ``manifest.json`` names the format, its
version and the SHA-256 of every other member. It unpacks at most `unpack_limit` bytes (a zip
bomb is refused from its declared sizes before anything is inflated, and each member is read in
chunks that stop at the limit), refuses JSON nested deeper than `MAX_STATE_DEPTH`, checks the
zip CRCs and the checksums, and loads the ``.npy`` members without pickle; anything wrong is
`CorruptFileError`.

>>> import os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "memory.atlas")
>>> atomic_write(path, lambda fh: fh.write(b"not a zip")).name
'memory.atlas'
>>> read_savefile(path)
Traceback (most recent call last):
...
shared_core.values.errors.CorruptFileError: ... is not an Elastic Atlas file (atlas.save writes them)
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tempfile
import zipfile
import zlib
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import IO, Any

import numpy as np

from ..values import _validate as check
from ..values._records import MAX_STATE_DEPTH, rule
from ..values.errors import CorruptFileError, InvalidInputError

__all__ = ["FORMAT", "READS", "VERSION", "PathLike", "atomic_write", "read_savefile", "unpack_limit"]

FORMAT = "elastic-atlas"
#: the format version written; a file of any version in `READS` loads. Version 2 (library
#: session 16) dropped the lifecycle's ``indexed`` map, the keyword texts of merged memories,
#: which are derived since (`shared_core.engine.lifecycle.capacity.node_bytes`); a version 1
#: file still carries it, and it is checked and not used.
VERSION = 2
READS = (1, 2)
_CHUNK = 1 << 20
PathLike = str | os.PathLike[str]


def _path(path: object) -> Path:
    if not isinstance(path, (str, os.PathLike)) or not str(path):
        raise InvalidInputError(f"path must be a non-empty str or os.PathLike, got {path!r}")
    return Path(path)


def atomic_write(path: PathLike, write: Callable[[IO[bytes]], None]) -> Path:
    target = _path(path)
    if not target.parent.is_dir():
        raise InvalidInputError(f"cannot write {str(target)!r}: directory {str(target.parent)!r} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    with suppress(OSError):  # make the rename itself durable (POSIX)
        dir_fd = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    return target


def unpack_limit(file_size: int) -> int:
    """The most bytes a save file of ``file_size`` bytes may unpack to: 32 MiB plus 100 times its
    size: well above what a real save unpacks to, far below what a zip bomb does.
    ``load(..., max_unpacked=n)`` sets another limit.

    >>> unpack_limit(1_000_000) // 2**20
    127
    """
    return 32 * 2**20 + 100 * file_size


def _member(zf: zipfile.ZipFile, name: str, budget: list[int], where: str) -> bytearray:
    """Member ``name`` inflated in chunks, never past its declared size nor ``budget[0]`` (which
    it reduces); `CorruptFileError` when the file would unpack to more."""
    info = zf.getinfo(name)
    if info.file_size > budget[0]:
        raise CorruptFileError(f"{where}: member {name!r} unpacks to {info.file_size} bytes, more than the "
                               f"{budget[0]} left of the load's limit (pass max_unpacked= to allow more)")
    data = bytearray()
    with zf.open(info) as fh:
        while chunk := fh.read(_CHUNK):
            data += chunk
            if len(data) > info.file_size or len(data) > budget[0]:
                raise CorruptFileError(f"{where}: member {name!r} unpacks to more than it declares")
    budget[0] -= len(data)
    return data


def _json(data: bytes | bytearray, name: str, where: str) -> Any:
    """Parse ``data``; nesting deeper than `MAX_STATE_DEPTH` (or than the parser's recursion
    limit) is `CorruptFileError`, not `RecursionError`."""
    try:
        value = json.loads(data)
    except RecursionError:
        raise CorruptFileError(f"{where}: {name} nests deeper than {MAX_STATE_DEPTH} levels") from None
    rule(f"{where}: {name}", check.depth, value, name, MAX_STATE_DEPTH)
    return value


def read_savefile(path: PathLike, max_unpacked: int | None = None
                  ) -> tuple[dict[str, Any], dict[str, np.ndarray[Any, Any]]]:
    """The ``state.json`` object and the arrays by member name of the save file at ``path``,
    every check of the module docstring passed (`FileNotFoundError` if there is no file)."""
    source = _path(path)
    if not source.is_file():
        raise FileNotFoundError(f"no saved atlas at {str(source)!r}")
    where = repr(str(source))
    with source.open("rb") as head:
        magic = head.read(4)
    if not magic:
        raise CorruptFileError(f"{where} is empty: truncated or corrupt")
    if magic != b"PK\x03\x04":  # a save file is a zip archive; a truncated one still starts as one
        raise CorruptFileError(f"{where} is not an Elastic Atlas file (atlas.save writes them)")
    budget = [unpack_limit(source.stat().st_size) if max_unpacked is None else max_unpacked]
    try:
        with zipfile.ZipFile(source) as zf:
            if "manifest.json" not in zf.namelist():
                raise CorruptFileError(f"{where} is not an Elastic Atlas file: a zip archive with no "
                                       "manifest.json")
            manifest = _json(_member(zf, "manifest.json", budget, where), "manifest.json", where)
            if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
                raise CorruptFileError(f"{where} is not an Elastic Atlas file")
            if manifest.get("version") not in READS:
                raise CorruptFileError(f"{where} has format version {manifest.get('version')!r}; "
                                       f"this library reads versions {READS[0]} to {READS[-1]}")
            digests = manifest.get("sha256")
            if not isinstance(digests, dict) or "state.json" not in digests:
                raise CorruptFileError(f"{where}: the manifest lists no members")
            declared = sum(zf.getinfo(name).file_size for name in digests)
            if declared > budget[0]:
                raise CorruptFileError(f"{where} unpacks to {declared} bytes, more than the load's limit of "
                                       f"{budget[0]} (pass max_unpacked= to allow more)")
            blobs = {}
            for name, digest in digests.items():
                data = _member(zf, name, budget, where)
                if hashlib.sha256(data).hexdigest() != digest:
                    raise CorruptFileError(f"{where}: member {name!r} does not match its checksum")
                blobs[name] = data
    except CorruptFileError:
        raise
    except (zipfile.BadZipFile, zlib.error, KeyError, EOFError, ValueError, OSError, NotImplementedError,
            RuntimeError, TypeError) as exc:
        raise CorruptFileError(f"{where} is truncated or corrupt: {exc}") from None
    try:
        state = _json(blobs.pop("state.json"), "state.json", where)
        arrays = {name: np.load(io.BytesIO(data), allow_pickle=False) for name, data in blobs.items()}
    except CorruptFileError:
        raise
    except (ValueError, OSError, EOFError) as exc:
        raise CorruptFileError(f"{where} holds unreadable data: {exc}") from None
    if not isinstance(state, dict):
        raise CorruptFileError(f"{where}: state.json is not an object")
    return state, arrays
