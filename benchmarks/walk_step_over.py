r"""Ablation (issue 24): recall's walk and the context windows stepping over a backchannel.

    nice -n 5 python benchmarks/walk_step_over.py --no-walk-step --conversations conv-26,conv-30 \
        --perturbations fillers,real_chat

runs `robustness.py` with its arguments, the library as built (both walks step over a
backchannel: `WalkSpec.step_over`, `shared_core.formulas.scoring.step_over`), or with one of the two
steps left out: ``--no-walk-step``, recall's walk (`shared_core.engine.walk`) walks into a
backchannel as it did before session 17; ``--no-window-step``, the context windows' one-hop walk
(`shared_core.engine.neighbours`) does (it then shows a backchannel next to a hit and stops there:
before session 17 it also reached one turn past it, which is not restored here). The session-16
experiment that this replaced patched `PartitionBase.expand` in process; its figures and the
built ones are in `benchmarks/README.md` ("Stepping over a backchannel").
"""

from __future__ import annotations

import dataclasses
import runpy
import sys
from pathlib import Path
from typing import Any

from shared_core.engine import neighbours, walk
from shared_core.store.contract import WalkSpec

HERE = Path(__file__).parent


def _without_step(**fields: Any) -> WalkSpec:
    return WalkSpec(**{**fields, "step_over": False})


if __name__ == "__main__":
    if "--no-walk-step" in sys.argv:
        sys.argv.remove("--no-walk-step")
        walk.WalkSpec = _without_step  # type: ignore[assignment,attr-defined]
    if "--no-window-step" in sys.argv:
        sys.argv.remove("--no-window-step")
        session_walk = neighbours._session_walk
        neighbours._session_walk = lambda: dataclasses.replace(session_walk(), step_over=False)
    sys.argv[0] = str(HERE / "robustness.py")
    sys.path.insert(0, str(HERE))
    runpy.run_path(str(HERE / "robustness.py"), run_name="__main__")
