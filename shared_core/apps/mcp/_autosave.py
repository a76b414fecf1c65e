"""`AutoSaver`: keep a save file of the server's atlas current.

The server saves when the atlas has changed (any event: a write, a recall that reinforced, a
forget …), every few seconds from a daemon thread and once more when it stops, so a killed server
loses at most the last interval. Each save is atomic (`ElasticMemoryAtlas.save` writes a temporary
file and renames it), so the file is always a complete atlas.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from ...atlas import ElasticMemoryAtlas
from ...engine.lifecycle.maintenance import MaintenanceTimer
from ...values.errors import InvalidInputError

__all__ = ["AutoSaver"]

logger = logging.getLogger("shared_core.apps.mcp")


class AutoSaver:
    """Save ``atlas`` to ``path`` when it has changed: every ``every`` seconds (0: only on `close`).

    A file that does not exist yet counts as out of date, so the first run leaves one behind.

    >>> import tempfile
    >>> from shared_core import ElasticMemoryAtlas, HashingEmbedder
    >>> atlas = ElasticMemoryAtlas(embedder=HashingEmbedder())
    >>> folder = tempfile.TemporaryDirectory()
    >>> saver = AutoSaver(atlas, Path(folder.name) / "memory.atlas", every=0)
    >>> _ = atlas.add_memory("Alice likes tea", namespace="alice")
    >>> saver.close()
    True
    >>> len(ElasticMemoryAtlas.load(saver.path))
    1
    >>> folder.cleanup()
    """

    def __init__(self, atlas: ElasticMemoryAtlas, path: str | Path, *, every: float = 30.0) -> None:
        self.path = Path(path).expanduser()
        if not self.path.parent.is_dir():
            raise InvalidInputError(f"cannot save to {str(self.path)!r}: "
                                    f"directory {str(self.path.parent)!r} does not exist")
        self.atlas = atlas
        self.saves = 0
        self._changed = threading.Event()
        if not self.path.exists():
            self._changed.set()
        self._saving = threading.Lock()
        self._unsubscribe = atlas.subscribe(lambda _event: self._changed.set())
        try:  # the rounds in the background (`every` is checked there)
            self._timer = MaintenanceTimer(self._round, every=every, name="atlas-autosave")
        except BaseException:
            self._unsubscribe()
            raise
        self.every = self._timer.every

    def _round(self) -> None:
        try:
            self.save_if_changed()
        except Exception:  # keep serving; the next round (or close) tries again
            logger.exception("could not save the atlas to %s", self.path)

    def save_if_changed(self) -> bool:
        """Save now if anything changed since the last save; whether it saved. Raises if the save fails."""
        with self._saving:
            if not self._changed.is_set():
                return False
            self._changed.clear()
            try:
                self.atlas.save(self.path)
            except BaseException:
                self._changed.set()
                raise
            self.saves += 1
            logger.info("saved the atlas to %s", self.path)
            return True

    def close(self) -> bool:
        """Stop saving in the background and save one last time if needed; whether it saved."""
        self._timer.close()
        self._unsubscribe()
        return self.save_if_changed()
