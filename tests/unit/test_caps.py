"""The caps' pieces that need no cgroup: the options' values, the engines' buffer sizes, the
hierarchies a mountinfo text offers, and that a file without caps keeps its cells' names."""

from __future__ import annotations

from pathlib import Path

import pytest

from iolab.system.cgroups import Group, Hierarchy, find, oom_kills
from iolab.workloads.caps import busy_processes, recorded, setting_bytes
from iolab.workloads.populate.options import PopulateWorkload
from iolab.workloads.tpch.options import TpchWorkload

HYBRID = """\
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
"""
COMOUNTED = "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"


def test_v1_hierarchies_are_found_by_their_controller() -> None:
    assert find("memory", HYBRID) == Hierarchy(
        "v1", Path("/sys/fs/cgroup/memory"), ("rw", "memory")
    )
    assert find("cpu", HYBRID) == Hierarchy("v1", Path("/sys/fs/cgroup/cpu"), ("rw", "cpu"))
    assert find("cpuacct", COMOUNTED) == find("cpu", COMOUNTED)
    assert find("memory", COMOUNTED) is None


def test_v2_without_the_controller_is_no_hierarchy() -> None:
    # the unified mount of HYBRID has no cgroup.controllers here (or an empty one): no v2 cpuacct
    assert find("cpuacct", "41 31 0:38 / /nonexistent rw - cgroup2 cgroup2 rw\n") is None
    assert find("memory", "41 31 0:38 / /nonexistent rw - cgroup2 cgroup2 rw\n") is None


@pytest.mark.parametrize(
    ("text", "bare", "expected"),
    [
        ("128MB", 8192, 128 << 20),
        ("1GB", 8192, 1 << 30),
        ("16384", 8192, 128 << 20),  # PostgreSQL: 8 kB pages
        ("128M", 1, 128 << 20),  # MariaDB
        ("134217728", 1, 128 << 20),
        ("lots", 1, None),
    ],
)
def test_buffer_sizes_as_the_engines_write_them(text: str, bare: int, expected: int | None) -> None:
    assert setting_bytes(text, bare) == expected


def test_no_caps_no_keys_so_cells_keep_their_names() -> None:
    plain = PopulateWorkload.model_validate({"kind": "populate"}).model_dump()
    assert "memory" not in plain and "cpus" not in plain
    capped = TpchWorkload.model_validate({"kind": "tpch", "memory": "1GiB", "cpus": "0.5"})
    assert capped.model_dump()["memory"] == "1GiB" and capped.model_dump()["cpus"] == 0.5


def test_the_caps_in_the_environment() -> None:
    assert recorded({"memory": "256MiB", "cpus": 1.5}) == {
        "memory cap": "256MiB (268435456 bytes)",
        "cpus cap": "1.5",
    }
    assert recorded({}) == {}


def test_the_group_weighs_as_the_sessions_the_run_opens() -> None:
    # a cgroup is one entity in the CPU scheduler: it weighs as the run's busy processes
    assert busy_processes({"connections": 16, "cpus": 2.0}) == 16
    assert busy_processes({"clients": 8}) == 8
    assert busy_processes({"cpus": 1.5}) == 2  # no session count: one per CPU of the cap
    assert busy_processes({"cpus": 0.25}) == 1
    assert busy_processes({"connections": True}) == 1


def test_off_is_no_cap_and_keeps_its_name_in_a_matrix() -> None:
    from iolab.workloads.caps import caps_of, memory_bytes

    off = TpchWorkload.model_validate({"kind": "tpch", "memory": "off", "cpus": "off"})
    params = off.model_dump()
    assert params["memory"] == "off" and params["cpus"] == "off"  # the cell reads "memory=off"
    assert caps_of(params) == {} and recorded(params) == {}
    assert memory_bytes("off") is None and busy_processes(params) == 1
    assert caps_of({"memory": "256MiB", "cpus": "off"}) == {"memory": "256MiB"}
    for bad in ("of", "nan", float("inf"), 0, -1):
        with pytest.raises(ValueError, match='or "off"'):
            TpchWorkload.model_validate({"kind": "tpch", "cpus": bad})


