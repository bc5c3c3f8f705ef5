"""Experiment files: validation names the key path, the value and what is allowed; expansion."""

from __future__ import annotations

from pathlib import Path

import pytest

from iolab.config.experiment import load
from iolab.errors import BadInput

GOOD = """
[experiment]
name = "seed-000"
repetitions = 2

[workload]
kind = "populate"
engine = "sqlite"
rows = 1_000
key = "sequential"

[layouts.scsi]
data_dirs = ["a"]
wal_dir = "b"
[layouts.ssd]
data_dirs = ["a", "b"]
settings = { journal_mode = "wal" }

[matrix]
layout = ["scsi", "ssd"]
files = [1, 2, 4]
connections = [16]
"""


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    return tmp_path


def write(root: Path, text: str) -> Path:
    path = root / "exp.toml"
    path.write_text(text)
    return path


def test_matrix_expands_to_resolved_cells(root: Path) -> None:
    exp = load(write(root, GOOD))
    assert exp.name == "seed-000"
    assert exp.kind == "populate"
    assert len(exp.cells) == 6
    first = exp.cells[0]
    assert first.label == "layout=scsi files=1 connections=16"
    assert first.params["data_dirs"] == [str(root / "a")]  # relative to the file
    assert first.params["wal_dir"] == str(root / "b")
    assert first.params["rows"] == 1000
    assert exp.cells[3].params["settings"] == {"journal_mode": "wal"}
    assert len({c.id for c in exp.cells}) == 6


def test_cell_ids_survive_an_unrelated_change(root: Path) -> None:
    before = {c.label: c.id for c in load(write(root, GOOD)).cells}
    changed = GOOD.replace("files = [1, 2, 4]", "files = [1, 2, 4, 8]").replace(
        "repetitions = 2", "repetitions = 5"
    )
    after = {c.label: c.id for c in load(write(root, changed)).cells}
    assert all(after[label] == cell for label, cell in before.items())
    assert len(after) == 8


def test_settings_in_the_matrix(root: Path) -> None:
    text = GOOD.replace(
        "connections = [16]", 'connections = [16]\n"settings.synchronous" = ["off", "full"]'
    )
    cells = load(write(root, text)).cells
    assert len(cells) == 12
    assert cells[-1].params["settings"] == {"journal_mode": "wal", "synchronous": "full"}


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            "repetitions = 2",
            "repetitions = 2\nrepetitons = 3",
            "experiment.repetitons: 3 is not allowed; unknown key",
        ),
        ("rows = 1_000", 'rows = "many"', "workload.rows: 'many' is not allowed"),
        (
            'kind = "populate"',
            'kind = "oltp"',
            "workload.kind: 'oltp' is not allowed; choose one of: populate, disk",
        ),
        (
            'engine = "sqlite"',
            'engine = "oracle"',
            "workload.engine: 'oracle' is not allowed; choose one of: sqlite",
        ),
        (
            'data_dirs = ["a"]',
            'data_dirs = ["nope"]',
            "layouts.scsi.data_dirs[0]: 'nope' is not allowed; give an existing directory",
        ),
        (
            "files = [1, 2, 4]",
            "files = []",
            "matrix.files: [] is not allowed; give at least one value; the matrix expands to",
        ),
        (
            "files = [1, 2, 4]",
            "fils = [1, 2]",
            "matrix.fils: 'fils' is not allowed; did you mean files? choose one of:",
        ),
        (
            'layout = ["scsi", "ssd"]',
            'layout = ["scsi", "nvme"]',
            "matrix.layout[1]: 'nvme' is not allowed; choose one of: scsi, ssd",
        ),
        (
            "files = [1, 2, 4]",
            "files = [1, 0]",
            "matrix (layout='scsi', files=0, connections=16).files: 0 is not allowed",
        ),
        (
            "connections = [16]",
            "connections = [16, 16]",
            "matrix.connections: [16, 16] is not allowed; give each value once",
        ),
        (
            'layout = ["scsi", "ssd"]\n',
            "",
            "matrix.layout: missing; the file names 2 layouts",
        ),
        ("repetitions = 2", "repetitions = 0", "experiment.repetitions: 0 is not allowed"),
        ("repetitions = 2", 'order = "random"', "experiment.order: 'random' is not allowed"),
        (
            'wal_dir = "b"',
            'wal_dir = "device:hdd"',
            "layouts.scsi.wal_dir: 'device:hdd' is not allowed; name a device of the [devices]",
        ),
        (
            "repetitions = 2",
            "baseline = { files = 2 }",
            "experiment.baseline: {'files': 2} is not allowed; name exactly one cell",
        ),
    ],
)
def test_bad_files_name_the_key(root: Path, old: str, new: str, message: str) -> None:
    assert old in GOOD
    with pytest.raises(BadInput) as bad:
        load(write(root, GOOD.replace(old, new)))
    assert str(bad.value).startswith(message), str(bad.value)


