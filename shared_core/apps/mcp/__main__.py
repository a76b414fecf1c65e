"""``python -m shared_core.apps.mcp``: the same as the ``elastic-atlas-mcp`` console script."""

from __future__ import annotations

import sys

from ._cli import main

if __name__ == "__main__":
    sys.exit(main())
