"""Dependencies point one way: the import graph between mcpstart's subpackages and top-level
modules (every import, module-level or inside a function) has no cycle. The graph is printed
(pytest -s shows it)."""

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

PACKAGE = Path(__file__).parent.parent / "mcpstart"


def unit(module: str) -> str:
    """The node a module belongs to: its subpackage (``transports``), or the top-level module."""
    parts = module.split(".")
    known = len(parts) > 1 and ((PACKAGE / parts[1]).is_dir()
                                or (PACKAGE / f"{parts[1]}.py").is_file())
    if not known:
        return "mcpstart"  # the package itself, or a name its __init__ defines (Step)
    return parts[1]


def imports_of(path: Path) -> set[str]:
    """The mcpstart modules ``path`` imports (relative imports resolved)."""
    module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([node.module] if node.module else []))
            names = [f"{base}.{alias.name}" for alias in node.names] if not node.module else [base]
            found.update(n for n in names if n.startswith("mcpstart"))
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("mcpstart"))
    return found


def graph() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if "reference" in path.parts:
            continue
        source = unit(".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts))
        targets = {unit(m) for m in imports_of(path)} - {source, "mcpstart"}
        edges.setdefault(source, set()).update(targets)
    return edges


def test_no_cycle_between_subpackages_and_modules():
    edges = graph()
    for source in sorted(edges):
        print(f"{source:>12} -> {', '.join(sorted(edges[source])) or '-'}")
    try:
        order = list(TopologicalSorter(edges).static_order())
    except CycleError as err:
        raise AssertionError(f"import cycle: {' -> '.join(err.args[1])}") from err
    assert order.index("transports") < order.index("measure") < order.index("engine")


def test_statistics_and_views_do_not_import_measure():
    edges = graph()
    assert "measure" not in edges["views"] and "measure" not in edges["stats"]
    assert edges["stats"] <= {"warnings"}
    assert "measure" not in edges["targets"] and "transports" not in edges["targets"]
