"""`pip install -e '.[dev]'` then `pytest tests/unit` works: every third-party module the unit
tests import, directly or through the iolab modules they import at module level, comes with
iolab's dependencies or its `dev` extra."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).parents[2]
SRC = ROOT / "src"
# distribution name -> the module it installs, where they differ
MODULE_OF = {"hdrhistogram": "hdrh"}


def _imports(path: Path) -> set[str]:
    """Absolute module names imported at module level (not inside functions)."""
    names: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
    return names


def _iolab_file(module: str) -> Path | None:
    base = SRC.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _third_party_of_unit_tests() -> dict[str, str]:
    """Each third-party top-level module -> one file that imports it."""
    found: dict[str, str] = {}
    seen: set[Path] = set()
    todo = sorted((ROOT / "tests" / "unit").glob("*.py"))
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for name in _imports(path):
            top = name.split(".")[0]
            if top == "iolab":
                parts = name.split(".")
                for i in range(1, len(parts) + 1):  # the package's __init__ runs too
                    file = _iolab_file(".".join(parts[:i]))
                    if file is not None:
                        todo.append(file)
            elif top not in sys.stdlib_module_names and top not in {"tests", "__future__"}:
                found.setdefault(top, str(path.relative_to(ROOT)))
    return found


def test_the_dev_extra_installs_what_the_unit_tests_import() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = [*project["dependencies"], *project["optional-dependencies"]["dev"]]
    dists = {re.split(r"[<>=!~\[ ;]", r, maxsplit=1)[0].lower() for r in requirements}
    installed = {MODULE_OF.get(d, d.replace("-", "_")) for d in dists}
    missing = {m: f for m, f in _third_party_of_unit_tests().items() if m not in installed}
    assert missing == {}
