"""Each workload's one options model: a flag and a file key get the same check and message,
named as the user wrote them; sweeps in files; cell names unchanged by the sweep's keys."""

from __future__ import annotations

from pathlib import Path

import pytest

from iolab.config.experiment import load
from iolab.errors import BadInput
from iolab.results import cell_id
from iolab.workloads.disk.options import DiskWorkload
from iolab.workloads.disk.workload import disk_options
from iolab.workloads.interface import command_layout, from_flags, layout_of
from iolab.workloads.populate.options import PopulateWorkload
from iolab.workloads.populate.workload import populate_options
from iolab.workloads.tpch.options import TpchWorkload
from iolab.workloads.tpch.workload import tpch_options

DISK_FILE = """
[experiment]
name = "d"
[workload]
kind = "disk"
{workload}
[layouts.a]
data_dirs = ["."]
"""

RATE = (
    "give rows per second over all loaders, more than 0 and at most 1,000,000 (the most one "
    "process's schedule places)"
)
CASES = [
    (DiskWorkload, "duration", "0.5s", "give at least 1 s"),
    (DiskWorkload, "data", "ones", "choose one of: random, zero"),
    (DiskWorkload, "runs", 0, "give at least 1 measured pass"),
    (DiskWorkload, "qd", "1,8", "goes with the sweep profile only"),
    (PopulateWorkload, "method", "bulk", "choose one of: insert, multirow, copy"),
    (PopulateWorkload, "commit_every", 0, "give 1 or more rows per commit"),
    (PopulateWorkload, "checkpoint_every", 0, "give more than 0 s"),
    (PopulateWorkload, "checkpoint_every", "0s", "give more than 0 s"),
    (
        PopulateWorkload,
        "presize_wal",
        "0",
        'give a whole number of bytes above zero, e.g. 4k or 1GiB; or "off"',
    ),
    (PopulateWorkload, "steady_window", 2, "give 3 or more samples"),
    (PopulateWorkload, "steady_tolerance", 0, "give a percentage above 0 and at most 100"),
    (PopulateWorkload, "steady_tolerance", 101, "give a percentage above 0 and at most 100"),
    (PopulateWorkload, "rate", 0, RATE),
    (PopulateWorkload, "rate", float("inf"), RATE),
    (
        PopulateWorkload,
        "warmup",
        "-3s",
        'give rows (a whole number, e.g. 10000) or a duration with its unit (e.g. "30s")',
    ),
    (TpchWorkload, "scale_factor", "abc", "give a positive scale factor, e.g. 1 or 0.01"),
    (TpchWorkload, "compression", "maybe", "choose one of: on, off, default"),
]


@pytest.mark.parametrize(("model", "key", "value", "allowed"), CASES)
def test_a_flag_and_a_file_key_get_the_same_message(
    tmp_path: Path, model: type[DiskWorkload], key: str, value: object, allowed: str
) -> None:
    kind = str(model.model_fields["kind"].annotation).split("'")[1]
    with pytest.raises(BadInput) as flag:
        from_flags(model, {"kind": kind, key: value})
    flag_name = {"scale_factor": "--sf"}.get(key, "--" + key.replace("_", "-"))
    assert (flag.value.field, flag.value.value, flag.value.allowed) == (flag_name, value, allowed)
    exp = tmp_path / "e.toml"
    text = DISK_FILE.replace('kind = "disk"', f'kind = "{kind}"')
    exp.write_text(text.format(workload=f"{key} = {value!r}".replace("'", '"')))
    with pytest.raises(BadInput) as file:
        load(exp)
    assert (file.value.field, file.value.value, file.value.allowed) == (
        f"workload.{key}",
        value,
        allowed,
    )


def test_a_sweep_in_a_file_is_the_commands_sweep(tmp_path: Path) -> None:
    exp = tmp_path / "e.toml"
    exp.write_text(
        DISK_FILE.format(workload='profile = "sweep"\nbs = "8k"\nqd = "1,32"\nrw = "randread"')
    )
    (cell,) = load(exp).cells
    from_file = disk_options(cell.params, tmp_path)
    flags = {"kind": "disk", "profile": "sweep", "bs": "8k", "qd": "1,32", "rw": "randread"}
    params = {**from_flags(DiskWorkload, flags).model_dump(), **command_layout([tmp_path])}
    from_command = disk_options(params, tmp_path)
    assert from_file.sweep == from_command.sweep
    assert [t.label for t in from_file.tests()] == ["RND8K Q1T1 read", "RND8K Q32T1 read"]


def test_cells_without_the_sweeps_keys_keep_their_names(tmp_path: Path) -> None:
    exp = tmp_path / "e.toml"
    exp.write_text(DISK_FILE.format(workload='profile = "real"'))
    (cell,) = load(exp).cells
    assert not {"bs", "qd", "threads", "rw", "rwmix"} & set(cell.params)
    assert cell.id == cell_id(cell.params)


def test_populate_cells_without_load_keys_keep_their_names(tmp_path: Path) -> None:
    plain = PopulateWorkload(kind="populate").model_dump()
    assert not {"duration", "warmup", "rate"} & set(plain)
    timed = from_flags(
        PopulateWorkload, {"kind": "populate", "duration": "2m", "warmup": 500, "rate": 100}
    )
    assert timed.model_dump()["duration"] == 120.0
    assert timed.warmup_split() == (None, 500)
    assert from_flags(PopulateWorkload, {"kind": "populate", "warmup": "30s"}).warmup_split() == (
        30.0,
        None,
    )
    options = populate_options({**timed.model_dump(), **command_layout([tmp_path])}, tmp_path)
    assert (options.rows, options.duration, options.warmup_rows, options.rate) == (
        None,
        120.0,
        500,
        100.0,
    )


