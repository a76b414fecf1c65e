"""The installed distribution's version (``"0.0.0"`` when running from a source tree)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

__all__ = ["__version__"]

try:
    __version__ = version("elastic-atlas")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0"