def test_missing_section_and_syntax_errors(root: Path) -> None:
    with pytest.raises(BadInput, match=r"^workload: missing; this key is required"):
        load(write(root, '[experiment]\nname = "x"\n[layouts.a]\ndata_dirs = ["a"]\n'))
    with pytest.raises(BadInput, match="fix the syntax"):
        load(write(root, "[experiment\n"))
    with pytest.raises(BadInput, match="give an existing experiment file"):
        load(root / "missing.toml")
    testbed = write(root, '[devices.ssd]\nmodel = "ssd"\n')
    with pytest.raises(BadInput) as bad:
        load(testbed)
    assert str(bad.value) == (
        f"EXPERIMENT: {str(testbed)!r} is not allowed; this is a testbed file ([devices] and no "
        f"[experiment]): bring its devices up with `iolab testbed up {testbed}`, or give an "
        "experiment file"
    )


def test_baseline_names_one_cell(root: Path) -> None:
    text = GOOD.replace(
        "repetitions = 2", 'repetitions = 2\nbaseline = { layout = "scsi", files = 1 }'
    )
    exp = load(write(root, text))
    assert exp.baseline is not None
    assert exp.baseline.label == "layout=scsi files=1 connections=16"


def _disk(root: Path, workload: str, experiment: str = "", matrix: str = "") -> Path:
    path = root / "disk.toml"
    path.write_text(
        f'[experiment]\nname = "d"\n{experiment}\n[workload]\nkind = "disk"\n{workload}\n'
        f'[layouts.a]\ndata_dirs = ["a"]\n[matrix]\n{matrix}\n'
    )
    return path


def test_durations_are_written_as_on_the_command_line(root: Path) -> None:
    experiment = load(_disk(root, 'duration = "1s"\ninterval = "500ms"', 'timeout = "10min"'))
    (cell,) = experiment.cells
    assert cell.params["duration"] == 1.0
    assert cell.params["interval"] == 0.5
    assert experiment.spec.experiment.timeout_seconds() == 600.0
    # the same cell as a number of seconds: the hash is of the resolved value
    assert load(_disk(root, "duration = 1\ninterval = 0.5")).cells[0].id == cell.id


@pytest.mark.parametrize(
    ("workload", "experiment", "field", "said"),
    [
        ('duration = "0.5s"', "", "workload.duration", "give at least 1 s"),
        ('duration = "soon"', "", "workload.duration", "500ms, 5s"),
        ("duration = true", "", "workload.duration", "give a duration"),
        ("", 'timeout = "forever"', "experiment.timeout", "500ms, 5s"),
        ("", "timeout = 0", "experiment.timeout", "above zero"),
        ('profile = "fast"', "", "workload.profile", "choose one of: default"),
        ('size = "huge"', "", "workload.size", ""),
    ],
)
def test_bad_durations_and_disk_keys_name_the_key(
    root: Path, workload: str, experiment: str, field: str, said: str
) -> None:
    with pytest.raises(BadInput) as caught:
        load(_disk(root, workload, experiment))
    assert caught.value.field == field
    assert said in str(caught.value)


def test_a_text_key_given_something_else_says_what_it_takes(root: Path) -> None:
    # issue 43: `size = true` and `qd = true` got pydantic's "Input should be a valid string"
    for workload, matrix, line in (
        (
            "size = true",
            "",
            'workload.size: True is not allowed; give a size in quotes, e.g. "1GiB"',
        ),
        (
            'profile = "sweep"\nqd = true',
            "",
            'workload.qd: True is not allowed; give queue depths in quotes, e.g. "1,8,32"',
        ),
        (
            'profile = "sweep"',
            "threads = [2]",
            "matrix (threads=2).threads: 2 is not allowed; give thread counts in quotes, "
            'e.g. "1,4"',
        ),
    ):
        with pytest.raises(BadInput) as caught:
            load(_disk(root, workload, matrix=matrix))
        assert str(caught.value) == line


def test_a_matrix_is_counted_before_it_is_expanded(root: Path) -> None:
    """10^9 cells would take hours and gigabytes to expand; the count refuses them at once."""
    keys = "\n".join(
        f'"settings.k{i}" = [{", ".join(str(v) for v in range(10))}]' for i in range(9)
    )
    with pytest.raises(BadInput) as caught:
        load(_disk(root, "", matrix=keys))
    assert caught.value.field == "matrix"
    assert caught.value.value == "1,000,000,000 cells"
    assert "3,000,000,000 runs, more than the 100,000" in str(caught.value)
    assert "narrow it (matrix.settings.k0 has 10 values" in str(caught.value)


def test_auto_repetitions_count_their_maximum(root: Path) -> None:
    matrix = f"runs = [{', '.join(str(v) for v in range(1, 10_001))}]"
    with pytest.raises(BadInput, match="10,000 cells x 11 repetitions"):
        load(_disk(root, "", 'repetitions = "auto"\nmax_repetitions = 11', matrix))
    assert len(load(_disk(root, "", "repetitions = 10", matrix)).cells) == 10_000


def test_a_populate_file_may_sample_faster_and_other_files_keep_their_cells(root: Path) -> None:
    plain = load(write(root, GOOD))
    assert all("sample_interval" not in c.params for c in plain.cells)  # ids as before
    fast = load(write(root, GOOD.replace('key = "sequential"', 'sample_interval = "100ms"')))
    assert {c.params["sample_interval"] for c in fast.cells} == {0.1}
    assert {c.id for c in fast.cells}.isdisjoint(c.id for c in plain.cells)
    with pytest.raises(BadInput) as bad:
        load(write(root, GOOD.replace('key = "sequential"', 'sample_interval = "10ms"')))
    assert bad.value.field == "workload.sample_interval"
    assert "give at least 0.1 s" in str(bad.value)
