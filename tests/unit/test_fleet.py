"""The fleet's parts that need no cluster: the missing extra, the [fleet] section and the
``host`` matrix key, and a host matrix refused without a fleet."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from iolab.config import experiment as config
from iolab.errors import BadInput
from iolab.runner import experiment as runner
from iolab.store import open_store
from tests.unit.cli import iolab

HINT = "pip install 'iolab[fleet]'"


@pytest.fixture
def no_ray(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ray as if the extra were not installed: importing it fails."""
    monkeypatch.setitem(sys.modules, "ray", None)


def exp_file(tmp_path: Path, extra: str) -> Path:
    (tmp_path / "a").mkdir(exist_ok=True)
    path = tmp_path / "exp.toml"
    path.write_text(
        f"""
[experiment]
name = "f"
repetitions = 1
[workload]
kind = "populate"
engine = "sqlite"
rows = 100
[layouts.a]
data_dirs = ["a"]
{extra}
"""
    )
    return path


@pytest.mark.parametrize(
    "argv",
    [
        ["fleet", "status"],
        ["fleet", "start"],
        ["fleet", "join", "127.0.0.1:6379", "--name", "db1"],
        ["fleet", "stop"],
    ],
)
def test_a_fleet_command_without_ray_says_how_to_install_it(argv: list[str], no_ray: None) -> None:
    done = iolab(*argv)
    assert done.code == 2
    assert done.error_lines == [
        f"error: ray (the fleet extra) is not installed; install the fleet extra: {HINT}"
    ]


def test_run_with_fleet_without_ray_says_how_to_install_it(tmp_path: Path, no_ray: None) -> None:
    path = exp_file(tmp_path, '[matrix]\nhost = ["db1", "db2"]')
    done = iolab("run", str(path), "--fleet", "auto", env={"IOLAB_RESULTS": str(tmp_path / "r.db")})
    assert done.code == 2
    assert HINT in done.stderr
    assert not (tmp_path / "r.db").exists()  # refused before anything was recorded


def test_host_is_a_matrix_key_of_its_own_cells(tmp_path: Path) -> None:
    exp = config.load(exp_file(tmp_path, '[matrix]\nhost = ["db1", "db2"]\nrows = [100, 200]'))
    assert [c.label for c in exp.cells] == [
        "host=db1 rows=100",
        "host=db1 rows=200",
        "host=db2 rows=100",
        "host=db2 rows=200",
    ]
    assert [c.params["host"] for c in exp.cells] == ["db1", "db1", "db2", "db2"]
    assert len({c.id for c in exp.cells}) == 4  # a cell per host
    assert exp.spec.fleet.address is None and exp.spec.fleet.hosts == []


def test_fleet_section_is_read_and_checked(tmp_path: Path) -> None:
    exp = config.load(exp_file(tmp_path, '[fleet]\naddress = "auto"\nhosts = ["db1", "db2"]'))
    assert (exp.spec.fleet.address, exp.spec.fleet.hosts) == ("auto", ["db1", "db2"])
    with pytest.raises(BadInput) as bad:
        config.load(exp_file(tmp_path, '[fleet]\nadress = "auto"'))
    assert str(bad.value).startswith("fleet.adress:")
    with pytest.raises(BadInput) as bad:
        config.load(exp_file(tmp_path, "[matrix]\nhost = [1, 2]"))
    assert str(bad.value) == (
        "matrix.host[0]: 1 is not allowed; give a host name of 1 to 64 letters, digits, '-', "
        "'_' or '.'"
    )


def test_a_host_matrix_without_a_fleet_is_refused_before_any_run(tmp_path: Path) -> None:
    exp = config.load(exp_file(tmp_path, '[matrix]\nhost = ["db1", "db2"]'))
    with open_store(tmp_path / "r.db") as store, pytest.raises(BadInput) as bad:
        runner.run(exp, store, lambda _e: None)
    assert str(bad.value).startswith("matrix.host: ['db1', 'db2'] is not allowed; host compares")
    with open_store(tmp_path / "r.db") as store:
        assert store.runs() == []


def test_help_names_the_fleet() -> None:
    done = iolab("fleet", "--help")
    assert done.code == 0
    for word in ("start", "join", "status", "stop", "private network", HINT):
        assert word in done.stdout
    run_help = iolab("run", "--help").stdout
    assert "--fleet" in run_help and "matrix key" in run_help


def test_the_example_compares_two_hosts_on_a_fleet() -> None:
    exp = config.load(Path(__file__).resolve().parents[2] / "examples" / "fleet-hosts.toml")
    assert exp.spec.fleet.address == "auto"
    assert [c.label for c in exp.cells] == [
        "engine=sqlite host=db1",
        "engine=sqlite host=db2",
        "engine=postgres host=db1",
        "engine=postgres host=db2",
    ]
