"""bench/driver_core.py: the benches' ``--cores`` and their bound on the interpreter lock's
time (the CPU time of the threads Python knows over a window)."""

from __future__ import annotations

import importlib.util
import math
import os
import sys
import threading
from pathlib import Path
from types import ModuleType

import pytest

from iolab.errors import BadInput

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture(scope="module")
def dc() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_driver_core", BENCH / "driver_core.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_cores_are_parsed_and_refused(dc: ModuleType) -> None:
    assert dc.parse_cores(None) == ()
    assert dc.parse_cores("python, native") == ("python", "native")
    for bad in ("", "python,python", "fast"):
        with pytest.raises(BadInput):
            dc.parse_cores(bad)


def test_core_env_sets_and_restores(dc: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("IOLAB_DRIVER_CORE", raising=False)
    with dc.core_env("native"):
        assert os.environ["IOLAB_DRIVER_CORE"] == "native"
    assert "IOLAB_DRIVER_CORE" not in os.environ
    monkeypatch.setenv("IOLAB_DRIVER_CORE", "python")
    with dc.core_env("native"):
        assert os.environ["IOLAB_DRIVER_CORE"] == "native"
    assert os.environ["IOLAB_DRIVER_CORE"] == "python"
    with dc.core_env(None):
        assert os.environ["IOLAB_DRIVER_CORE"] == "python"


def test_a_window_counts_its_first_to_last_sample(dc: ModuleType) -> None:
    cpu = dc.ThreadCpu()
    cpu._samples += [
        dc._Sample(0.5, {1: 9.0}, 20.0),  # before the window: not used
        dc._Sample(1.0, {1: 10.0, 2: 5.0}, 30.0),
        dc._Sample(2.0, {1: 10.5, 2: 5.5, 3: 0.2}, 31.5),  # 3 started inside: from 0 s
        dc._Sample(3.0, {1: 11.0, 3: 0.4}, 32.0),  # 2 ended inside: up to its last sample
        dc._Sample(9.0, {1: 99.0}, 99.0),  # after the window: not used
    ]
    held = cpu.over(0.9, 3.5)
    assert held.seconds == 2.0
    assert held.python_cpu == pytest.approx(1.0 + 0.5 + 0.4)
    assert held.process_cpu == 2.0
    assert held.gil == pytest.approx(0.95)
    assert held.cpu == 1.0
    assert math.isnan(cpu.over(1.5, 2.5).gil)  # one sample inside: no window


def test_samples_list_pythons_threads_not_the_sampler(dc: ModuleType) -> None:
    with dc.ThreadCpu(period=60.0) as cpu:
        cpu.mark()
        own = cpu._thread.native_id
    assert cpu._samples
    for sample in cpu._samples:
        assert threading.main_thread().native_id in sample.threads
        assert own not in sample.threads
        assert all(v >= 0.0 for v in sample.threads.values())