def test_tpch_flags_become_the_options_a_file_would_give(tmp_path: Path) -> None:
    flags = {"kind": "tpch", "scale_factor": "0.01", "compression": "off", "timeout": "90s"}
    params = {**from_flags(TpchWorkload, flags).model_dump(), **command_layout([tmp_path])}
    options = tpch_options(params, layout_of(params, Path))
    assert (options.scale_factor, options.compression, options.timeout) == (0.01, False, 90.0)
    assert options.queries == tuple(range(1, 23))


@pytest.mark.parametrize(
    ("experiment", "field", "allowed"),
    [
        (
            'repetitions = "many"',
            "experiment.repetitions",
            'give 1 or more runs per cell, or "auto"',
        ),
        (
            "baseline = { files = 1 }",
            "experiment.baseline.files",
            "the file has no [matrix]: a baseline names one of its cells by matrix values",
        ),
    ],
)
def test_experiment_keys_are_named_as_written(
    tmp_path: Path, experiment: str, field: str, allowed: str
) -> None:
    exp = tmp_path / "e.toml"
    exp.write_text(DISK_FILE.format(workload="").replace('name = "d"', f'name = "d"\n{experiment}'))
    with pytest.raises(BadInput) as err:
        load(exp)
    assert (err.value.field, err.value.allowed) == (field, allowed)


def test_a_size_of_zero_says_so_once() -> None:
    with pytest.raises(BadInput) as err:
        from_flags(DiskWorkload, {"kind": "disk", "size": "0"})
    assert str(err.value) == (
        "--size: '0' is not allowed; give a whole number of bytes above zero, e.g. 4k or 1GiB"
    )


POPULATE_FILE = DISK_FILE.replace('kind = "disk"', 'kind = "populate"')


def test_populate_cells_without_the_variation_keys_keep_their_names(tmp_path: Path) -> None:
    exp = tmp_path / "e.toml"
    exp.write_text(POPULATE_FILE.format(workload="rows = 100"))
    (cell,) = load(exp).cells
    assert not {"checkpoint_every", "presize_wal", "steady_window", "steady_tolerance"} & set(
        cell.params
    )
    assert cell.id == cell_id(cell.params)


def test_the_variation_keys_of_a_file_are_the_commands_options(tmp_path: Path) -> None:
    from iolab.workloads.populate.workload import populate_options

    keys = 'checkpoint_every = "30s"\npresize_wal = "1GiB"\nsteady_window = 5'
    exp = tmp_path / "e.toml"
    exp.write_text(POPULATE_FILE.format(workload=keys))
    (cell,) = load(exp).cells
    flags = {
        "kind": "populate",
        "checkpoint_every": "30s",
        "presize_wal": "1GiB",
        "steady_window": 5,
    }
    params = {**from_flags(PopulateWorkload, flags).model_dump(), **command_layout([tmp_path])}
    for options in (
        populate_options(cell.params, layout_of(cell.params, Path)),
        populate_options(params, layout_of(params, Path)),
    ):
        assert options.checkpoint_every == 30.0
        assert options.presize_wal == 1 << 30
        assert (options.steady.window, options.steady.tolerance_pct) == (5, 10.0)
        assert options.params()["checkpoint_every"] == 30.0
        assert "steady_tolerance" not in options.params()  # at its default


def test_off_in_a_matrix_is_the_engines_own_behaviour_and_names_its_cells(tmp_path: Path) -> None:
    from iolab.workloads.populate.workload import populate_options

    exp = tmp_path / "e.toml"
    matrix = '\n[matrix]\ncheckpoint_every = ["off", "3s"]\npresize_wal = ["off", "64MiB"]\n'
    exp.write_text(POPULATE_FILE.format(workload="rows = 100") + matrix)
    cells = load(exp).cells
    assert len(cells) == 4
    off = cells[0]
    assert (off.params["checkpoint_every"], off.params["presize_wal"]) == ("off", "off")
    options = populate_options(off.params, layout_of(off.params, Path))
    assert (options.checkpoint_every, options.presize_wal) == (None, None)
    on = cells[-1]
    options = populate_options(on.params, layout_of(on.params, Path))
    assert (options.checkpoint_every, options.presize_wal) == (3.0, 64 << 20)


def test_the_quick_profile_holds_the_demos_headline(tmp_path: Path) -> None:
    """Issue 47: `iolab demo`'s headline in five tests: SEQ1M Q8T1 and RND4K Q1T1 read and
    write (CrystalDiskMark's first and last rows), then the commit test (write + fdatasync)."""
    params = {
        **from_flags(DiskWorkload, {"kind": "disk", "profile": "quick"}).model_dump(),
        **command_layout([tmp_path]),
    }
    tests = disk_options(params, tmp_path).tests()
    assert [(t.rw, t.bs, t.qd, t.threads, t.fdatasync) for t in tests] == [
        ("read", 1024 * 1024, 8, 1, False),
        ("write", 1024 * 1024, 8, 1, False),
        ("randread", 4096, 1, 1, False),
        ("randwrite", 4096, 1, 1, False),
        ("write", 8192, 1, 1, True),
    ]
