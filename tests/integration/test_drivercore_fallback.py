"""Issue 44: ``pip install`` of iolab where the compiled driver core cannot be built still
succeeds, and iolab then says so and runs its Python drivers. A real install into a fresh venv,
offline (``--no-index``), of a copy of this checkout without any built core, with the C
compiler replaced by ``/bin/false``: the honest failure of a machine without gcc."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
# what the build needs from the installing Python: setuptools (77 and later build wheels
# themselves; before that, the wheel package)
TOOLS = ("setuptools", "pkg_resources", "_distutils_hack")


def _build_tools() -> list[Path]:
    """Where the installing Python's setuptools lives (its package and its metadata), to lend
    the fresh venv with ``--no-build-isolation``; skips when they cannot be found."""
    spec = importlib.util.find_spec("setuptools")
    if spec is None or spec.origin is None:
        pytest.skip(f"setuptools is not importable by {sys.executable}: pip cannot build iolab")
    if importlib.util.find_spec("setuptools.command.bdist_wheel") is None and (
        importlib.util.find_spec("wheel") is None
    ):
        pytest.skip(f"neither wheel nor a setuptools >= 70.1 is importable by {sys.executable}")
    site = Path(spec.origin).parent.parent
    found = [site / name for name in TOOLS if (site / name).exists()]
    found += site.glob("setuptools-*.dist-info")
    return found


def _copy(to: Path) -> Path:
    """The files ``pip install`` reads, without anything built (no ``*.so``, no build/)."""
    to.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy2(ROOT / name, to / name)
    shutil.copytree(
        ROOT / "src", to / "src", ignore=shutil.ignore_patterns("*.so", "__pycache__", "*.egg-info")
    )
    return to


def test_an_install_without_a_compiler_succeeds_and_runs_the_python_drivers(
    tmp_path: Path,
) -> None:
    tools = _build_tools()
    repo = _copy(tmp_path / "iolab")
    assert not list(repo.rglob("*.so"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    lent = tmp_path / "build-tools"  # setuptools alone, lent to the venv: no iolab, no deps
    lent.mkdir()
    for path in tools:
        (lent / path.name).symlink_to(path)
    Path(purelib, "build-tools.pth").write_text(f"{lent}\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PIP_", "IOLAB_"))}
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "-v", "--no-index"]
    flags = ["--no-deps", "--no-build-isolation", "--disable-pip-version-check"]
    # the compiler fails: the optional build is skipped
    installed = _run([*pip, *flags, str(repo)], env | {"CC": "/bin/false"})
    assert installed.returncode == 0, installed.stdout[-3000:] + installed.stderr[-3000:]
    said_by_pip = installed.stdout + installed.stderr  # -v: setuptools' warning
    assert 'building extension "iolab.drivercore._native" failed' in said_by_pip
    assert not list(Path(purelib, "iolab").rglob("*.so"))
    assert sysconfig.get_paths()["purelib"] != purelib  # another venv than this test's

    said = _run([str(python), "-m", "iolab.drivercore"], env)
    assert said.returncode == 0, said.stderr
    assert said.stdout.startswith("setup: the compiled driver core is not built (")
    assert said.stdout.endswith("; iolab runs its Python drivers\n")
    assert len(said.stdout.splitlines()) == 1

    chose = _run([str(python), "-c", CHOOSE], env)
    name, reason, shown = chose.stdout.splitlines()
    assert name == "python"
    assert reason.startswith("the compiled core is not built (")
    assert "scripts/setup.sh installs gcc, python3-dev, libpq-dev and libmariadb-dev" in reason
    assert shown == f"driver core: python ({reason})"

    refused = _run([str(python), "-c", REFUSED], env | {"IOLAB_DRIVER_CORE": "native"})
    assert refused.stdout.startswith(
        "2 IOLAB_DRIVER_CORE: 'native' is not allowed; the compiled core is not built ("
    )
    assert len(refused.stdout.splitlines()) == 1


CHOOSE = """
import iolab.drivercore as d
core = d.choose(True, "x")
print(core.name, core.reason, d.shown(core.record()), sep="\\n")
"""
REFUSED = """
import iolab.drivercore as d
try:
    d.choose(True, "x")
except d.BadInput as e:
    print(e.exit_code, e)
"""


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, env=env, timeout=300, check=False)


@pytest.mark.parametrize(
    "argv",
    [
        ["populate", "--engine", "postgres", "--rows", "100"],
        ["tpcc", "--engine", "mariadb", "--warehouses", "1", "--duration", "2s"],
    ],
    ids=["populate", "tpcc"],
)
def test_a_bad_driver_core_choice_is_refused_before_any_work(
    argv: list[str], tmp_path: Path
) -> None:
    """``IOLAB_DRIVER_CORE=bogus`` is one line naming the variable, the value and the choices,
    exit 2, before a server is provisioned or a run recorded."""
    env = {**os.environ, "IOLAB_DRIVER_CORE": "bogus", "IOLAB_CACHE": str(tmp_path / "cache")}
    db = tmp_path / "r.db"
    done = subprocess.run(
        [sys.executable, "-m", "iolab", *argv, "--results", str(db)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert done.returncode == 2, done.stderr
    assert lines == [
        "error: IOLAB_DRIVER_CORE: 'bogus' is not allowed; give auto, native or python"
    ], done.stderr
    assert "provisioning" not in done.stderr + done.stdout
    assert not (tmp_path / "cache").exists()
