"""The one table from command-line options to experiment-file keys."""

from __future__ import annotations

import pytest

from iolab.config.fields import file_key, in_file, param_of
from iolab.errors import BadInput


@pytest.mark.parametrize(
    ("field", "value", "param"),
    [
        ("--rows", 4, "rows"),
        ("--commit-every", 0, "commit_every"),
        ("--data-dir", "/x", "data_dirs"),
        ("--wal-dir", "/x", "wal_dir"),
        ("--set shared_buffers", "banana", "settings.shared_buffers"),
        ("--set", "shared_bufers", "settings.shared_bufers"),
        ("--method (with sqlite)", "copy", "method"),
        ("--method/--mode", "copy/server", "method"),
        ("--sf", 0, "scale_factor"),
        ("PATH", "/x", "data_dirs"),
        ("experiment.name", "x", None),
        ("workdir", "/x", None),
    ],
)
def test_param_of_an_option(field: str, value: object, param: str | None) -> None:
    assert param_of(field, value) == param


def test_the_key_is_where_the_file_wrote_it() -> None:
    matrix = {"rows": 5, "settings.work_mem": "1"}
    assert file_key("rows", matrix, "ssd") == "matrix.rows"
    assert file_key("settings.work_mem", matrix, "ssd") == "matrix.settings.work_mem"
    assert file_key("settings.fsync", matrix, "ssd") == "layouts.ssd.settings.fsync"
    assert file_key("wal_dir", matrix, "ssd") == "layouts.ssd.wal_dir"
    assert file_key("connections", matrix, "ssd") == "workload.connections"
    renamed = in_file(BadInput("--set work_mem", "1", "too small"), matrix, "ssd")
    assert str(renamed) == "matrix.settings.work_mem: '1' is not allowed; too small"
    kept = BadInput("experiment.name", "x", "taken")
    assert in_file(kept, matrix, "ssd") is kept
