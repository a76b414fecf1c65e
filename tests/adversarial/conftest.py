"""The adversarial suite: hostile input on every backend.

It reuses the contract suite's fixtures, so every test that takes ``atlas`` or ``make_atlas`` runs
once per backend (in process and FalkorDB, each FalkorDB test on a graph prefix of its own).
"""

from __future__ import annotations

from ..contract.conftest import (
                                 atlas,
                                 backend_name,
                                 data_dir,
                                 falkordb_cluster_url,
                                 falkordb_url,
                                 make_atlas,
                                 make_backend,
)

__all__ = ["atlas", "backend_name", "data_dir", "falkordb_cluster_url", "falkordb_url", "make_atlas",
           "make_backend"]
