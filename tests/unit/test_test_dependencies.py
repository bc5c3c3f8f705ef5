"""`pip install -e '.[dev]'` then `pytest tests/unit` works: every unit test module (and the
conftest files pytest loads with them) imports, and runs what it runs at import time, with only
iolab's dependencies and its `dev` extra installed.

The modules of every other installed distribution (the engines, serve and fleet extras, and
what only they pull in) are hidden from imports in a Python process of its own, which then
imports each unit test module as pytest's collection does: an import of a hidden module, or a
call made at import time that needs one (``cluster._ray_package()`` looks Ray up with
``importlib.util.find_spec``), fails there as it fails in a venv without the extra. CI runs the
unit tests in such a venv too (.ci/run)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).parents[2]
NOT_MODULES = (".dist-info", ".data", ".libs", ".pth")  # what else a distribution installs
VENV = {"iolab", "pip", "setuptools", "wheel"}  # iolab itself, and what `python -m venv` gives


def _top_levels(dist: metadata.Distribution) -> set[str]:
    """The top-level modules a distribution installs."""
    listed = dist.read_text("top_level.txt")
    if listed:
        return {line.strip() for line in listed.splitlines() if line.strip()}
    tops: set[str] = set()
    for file in dist.files or ():
        first = file.parts[0]
        if first in ("..", "__pycache__") or first.endswith(NOT_MODULES):
            continue
        if len(file.parts) == 1:
            if first.endswith(".py"):
                tops.add(first.removesuffix(".py"))
            elif first.endswith(".so"):
                tops.add(first.split(".")[0])
        else:
            tops.add(first)
    return tops


def _closure(requirements: list[str]) -> set[str]:
    """The installed distributions (normalised names) that ``requirements`` bring, transitively,
    with the extras each asks for."""
    found: set[str] = set()
    todo = [(Requirement(r), frozenset({""})) for r in requirements]
    while todo:
        req, extras = todo.pop()
        if req.marker is not None and not any(req.marker.evaluate({"extra": e}) for e in extras):
            continue
        try:
            dist = metadata.distribution(req.name)
        except metadata.PackageNotFoundError:
            continue
        name = dist.metadata["Name"].lower().replace("_", "-")
        key = f"{name}[{','.join(sorted(req.extras))}]"
        if key in found:
            continue
        found.update({name, key})
        wanted = frozenset({"", *req.extras})
        todo += [(Requirement(r), wanted) for r in dist.requires or ()]
    return {n for n in found if "[" not in n}


def hidden_modules() -> list[str]:
    """Top-level modules installed here that iolab's dependencies and its dev extra do not
    bring: what a venv with `pip install -e '.[dev]'` lacks."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = _closure([*project["dependencies"], *project["optional-dependencies"]["dev"]])
    wanted |= VENV  # what every venv has
    allowed: set[str] = {"tests"}
    installed: set[str] = set()
    for dist in metadata.distributions():
        tops = _top_levels(dist)
        installed |= tops
        if dist.metadata["Name"].lower().replace("_", "-") in wanted:
            allowed |= tops
    return sorted(installed - allowed - set(sys.stdlib_module_names))


IMPORT_EACH = textwrap.dedent(
    """
    import importlib, json, sys, traceback
    hidden = set(json.loads(sys.argv[1]))

    class Hide:
        '''A finder of the interpreter's that finds nothing of the hidden modules.'''
        def __init__(self, finder):
            self.finder = finder
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in hidden:
                return None
            find = getattr(self.finder, "find_spec", None)
            return None if find is None else find(name, path, target)
        def invalidate_caches(self):
            getattr(self.finder, "invalidate_caches", lambda: None)()

    sys.meta_path[:] = [Hide(f) for f in sys.meta_path]
    for name in [m for m in hidden if m in sys.modules]:
        raise SystemExit(f"{name} was imported before the finders were replaced")
    import pytest
    failed = {}
    for module in sys.argv[2:]:
        try:
            importlib.import_module(module)
        except pytest.skip.Exception:
            pass  # a module that skips itself (importorskip) is collected as skipped
        except BaseException as exc:
            failed[module] = "".join(traceback.format_exception_only(exc)).strip()
    print(json.dumps(failed))
    """
)


def unit_test_modules() -> list[str]:
    unit = ROOT / "tests" / "unit"
    return ["tests.conftest"] + [
        f"tests.unit.{p.stem}" for p in sorted(unit.glob("*.py")) if p.stem != "__init__"
    ]


def test_the_unit_tests_import_with_only_the_dev_extra() -> None:
    hidden = hidden_modules()
    for extra in ("ray", "duckdb", "uvicorn"):  # the fleet's, the engines', serve's
        if extra not in hidden:  # a venv with the dev extra alone: there is nothing to hide
            assert importlib.util.find_spec(extra) is None, f"{extra} is installed, not hidden"
    done = subprocess.run(
        [sys.executable, "-c", IMPORT_EACH, json.dumps(hidden), *unit_test_modules()],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *sys.path])},
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {}
