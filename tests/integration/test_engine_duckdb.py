"""The DuckDB engine with the real duckdb library: placement, settings, restart, clean-up."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from iolab.engines.duckdb import DuckDBEngine
from iolab.engines.interface import Layout, running
from iolab.errors import BadInput
from iolab.ownership import owned_name
from tests.conftest import make_dirs

pytestmark = pytest.mark.integration


def test_files_round_robin_attached_settings_and_temp_dir(open_tmp: Path) -> None:
    a, b, temp = make_dirs(open_tmp, "a", "b", "temp")
    layout = Layout(
        data_dirs=(a, b),
        files=3,
        temp_dir=temp,
        settings={"threads": "1", "memory_limit": "256MB", "preserve_insertion_order": "false"},
    )
    engine = DuckDBEngine(layout)
    with running(engine) as placement:
        assert [p.parent.parent for p in placement.data] == [a, b, a]
        assert [p.name for p in placement.data] == [f"iolab_{i}.duckdb" for i in range(3)]
        assert placement.temp is not None and placement.temp.parent == temp
        assert engine.catalogs == ["main", "f1", "f2"]
        conn = engine.connect()
        conn.execute("CREATE TABLE f2.t AS SELECT range AS i FROM range(1000)")
        conn.execute("CHECKPOINT f2")
        (count,) = conn.execute("SELECT count(*) FROM f2.t").fetchone()
        assert count == 1000
        settings = engine.effective_settings()
        assert settings["threads"] == "1"
        assert settings["memory_limit"] in ("256.0 MB", "244.1 MiB")
        assert settings["preserve_insertion_order"] == "false"
        assert settings["temp_directory"] == str(placement.temp)
        # a restart (stop, start) keeps the data and the settings
        engine.stop()
        engine.start()
        conn = engine.connect()
        (count,) = conn.execute("SELECT count(*) FROM f2.t").fetchone()
        assert count == 1000
        assert engine.effective_settings()["threads"] == "1"
        assert placement.data[2].stat().st_size > 0
        assert engine.version() == "DuckDB 1.4.4"
    assert list(a.iterdir()) == [] and list(b.iterdir()) == [] and list(temp.iterdir()) == []


def test_leftovers_of_a_dead_process_are_reaped_and_nothing_else(open_tmp: Path) -> None:
    data = make_dirs(open_tmp, "data")[0]
    dead = data / owned_name("duckdb").replace(f"-{os.getpid()}-", "-999999-")
    dead.mkdir()
    (dead / "iolab_0.duckdb").write_bytes(b"old")
    (data / "lost+found").mkdir()
    with running(DuckDBEngine(Layout((data,)))):
        assert not dead.exists()
    assert [p.name for p in data.iterdir()] == ["lost+found"]


@pytest.mark.parametrize(
    ("layout_args", "message"),
    [
        ({"settings": {"thread": "2"}}, "--set: 'thread' is not allowed; it is not a DuckDB"),
        ({"settings": {"memory_limit": "lots"}}, "--set memory_limit: 'lots' is not allowed"),
        ({"settings": {"temp_directory": "/tmp"}}, "iolab sets this DuckDB setting"),
        ({"files": 0}, "--files: 0 is not allowed"),
        ({"wal_dir": Path("/tmp")}, "DuckDB keeps its WAL beside each database file"),
    ],
)
def test_bad_layouts_are_refused_before_anything_is_made(
    open_tmp: Path, layout_args: dict[str, object], message: str
) -> None:
    layout = Layout(data_dirs=(open_tmp,), **layout_args)  # type: ignore[arg-type]
    with pytest.raises(BadInput) as caught:
        DuckDBEngine(layout).provision()
    assert message in str(caught.value)
    assert list(open_tmp.iterdir()) == []
