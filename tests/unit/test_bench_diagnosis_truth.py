"""bench/diagnosis_truth.py's expectations: which verdict counts as right for each induced
limit, and the uncapped load's (any verdict but a device's capacity: its latency is right)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from iolab.analysis import diagnosis as dx

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture(scope="module")
def truth() -> ModuleType:
    path = BENCH / "diagnosis_truth.py"
    spec = importlib.util.spec_from_file_location("bench_diagnosis_truth", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_an_uncapped_load_held_by_its_wal_latency_is_named_right(truth: ModuleType) -> None:
    assert truth.right("uncapped", dx.WAL_LATENCY)
    assert truth.right("uncapped", dx.NONE) and truth.right("uncapped", dx.CPU)
    assert not truth.right("uncapped", dx.WAL)  # a device's capacity, which it did not reach
    assert not truth.right("uncapped", "failed")
    # an induced capacity limit is not named by its latency
    assert truth.right("wal-device", dx.WAL) and not truth.right("wal-device", dx.WAL_LATENCY)
    assert truth.right("data-device (reads)", dx.DATA)
    assert not truth.right("data-device (reads)", dx.DATA_LATENCY)


def test_the_table_counts_the_uncapped_loads_given_a_device_capacity(truth: ModuleType) -> None:
    found = [
        ("wal-device", dx.WAL),
        ("wal-device", dx.WAL),
        ("uncapped", dx.WAL_LATENCY),
        ("uncapped", dx.WAL),
    ]
    lines = truth.table("postgres", found).splitlines()
    assert lines[1].split() == ["induced", "\\", "verdict", "wal-device", "wal-latency"]
    assert lines[3].split() == ["uncapped", "1", "1"]
    assert lines[-1] == (
        "induced limits named right: 2 of 2 (100%); uncapped given a device capacity limit: 1 of 2"
    )
