"""The write-ahead log of a chroma directory: the commit point of every write.

The log is a run of numbered segment files (``wal-00000001.log`` …) in the directory. Each
segment starts with an 8-byte magic; then records, each ``<length:u32><crc32:u32><payload>``,
where the payload is one atomic write of the atlas (`shared_core.store.chroma._records`). A record is
committed once its bytes and an ``fsync`` of the segment are done; records appended together
share one ``fsync`` (group commit).

Reading (`read_segments`) checks every record's length and CRC. A defect at the very end of the
newest segment is a torn write of a process that died while appending: it is dropped (and
truncated away when the log is next opened for writing). A defect anywhere else, or a missing
magic, is corruption and raises `CorruptFileError`: nothing is loaded.

>>> import tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> log = WriteAheadLog(d, [])
>>> log.append([b"one", b"two"]); log.sync()
>>> [p for _, p in read_segments(d)[0]]
[b'one', b'two']
>>> log.close()
"""

from __future__ import annotations

import os
import re
import struct
import zlib
from collections.abc import Sequence
from pathlib import Path

from ...values.errors import CorruptFileError

__all__ = ["MAGIC", "WriteAheadLog", "read_segments", "segment_path"]

MAGIC = b"EAWAL01\n"
_HEADER = struct.Struct("<II")
_NAME = re.compile(r"wal-(\d{8})\.log")


def segment_path(directory: Path, number: int) -> Path:
    return directory / f"wal-{number:08d}.log"


def _segments(directory: Path) -> list[int]:
    return sorted(int(m.group(1)) for p in directory.iterdir() if (m := _NAME.fullmatch(p.name)))


def read_segments(directory: Path, limits: dict[int, int] | None = None
                  ) -> tuple[list[tuple[int, bytes]], dict[int, int]]:
    """Every committed record, oldest first, as (segment number, payload); and, per segment, the
    offset where its valid records end (a torn tail of the newest starts there). ``limits``:
    read only that many bytes of the segments it names (those known durable)."""
    numbers = _segments(directory)
    records: list[tuple[int, bytes]] = []
    ends: dict[int, int] = {}
    for k, number in enumerate(numbers):
        path = segment_path(directory, number)
        try:
            data = path.read_bytes()
            if limits is not None and number in limits:
                data = data[:limits[number]]
        except OSError as exc:
            raise CorruptFileError(f"cannot read the log segment {str(path)!r}: {exc}") from None
        last = k == len(numbers) - 1
        if data[:len(MAGIC)] != MAGIC:
            if last and len(data) < len(MAGIC) and MAGIC.startswith(data):
                ends[number] = 0  # created, magic not fully written: empty
                continue
            raise CorruptFileError(f"{str(path)!r} is not an Elastic Atlas log segment")
        pos = len(MAGIC)
        while pos < len(data):
            torn = f"{str(path)!r}: a damaged record at byte {pos}"
            if pos + _HEADER.size > len(data):
                if last:
                    break
                raise CorruptFileError(f"{torn} (truncated header)")
            length, crc = _HEADER.unpack_from(data, pos)
            end = pos + _HEADER.size + length
            if end > len(data):
                if last:
                    break
                raise CorruptFileError(f"{torn} (truncated)")
            payload = data[pos + _HEADER.size:end]
            if zlib.crc32(payload) != crc:
                if last and end == len(data):
                    break  # the newest record, torn on its way to disk
                raise CorruptFileError(f"{torn} (checksum mismatch)")
            records.append((number, payload))
            pos = end
        ends[number] = pos
    return records, ends


class WriteAheadLog:
    """Appends records to the newest segment; `sync` makes them durable; `rotate` starts a new
    segment (the checkpointer applies and deletes the closed ones).

    ``ends`` is `read_segments`'s second result: the newest segment is truncated to its valid
    end (dropping a torn tail) and appended to. Not thread safe: the backend serialises calls.
    """

    def __init__(self, directory: Path, numbers: Sequence[int], *, ends: dict[int, int] | None = None) -> None:
        self.directory = directory
        self.number = numbers[-1] if numbers else 1
        path = segment_path(directory, self.number)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            valid = (ends or {}).get(self.number, 0)
            size = os.fstat(fd).st_size
            if valid < len(MAGIC):
                os.ftruncate(fd, 0)
                os.write(fd, MAGIC)
                valid = len(MAGIC)
            elif size > valid:
                os.ftruncate(fd, valid)  # the torn tail of a crashed writer
            os.lseek(fd, valid, os.SEEK_SET)
            os.fsync(fd)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        self.size = self.synced = valid
        _sync_directory(directory)

    def append(self, payloads: Sequence[bytes]) -> None:
        """Write the records (not yet durable: see `sync`). On a failed write the segment is cut
        back to its last whole record and the error raised."""
        chunks = []
        for payload in payloads:
            chunks.append(_HEADER.pack(len(payload), zlib.crc32(payload)))
            chunks.append(payload)
        data = b"".join(chunks)
        try:
            view = memoryview(data)
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
        except BaseException:
            try:
                os.ftruncate(self._fd, self.size)
                os.lseek(self._fd, self.size, os.SEEK_SET)
            except OSError:
                pass
            raise
        self.size += len(data)

    def sync(self) -> None:
        """Make every appended record durable; on failure, cut the segment back to its last
        durable byte (best effort) and raise."""
        try:
            os.fsync(self._fd)
        except BaseException:
            try:
                os.ftruncate(self._fd, self.synced)
                os.lseek(self._fd, self.synced, os.SEEK_SET)
                self.size = self.synced
            except OSError:
                pass
            raise
        self.synced = self.size

    def rotate(self) -> int:
        """Close the current segment and start the next; returns the closed segment's number."""
        closed = self.number
        fd = os.open(segment_path(self.directory, closed + 1), os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, MAGIC)
            os.fsync(fd)
        except BaseException:
            os.close(fd)
            raise
        _sync_directory(self.directory)
        os.close(self._fd)
        self._fd, self.number = fd, closed + 1
        self.size = self.synced = len(MAGIC)
        return closed

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def _sync_directory(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
