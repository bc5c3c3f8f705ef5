"""What --presize-wal asks of each engine's settings, and what it refuses (pure parts of
iolab.engines.log_control; the engines themselves are in the integration tests)."""

from __future__ import annotations

from pathlib import Path

import pytest

from iolab.engines.interface import Layout
from iolab.engines.log_control import MariaDBLog, PostgresLog, SQLiteLog
from iolab.errors import BadInput
from iolab.workloads import registry

MIB = 1 << 20


def test_postgres_keeps_the_presized_wal_between_min_and_max_wal_size() -> None:
    log = PostgresLog()
    assert log.settings(64 * MIB, {}) == {"min_wal_size": "64MB", "max_wal_size": "1024MB"}
    assert log.settings(3 * 1024 * MIB + 1, {}) == {
        "min_wal_size": "3073MB",
        "max_wal_size": "3073MB",
    }
    assert log.settings(64 * MIB, {"max_wal_size": "4GB"}) == {"min_wal_size": "64MB"}
    assert log.settings(64 * MIB, {"max_wal_size": "64"}) == {"min_wal_size": "64MB"}
    with pytest.raises(BadInput) as small:
        log.settings(1024 * MIB, {"max_wal_size": "512MB"})
    assert (small.value.field, small.value.value) == ("--set max_wal_size", "512MB")
    with pytest.raises(BadInput) as given:
        log.settings(64 * MIB, {"min_wal_size": "1GB"})
    assert given.value.field == "--set min_wal_size"
    assert "leave it out with --presize-wal 64.0 MiB" in given.value.allowed


def test_mariadb_sizes_its_redo_log_in_whole_mib() -> None:
    log = MariaDBLog()
    assert log.settings(64 * MIB + 1, {}) == {"innodb_log_file_size": str(65 * MIB)}
    with pytest.raises(BadInput) as given:
        log.settings(64 * MIB, {"innodb_log_file_size": "1G"})
    assert given.value.field == "--set innodb_log_file_size"
    layout = Layout(data_dirs=(Path("/d"),), wal_dir=Path("/w"))
    assert log.log_dirs(layout, 10) == {Path("/w"): 10}
    assert log.log_dirs(Layout(data_dirs=(Path("/d"),)), 10) == {Path("/d"): 10}


def test_sqlite_splits_the_size_over_the_wal_of_each_database_file() -> None:
    log = SQLiteLog(["main", "f1", "f2"], 8192)
    layout = Layout(data_dirs=(Path("/a"), Path("/b")), files=3)
    assert log.log_dirs(layout, 30 * MIB) == {Path("/a"): 20 * MIB, Path("/b"): 10 * MIB}
    assert log.settings(MIB, {}) == {}
    with pytest.raises(BadInput) as mode:
        log.settings(MIB, {"journal_mode": "delete"})
    assert (mode.value.field, mode.value.value) == ("--set journal_mode", "delete")
    data = [Path("/a/x/iolab_0.db")]
    assert log.log_files(None, data) == [Path("/a/x/iolab_0.db-wal")]


def test_the_steady_rate_is_a_declared_metric() -> None:
    steady = registry.lookup_metric("steady_rows_per_second")
    assert (steady.unit, steady.lower_is_better) == ("rows/s", False)
    assert steady.words == ("faster", "slower")
