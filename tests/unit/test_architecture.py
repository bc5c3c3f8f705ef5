"""The shape of the code (docs/architecture.md): one package per workload, imports one way.

Read from the source's own imports (every ``import`` statement, also those inside functions), so
that a lazy import cannot hide a circle or a dependency the wrong way.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from iolab.workloads.registry import WORKLOADS

SRC = Path(__file__).resolve().parents[2] / "src" / "iolab"
# each layer, and what it never imports: cli -> runner -> workloads -> engines -> system
NEVER = {
    "engines": ("iolab.workloads", "iolab.runner", "iolab.cli", "iolab.config", "iolab.report"),
    "workloads": ("iolab.runner", "iolab.cli", "iolab.report", "iolab.fleet", "iolab.serve"),
    "runner": ("iolab.cli", "iolab.serve"),
    "system": ("iolab.engines", "iolab.workloads", "iolab.runner", "iolab.cli"),
}


def _module(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module(p): p for p in SRC.rglob("*.py")}


def _imports(path: Path) -> Iterator[str]:
    """Every module of iolab that ``path`` imports (``from a import b`` counts as ``a.b`` where
    that is a module)."""
    package = _module(path) if path.name == "__init__.py" else _module(path).rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            for alias in node.names:
                full = f"{base}.{alias.name}"
                yield full if full in MODULES else base


GRAPH = {m: {i for i in _imports(p) if i in MODULES and i != m} for m, p in MODULES.items()}


def test_a_workload_is_named_only_by_its_package_the_registry_and_its_command() -> None:
    found: dict[str, set[str]] = {}
    for name in WORKLOADS:
        package = f"iolab.workloads.{name}"
        found[name] = {
            str(MODULES[m].relative_to(SRC))
            for m, imported in GRAPH.items()
            if not (m == package or m.startswith(package + "."))
            and any(i == package or i.startswith(package + ".") for i in imported)
        }
    assert found == {name: {"workloads/registry.py", f"cli/{name}.py"} for name in WORKLOADS}


def test_the_code_has_no_import_circle() -> None:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    assert circles == []


def test_imports_go_one_way() -> None:
    wrong = [
        f"{m} imports {i}"
        for layer, never in NEVER.items()
        for m, imported in GRAPH.items()
        if m.startswith(f"iolab.{layer}.") or m == f"iolab.{layer}"
        for i in imported
        if i.startswith(never)
    ]
    assert wrong == []


def test_engines_hold_no_workload_sql() -> None:
    workload_sql = re.compile(r"lineitem|iolab_populate|iolab_load|\bCOPY\s+\w+\s+FROM", re.I)
    found = [
        f"{p.relative_to(SRC)}:{n}"
        for p in (SRC / "engines").rglob("*.py")
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if workload_sql.search(line)
    ]
    assert found == []


def test_each_workload_is_one_package_with_its_parts() -> None:
    for name, workload in WORKLOADS.items():
        package = SRC / "workloads" / name
        assert {"options.py", "workload.py", "run.py", "metrics.py"} <= {
            p.name for p in package.glob("*.py")
        }, name
        assert workload.name == name
        assert workload.model.__module__ == f"iolab.workloads.{name}.options"
        assert workload.metrics, f"{name} declares no metric"
