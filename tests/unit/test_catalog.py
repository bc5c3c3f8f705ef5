"""The engine registry: one descriptor per engine, and nobody else tells engines apart by name."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from iolab.engines import catalog
from iolab.engines.interface import Layout
from iolab.engines.loading import LoadMethod
from iolab.errors import BadInput
from iolab.probes.standard import FAMILIES

SRC = Path(__file__).resolve().parents[2] / "src" / "iolab"


def test_each_engine_says_what_it_can_do() -> None:
    assert catalog.ENGINES == ("sqlite", "postgres", "mariadb", "duckdb")
    assert catalog.POPULATE_ENGINES == ("sqlite", "postgres", "mariadb")
    assert catalog.TPCH_ENGINES == ("duckdb", "postgres", "mariadb")
    pg, maria, lite, duck = (catalog.KINDS[n] for n in ("postgres", "mariadb", "sqlite", "duckdb"))
    assert pg.server and maria.server and not lite.server and not duck.server
    assert LoadMethod.COPY in pg.populate_methods and LoadMethod.COPY not in maria.populate_methods
    assert (pg.tpch_compression, maria.tpch_compression, duck.tpch_compression) == (
        None,
        False,
        True,
    )
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
        catalog.kind("duckdb", "workload.engine", catalog.POPULATE_ENGINES)


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

    from iolab.engines import connection, interface, loading, tpch

    seams = [
        interface.Engine,
        interface.PopulateEngine,
        interface.TpchEngine,
        connection.Connection,
        loading.PopulateDialect,
        tpch.TpchDialect,
    ]
    namespace = vars(interface) | vars(loading) | vars(tpch) | vars(connection)
    for seam in seams:
        for name, member in vars(seam).items():
            if callable(member) and not name.startswith("_"):
                hints = typing.get_type_hints(member, namespace)
                assert "Any" not in repr(hints), f"{seam.__name__}.{name}: {hints}"
    for module in ("catalog.py", "connection.py", "interface.py", "loading.py"):
        assert not re.search(r"\bAny\b", (SRC / "engines" / module).read_text()), module
