"""Fail if any import cycle exists among the modules of a package, counting every import.

    python scripts/check_cycles.py shared_core

The import graph comes from grimp (import-linter's engine), with the imports inside functions
and under ``if TYPE_CHECKING:`` counted like any other: a cycle hidden by a local import is still
a cycle of the design. Every strongly connected set of two or more modules is printed with one
of its cycles; the exit status is 1 if there is any.
"""

from __future__ import annotations

import sys

import grimp
import networkx as nx


def cycles(package: str) -> list[list[str]]:
    """One cycle from each strongly connected group of modules of ``package`` (sorted)."""
    graph = grimp.build_graph(package, exclude_type_checking_imports=False, cache_dir=None)
    digraph = nx.DiGraph()
    for module in graph.modules:
        digraph.add_node(module)
        for imported in graph.find_modules_directly_imported_by(module):
            if imported != module:
                digraph.add_edge(module, imported)
    found = []
    for group in nx.strongly_connected_components(digraph):
        if len(group) > 1:
            found.append(nx.find_cycle(digraph.subgraph(group), source=min(group)))
    return sorted(([a for a, _ in cycle] + [cycle[0][0]] for cycle in found), key=lambda c: c[0])


def main(argv: list[str]) -> int:
    status = 0
    for package in argv or ["shared_core"]:
        found = cycles(package)
        for cycle in found:
            print(f"import cycle in {package}: " + " -> ".join(cycle))
        print(f"{package}: {len(found)} import cycle(s)")
        status |= bool(found)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
