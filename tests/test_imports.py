"""Dependencies point one way: the import graph between mcpstart's files (every import,
module level or inside a function, relative or absolute) has no cycle, and no file imports
from a higher floor of the house (FLOORS). The graph is printed (pytest -s shows it)."""

import ast
from functools import cache
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

PACKAGE = Path(__file__).parent.parent / "mcpstart"

FLOORS = (
    {"mcpstart", "defaults", "warnings", "endpoint", "redact", "interrupts", "wire", "workload",
     "command", "platforms"},
    {"stats", "results", "runs", "transports"},
    {"targets"},
    {"measure"},
    {"views"},
    {"engine", "doctor"},
    {"cli"},
)
"""The floors from the ground up, by unit (a subpackage, or a top-level module): a file may
import from its own floor or below, never above. ``mcpstart`` is the package's __init__
(Progress, Step, the version)."""


def module_of(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_module(name: str) -> bool:
    relative = Path(*name.split("."))
    return ((PACKAGE.parent / relative).with_suffix(".py").is_file()
            or (PACKAGE.parent / relative / "__init__.py").is_file())


def imports_of(path: Path) -> set[str]:
    """The mcpstart modules ``path`` imports anywhere in it: ``from . import x`` is module
    ``x`` where x is a file, else (a name the package defines) the package itself."""
    module = module_of(path)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([node.module] if node.module else []))
            for alias in node.names:
                name = f"{base}.{alias.name}"
                found.add(name if is_module(name) else base)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name.split(".")[0] == "mcpstart"}


@cache
def graph() -> dict[str, set[str]]:
    """Module -> the modules it imports, for every file of the package."""
    return {module_of(path): imports_of(path) - {module_of(path)}
            for path in sorted(PACKAGE.rglob("*.py"))}


def unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "mcpstart"


def floor(module: str) -> int:
    return next(i for i, units in enumerate(FLOORS) if unit(module) in units)


def test_the_graph_reads_imports_inside_functions_and_relative_ones():
    """The reader sees an import inside a function, a relative one, and a package's name."""
    edges = graph()
    assert "mcpstart.measure.copies" in edges["mcpstart.measure.run"]  # inside a function
    assert "mcpstart.measure.server" in edges["mcpstart.measure.run"]  # relative, a file
    assert "mcpstart" in edges["mcpstart.measure.run"]  # "from .. import Progress"


def test_no_file_imports_another_in_a_circle():
    edges = graph()
    for source in sorted(edges):
        print(f"{source} -> {', '.join(sorted(edges[source])) or '-'}")
    try:
        list(TopologicalSorter(edges).static_order())
    except CycleError as err:
        raise AssertionError(f"import cycle: {' -> '.join(err.args[1])}") from err


def test_no_file_imports_from_a_higher_floor():
    above = [f"{source} -> {target}" for source, targets in sorted(graph().items())
             for target in sorted(targets) if floor(target) > floor(source)]
    assert not above, f"imports from a higher floor: {above}"


def test_every_unit_has_a_floor():
    assert {unit(m) for m in graph()} <= set().union(*FLOORS)


def defined_twice(source: str) -> list[str]:
    """Top-level functions and classes of a module's ``source`` defined more than once (the
    later silently replaces the earlier, and every caller of the earlier gets the later)."""
    names = [node.name for node in ast.parse(source).body
             if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    return sorted({n for n in names if names.count(n) > 1})


def test_no_module_defines_a_function_or_class_twice():
    assert defined_twice("def a():\n    pass\n\n\ndef a(x):\n    pass\n") == ["a"]
    twice = {str(path.relative_to(PACKAGE)): found for path in sorted(PACKAGE.rglob("*.py"))
             if (found := defined_twice(path.read_text()))}
    assert twice == {}
