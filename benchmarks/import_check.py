"""The import graph read by another program: grimp (the graph library behind import-linter,
`pip install grimp`) builds mcpstart's module graph from every import statement, then this
prints the import cycles between modules and the imports that go up a floor, to set beside
tests/test_imports.py (the project's own reader). Exit status 1 when either finds one.

    python3 benchmarks/import_check.py
"""

from __future__ import annotations

import sys

LAYERS = ["mcpstart.cli", "mcpstart.engine", "mcpstart.views", "mcpstart.measure",
          "mcpstart.targets", "mcpstart.stats"]
"""Floors from the top down, as grimp's layers (a higher one may import a lower one only);
tests/test_imports.py's FLOORS, for the units grimp can name as packages or modules."""


def main() -> int:
    try:
        import grimp
    except ImportError:
        print("grimp is not installed: pip install grimp")
        return 2
    graph = grimp.build_graph("mcpstart", include_external_packages=False)
    cycles = sorted((module, imported) for module in graph.modules
                    for imported in graph.find_modules_directly_imported_by(module)
                    if graph.chain_exists(importer=imported, imported=module))
    upward = sorted((d.importer, d.imported)
                    for d in graph.find_illegal_dependencies_for_layers(layers=LAYERS))
    print(f"grimp: "
          f"{len(graph.modules)} modules")
    print(f"imports in a cycle: {len(cycles)}" + "".join(f"\n  {a} -> {b}" for a, b in cycles))
    print(f"imports up a floor: {len(upward)}" + "".join(f"\n  {a} -> {b}" for a, b in upward))
    return 1 if cycles or upward else 0


if __name__ == "__main__":
    sys.exit(main())