def test_under_a_memory_cap_postgres_settings_left_unset_are_fitted_to_it() -> None:
    from iolab.workloads.interface import settings_of

    base = {"engine": "postgres", "settings": {"work_mem": "4MB"}}
    fitted = settings_of({**base, "memory": "256MiB"})
    assert fitted == {
        "shared_buffers": "32MB",  # an eighth of the cap, below the 128 MB default
        "maintenance_work_mem": "16MB",  # a sixteenth, per index build
        "work_mem": "4MB",
    }
    given = {"engine": "postgres", "memory": "256MiB", "settings": {"shared_buffers": "64MB"}}
    assert settings_of(given)["shared_buffers"] == "64MB"  # what is given stays
    assert settings_of({**base, "memory": "2GiB"}) == base["settings"]  # the defaults fit
    assert settings_of({**base, "memory": "off"}) == base["settings"]
    maria = {"engine": "mariadb", "settings": {}}
    assert settings_of({**maria, "memory": "256MiB"}) == {"innodb_buffer_pool_size": "64M"}
    assert settings_of({**maria, "memory": "512MiB"}) == {}  # its 128 MiB default fits
    duck = settings_of({"engine": "duckdb", "memory": "256MiB", "settings": {"threads": 6}})
    assert duck == {"memory_limit": "128MiB", "threads": 6}  # half: it allocates beyond it
    assert recorded({**base, "memory": "256MiB"})["fitted to the memory cap"] == (
        "shared_buffers=32MB maintenance_work_mem=16MB"
    )


def test_the_oom_kills_of_a_group_in_either_version(tmp_path: Path) -> None:
    v1, v2 = tmp_path / "v1", tmp_path / "v2"
    v1.mkdir()
    v2.mkdir()
    (v1 / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n")
    (v2 / "memory.max").write_text("268435456\n")
    (v2 / "memory.events").write_text("low 0\nhigh 0\nmax 31\noom 1\noom_kill 1\n")
    assert oom_kills(Group(memory=v1, cpu=None, cpuacct=None)) == 2
    assert oom_kills(Group(memory=v2, cpu=None, cpuacct=None)) == 1
    assert oom_kills(Group(memory=None, cpu=v1, cpuacct=None)) == 0  # no memory cap


@pytest.mark.parametrize(
    ("engine", "settings", "least"),
    [
        ("postgres", {}, 73),  # it walked: 1 -> 65MiB, 65MiB -> 72MiB, 72MiB -> 73MiB
        ("postgres", {"shared_buffers": "1MB"}, 65),
        ("postgres", {"shared_buffers": "256MB"}, 320),
        ("mariadb", {}, 255),
        ("mariadb", {"innodb_buffer_pool_size": "16M"}, 208),
        ("sqlite", {}, 64),
        ("duckdb", {}, 256),
    ],
)
def test_the_least_memory_advised_is_taken_when_given_back(
    engine: str, settings: dict[str, str], least: int
) -> None:
    """The figure a refusal states is a fixed point: the engine's pool under that cap (fitted
    to it, or as given) and what it needs beside fit in it, and one MiB less they do not."""
    from iolab.engines import catalog
    from iolab.workloads.caps import least_memory, setting_bytes

    kind = catalog.KINDS[engine]
    need = least_memory(kind, {"engine": engine, "settings": settings})
    assert need is not None and need.cap == least << 20
    assert f"give at least {least}MiB" in need.advice()
    if kind.buffers is None:  # an embedded engine: a floor measured with iolab in the group
        assert need.cap == kind.least_memory
        return
    name, default, bare = kind.buffers

    def fits(cap: int) -> bool:
        pool = settings.get(name) or kind.fitted({}, cap).get(name)
        return (setting_bytes(pool, bare) if pool else default) + kind.beside_buffers <= cap

    assert fits(need.cap) and not fits(need.cap - (1 << 20))


def test_cpus_below_the_kernels_least_quota_are_refused() -> None:
    """cpu.cfs_quota_us takes 1 ms at least, per iolab's 100 ms period: 0.01 CPUs. Less was
    taken, the kernel held 0.01 and the run was named after what it was not (cpus=1e-09)."""
    from pydantic import ValidationError

    from iolab.system.cgroups import CPU_PERIOD_US, MIN_CPUS, MIN_QUOTA_US
    from iolab.workloads.caps import CPUS_HELP, Caps

    assert MIN_CPUS == MIN_QUOTA_US / CPU_PERIOD_US == 0.01
    assert Caps(cpus=0.01).cpus == 0.01
    for cpus in (1e-9, 0.001, 0.0099):
        with pytest.raises(ValidationError, match="give 0.01 CPUs or more"):
            Caps(cpus=cpus)
    assert CPUS_HELP.startswith("give 0.01 CPUs or more (the kernel's least quota: 1 ms per 100")
