"""Starting the command line loads what the command uses, nothing else (docs/architecture.md).

Each case runs in a fresh Python (this process has imported everything already) and asserts
the modules it loaded: to start any command, ``iolab.cli.main`` imports typer and none of
iolab's library, rich or the report; ``--version`` and ``--help`` build nothing they do not
show; one command's help imports its own module only. Content, not time: the time these save
is measured in bench/README.md.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import iolab
from iolab.workloads.tpch import dialects as tpch_dialects
from iolab.workloads.tpch.run import DEFAULT_TIMEOUT
from tests.unit.cli import iolab as run_iolab

# What no command needs to start: the report and its charts, the analysis, every command's
# options models, the results database, the workloads, engines and their drivers, fio,
# the testbed, the probes, the fleet and the web server.
HEAVY = (
    "iolab.report",
    "iolab.analysis",
    "iolab.config",
    "iolab.store",
    "iolab.workloads",
    "iolab.engines",
    "iolab.fio",
    "iolab.testbed",
    "iolab.probes",
    "iolab.runner",
    "iolab.serve",
    "iolab.fleet",
    "plotly",
    "ray",
    "starlette",
    "uvicorn",
    "duckdb",
    "psycopg",
    "pymysql",
    "pyarrow",
)
COMMAND_MODULES = (
    "iolab.cli.demo",
    "iolab.cli.disk",
    "iolab.cli.experiment",
    "iolab.cli.fleet",
    "iolab.cli.populate",
    "iolab.cli.report",
    "iolab.cli.results",
    "iolab.cli.serve",
    "iolab.cli.testbed",
    "iolab.cli.timeline",
    "iolab.cli.tpch",
)

# Runs ARGV through the console script's entry point (none: only the import), then prints what
# it printed and the modules it loaded, as JSON on the real stdout.
PROBE = """
import contextlib, io, json, sys
import iolab.cli.main as main
argv = json.loads(sys.argv[1])
out = io.StringIO()
code = None
if argv:
    sys.argv = ["iolab", *argv]
    with contextlib.redirect_stdout(out):
        try:
            main.run()
        except SystemExit as exc:
            code = exc.code
print(json.dumps({"code": code, "stdout": out.getvalue(), "modules": sorted(sys.modules)}))
"""


def start(
    tmp_path: Path, *argv: str, env_extra: dict[str, str] | None = None
) -> tuple[object, str, set[str]]:
    """``iolab ARGV`` in a fresh Python that imports this iolab: exit code, stdout, modules."""
    source = Path(iolab.__file__).resolve().parents[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "IOLAB"))}
    env |= {"PYTHONPATH": str(source), "COLUMNS": "200", "NO_COLOR": "1", **(env_extra or {})}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(list(argv))],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    return doc["code"], doc["stdout"], set(doc["modules"])


def loaded(modules: set[str], names: tuple[str, ...]) -> list[str]:
    """The packages of ``names`` that ``modules`` holds (a package or any module inside)."""
    return sorted(n for n in names if any(m == n or m.startswith(n + ".") for m in modules))


def test_importing_the_command_line_loads_typer_and_nothing_of_iolabs_library(
    tmp_path: Path,
) -> None:
    _, _, modules = start(tmp_path)
    assert loaded(modules, HEAVY) == []
    assert loaded(modules, COMMAND_MODULES) == []
    assert sorted(m for m in modules if m.startswith("iolab")) == [
        "iolab",
        "iolab.cli",
        "iolab.cli.main",
        "iolab.cli.streams",  # ASCII where a character does not fit; output nobody reads
        "iolab.errors",
        "iolab.redaction",
        "iolab.system",
        "iolab.system.open_files",  # the open-file limit raised to the hard one
        "iolab.vocabulary",  # a former flag's name (--rampup) read as its new one
    ]
    assert "typer" in modules
    # rich draws tables and errors; the version comes from the package's metadata: both on use
    assert loaded(modules, ("rich", "pydantic", "importlib.metadata")) == []


def test_version_prints_the_version_and_builds_no_command(tmp_path: Path) -> None:
    code, out, modules = start(tmp_path, "--version")
    assert (code, out) == (0, f"iolab {iolab.__version__}\n")
    assert loaded(modules, HEAVY) == []
    assert loaded(modules, COMMAND_MODULES) == []
    assert loaded(modules, ("rich", "pydantic")) == []


def test_help_lists_every_command_without_loading_the_library(tmp_path: Path) -> None:
    code, out, modules = start(tmp_path, "--help")
    assert code == 0
    for command in ("demo", "disk", "populate", "plan", "run", "report", "compare", "export",
                    "tpch", "tpcc", "timeline", "serve", "results", "testbed",
                    "fleet"):  # fmt: skip
        assert re.search(rf"^  {command} +\S", out, re.M), command
    assert loaded(modules, HEAVY) == []
    assert loaded(modules, ("typer.rich_utils",)) == []  # the group's help: click's plain layout
    assert loaded(modules, COMMAND_MODULES) == list(COMMAND_MODULES)  # each listed by its help


@pytest.mark.parametrize(
    ("argv", "module"),
    [
        (("populate", "--help"), "iolab.cli.populate"),
        (("report", "--help"), "iolab.cli.report"),
        (("results", "show", "--help"), "iolab.cli.results"),
    ],
)
def test_one_commands_help_imports_that_command_alone(
    tmp_path: Path, argv: tuple[str, ...], module: str
) -> None:
    code, out, modules = start(tmp_path, *argv)
    assert code == 0
    assert "--results" in out
    assert loaded(modules, HEAVY) == []
    assert loaded(modules, COMMAND_MODULES) == [module]


def test_tpch_help_names_the_defaults_the_command_uses() -> None:
    """--engine and --timeout default to None so that the engines and the workload load only
    when tpch runs; the help states the defaults the command then takes."""
    result = run_iolab("tpch", "--help")
    assert result.code == 0
    text = " ".join(result.stdout.split())
    assert f"{tpch_dialects.DEFAULT} (embedded, the default)" in text
    assert f"Default: {DEFAULT_TIMEOUT:g} s." in text


# What a populate run does not need once its options are read (bench/populate_fixed_cost.py
# measures what each cost): the workload registry, which imports every workload (pgbench its
# drivers); the store reads its metrics with analysis.findings, which reaches the registry only
# to word a ratio.
NOT_FOR_A_RUN = (
    "iolab.workloads.registry",
    "iolab.workloads.pgbench",
    "iolab.workloads.sysbench",
    "iolab.workloads.tpcc",
    "iolab.workloads.tpch",
    "iolab.workloads.disk",
    "iolab.workloads.drivers",
)


def test_a_populate_run_with_json_loads_neither_the_registry_nor_the_other_workloads(
    tmp_path: Path,
) -> None:
    """The same path as ``populate --dsn`` from the options to the output (the store, the
    verdict, --json), on the embedded engine: no server needed."""
    lock = tmp_path / "lock"
    lock.mkdir(mode=0o700)  # the host's lock: this test's own, not other runs'
    code, out, modules = start(
        tmp_path,
        *("populate", "--rows", "20", "--connections", "1", "--json"),
        *("--results", str(tmp_path / "results.db")),
        env_extra={"IOLAB_LOCK_DIR": str(lock)},
    )
    assert code in (None, 0)
    doc = json.loads(out)
    assert (doc["status"], doc["engine"], doc["rows"]) == ("done", "sqlite", 20)
    assert "iolab.store.verdicts" in modules  # the verdict is still computed and kept
    assert loaded(modules, NOT_FOR_A_RUN) == []
