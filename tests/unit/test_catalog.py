"""The engine registry: one descriptor per engine, and nobody else tells engines apart by name."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from iolab.engines import catalog
from iolab.engines.interface import Layout
from iolab.errors import BadInput
from iolab.probes.standard import FAMILIES
from iolab.workloads.populate import dialects as populate_dialects
from iolab.workloads.populate.loading import LoadMethod
from iolab.workloads.tpch import dialects as tpch_dialects

SRC = Path(__file__).resolve().parents[2] / "src" / "iolab"


def test_each_engine_says_what_it_is_and_each_workload_where_it_runs() -> None:
    assert catalog.ENGINES == ("sqlite", "postgres", "mariadb", "duckdb")
    assert populate_dialects.NAMES == ("sqlite", "postgres", "mariadb")
    assert tpch_dialects.NAMES == ("duckdb", "postgres", "mariadb")
    pg, maria, lite, duck = (catalog.KINDS[n] for n in ("postgres", "mariadb", "sqlite", "duckdb"))
    assert pg.server and maria.server and not lite.server and not duck.server
    methods = {n: s.methods for n, s in populate_dialects.ENGINES.items()}
    assert LoadMethod.COPY in methods["postgres"] and LoadMethod.COPY not in methods["mariadb"]
    assert {n: s.compression for n, s in tpch_dialects.ENGINES.items()} == {
        "postgres": None,
        "mariadb": False,
        "duckdb": True,
    }
    for workload in (populate_dialects, tpch_dialects):  # each engine's part is a module
        for name in workload.NAMES:
            assert name in catalog.ENGINES
            assert (SRC / "workloads" / workload.__name__.split(".")[2] / f"{name}.py").is_file()
    assert pg.takes_pg_bin and not any(k.takes_pg_bin for k in (maria, lite, duck))
    for kind in catalog.KINDS.values():  # every probe family named exists
        assert kind.probes is None or kind.probes in FAMILIES


def test_create_and_refusals_name_the_option() -> None:
    engine = catalog.create("sqlite", Layout(data_dirs=(Path("/tmp"),)))
    assert catalog.kind_of(engine) is catalog.KINDS["sqlite"]
    with pytest.raises(BadInput, match="--engine: 'oracle'.*choose one of: sqlite, postgres"):
        catalog.create("oracle", Layout(data_dirs=(Path("/tmp"),)))
    with pytest.raises(BadInput, match="--pg-bin"):
        catalog.create("sqlite", Layout(data_dirs=(Path("/tmp"),)), pg_bin=Path("/usr/bin"))
    with pytest.raises(BadInput, match="workload.engine: 'duckdb'"):
        catalog.kind("duckdb", "workload.engine", populate_dialects.NAMES)


def test_no_engine_name_is_compared_outside_engines() -> None:
    names = "|".join(catalog.ENGINES)
    compared = re.compile(
        rf"""(==|!=|\bin)\s*[({{\[]?\s*["']({names})["']|["']({names})["']\s*(==|!=)"""
    )
    found = [
        f"{path.relative_to(SRC)}:{n}: {line.strip()}"
        for path in SRC.rglob("*.py")
        if "engines" not in path.relative_to(SRC).parts
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if compared.search(line)
    ]
    assert found == []


def test_no_any_in_the_engine_seams() -> None:
    """The protocols engine-neutral code holds engines, dialects and connections by, and the
    registry, are typed: no ``Any`` in any of their signatures."""
    import typing

    from iolab import drivercore
    from iolab.engines import connection, interface
    from iolab.workloads.populate import loading
    from iolab.workloads.tpch import dialect as tpch

    seams = [
        interface.Engine,
        connection.Connection,
        loading.PopulateDialect,
        loading.CoreInsert,
        tpch.TpchDialect,
        drivercore.Target,
    ]
    namespace = vars(interface) | vars(loading) | vars(tpch) | vars(connection) | vars(drivercore)
    for seam in seams:
        for name, member in vars(seam).items():
            if callable(member) and not name.startswith("_"):
                hints = typing.get_type_hints(member, namespace)
                assert "Any" not in repr(hints), f"{seam.__name__}.{name}: {hints}"
    for module in ("engines/catalog.py", "engines/connection.py", "engines/interface.py"):
        assert not re.search(r"\bAny\b", (SRC / module).read_text()), module
    assert not re.search(r"\bAny\b", (SRC / "workloads/populate/loading.py").read_text())
