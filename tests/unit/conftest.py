"""Fixtures shared by the unit tests of the runner (test_runner.py, test_executors.py) and the
report builder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from iolab.store import Store, open_store
from iolab.workloads.registry import WORKLOADS
from tests.unit.fakes import FakeWorkload


@pytest.fixture(autouse=True)
def private_host_lock(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """The host's lock of the runs a unit test makes: a directory of its own, so that a real
    run elsewhere on the machine never holds a unit test up."""
    directory = tmp_path_factory.mktemp("host-lock")
    monkeypatch.setenv("IOLAB_LOCK_DIR", str(directory))
    return directory


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeWorkload:
    """The fake workload kind (tests/unit/fakes.py), registered as the populate kind."""
    workload = FakeWorkload()
    monkeypatch.setitem(WORKLOADS, "populate", workload.kind())
    return workload


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    """A fresh results database."""
    with open_store(tmp_path / "results.db") as s:
        yield s
