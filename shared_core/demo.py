"""``python -m shared_core.demo``: the scripted demo (`shared_core.apps.demo`)."""

from __future__ import annotations

from .apps.demo import main, run_demo

__all__ = ["main", "run_demo"]

if __name__ == "__main__":
    main()
